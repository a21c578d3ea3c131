"""What a client (and its ``with_options`` copies) remembers and shares between calls, and
the interface of the state it shares with other processes (`SharedState`)."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from aigateway._call.caller import caller_stacklevel
from aigateway._http.leases import OpenLeases
from aigateway._pipeline.ledger import UsageLedger
from aigateway._pipeline.limits import LoopSlots, RateLimiter
from aigateway.errors import LowBalanceWarning, RateLimitInfo

if TYPE_CHECKING:
    from aigateway._call.call import APICall
    from aigateway._call.commands import Flow
    from aigateway._pipeline.credit_budget import CreditBudget
    from aigateway._pipeline.flow import Pipeline
    from aigateway._stacks import Response

__all__ = ["ClientState", "SharedState"]


class SharedState(Protocol):
    """What the request path asks of the state a client shares with every process on its key
    (``shared_state=``): the rate-limit window, the credit budget, the usage totals and the
    idempotency keys of acts, kept for all. The client plugs an implementation in (Redis's:
    `aigateway.integrations.redis.binding.SharedBinding`); the path knows only this. Each
    method is a flow: what it yields (commands of its own) a driver performs."""

    def run(
        self,
        pipeline: Pipeline,
        call: APICall[Any],
        attempts: Callable[[APICall[Any]], Flow[Any]],
        budget: CreditBudget | None,
    ) -> Flow[Any]:
        """Run a whole call (``attempts(call)``) under the shared credit budget, with a shared
        idempotency key when it is an act; count what it used for all."""

    def slot_wait(self, now: float) -> object:
        """A command that counts a request in the shared window and answers the seconds to
        wait before sending it."""

    def observe(self, info: RateLimitInfo, now: float) -> Flow[None]:
        """Tell every process the gateway's rate-limit values of a reply."""

    def for_key(self, api_key: str, limiter: RateLimiter | None) -> SharedState:
        """The same shared state as seen by a client on ``api_key`` with ``limiter``."""

    async def aclose(self) -> None:
        """Close the running event loop's connections (an `AsyncClient` closing)."""


@dataclass
class ClientState:
    """The last seen credits and rate-limit values, and the opt-in limits (None when off)."""

    remaining_credits: float | None = None
    balance_warning: bool | None = None
    rate_limit: RateLimitInfo | None = None
    limiter: RateLimiter | None = None
    """The client-side rate limiter (``wait_for_rate_limit=True``)."""
    slots: threading.BoundedSemaphore | LoopSlots | None = None
    """Bounds the requests in flight (``max_concurrency=``)."""
    warned_low_balance: bool = False
    ledger: UsageLedger = field(default_factory=UsageLedger)
    """What the client and its copies spent (``client.usage``)."""
    shared: SharedState | None = None
    """The state shared with other processes on the key (``shared_state=``), or None."""
    leases: OpenLeases = field(default_factory=OpenLeases)
    """The streams and unread replies handed out and not released yet (`aigateway._http.leases`)."""

    def observe(self, response: Response, parsed: object) -> None:
        """Remember the credits of a reply (or stream chunk); warn once of a low balance."""
        credits = getattr(parsed, "remaining_credits", None)
        if credits is not None:
            self.remaining_credits = credits
            self.balance_warning = getattr(parsed, "balance_warning", None)
            if self.balance_warning and not self.warned_low_balance:
                self.warned_low_balance = True
                warnings.warn(
                    LowBalanceWarning(
                        f"the gateway reports a low balance: {credits} credits left "
                        "(warned once per client; see client.remaining_credits)"
                    ),
                    stacklevel=caller_stacklevel(),
                )

    def observe_headers(self, response: Response, now: Callable[[], float]) -> RateLimitInfo | None:
        """Remember the ``X-RateLimit-*`` values of any reply, success or error, and return
        them (``now``: the clock a reset given as a delay is counted from)."""
        rate_limit = RateLimitInfo.from_headers(response.headers)
        if rate_limit is not None:
            self.rate_limit = rate_limit
            if self.limiter is not None:
                self.limiter.observe(rate_limit, now())
        return rate_limit
