"""What a client (and its ``with_options`` copies) remembers and shares between calls."""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ._ledger import UsageLedger
from ._limits import RequestBudget
from .errors import LowBalanceWarning, RateLimitInfo

if TYPE_CHECKING:
    import anyio
    import httpx

    from ._shared.binding import SharedBinding

__all__ = ["ClientState"]


@dataclass
class ClientState:
    """The last seen credits and rate-limit values, and the opt-in limits (None when off)."""

    remaining_credits: float | None = None
    balance_warning: bool | None = None
    rate_limit: RateLimitInfo | None = None
    budget: RequestBudget | None = None
    """The client-side rate limiter (``wait_for_rate_limit=True``)."""
    slots: threading.BoundedSemaphore | anyio.Semaphore | None = None
    """Bounds the requests in flight (``max_concurrency=``)."""
    warned_low_balance: bool = False
    ledger: UsageLedger = field(default_factory=UsageLedger)
    """What the client and its copies spent (``client.usage``)."""
    shared: SharedBinding | None = None
    """The state shared with other processes on the key (``shared_state=``), or None."""

    def observe(self, response: httpx.Response, parsed: object) -> None:
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
                    stacklevel=_caller_stacklevel(),
                )

    def observe_headers(
        self, response: httpx.Response, now: Callable[[], float]
    ) -> RateLimitInfo | None:
        """Remember the ``X-RateLimit-*`` values of any reply, success or error, and return
        them (``now``: the clock a reset given as a delay is counted from)."""
        rate_limit = RateLimitInfo.from_headers(response.headers)
        if rate_limit is not None:
            self.rate_limit = rate_limit
            if self.budget is not None:
                self.budget.observe(rate_limit, now())
        return rate_limit


def _caller_stacklevel() -> int:
    """The stacklevel of the first frame outside aigateway (and tenacity): the caller's line."""
    level, frame = 1, sys._getframe(1)
    while frame.f_back is not None and str(frame.f_globals.get("__name__", "")).startswith(
        ("aigateway", "tenacity")
    ):
        level, frame = level + 1, frame.f_back
    return level
