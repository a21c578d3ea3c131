"""What a client (and its ``with_options`` copies) remembers and shares between calls."""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from aigateway._http.leases import OpenLeases
from aigateway._pipeline.ledger import UsageLedger
from aigateway._pipeline.limits import RequestBudget
from aigateway.errors import LowBalanceWarning, RateLimitInfo

if TYPE_CHECKING:
    import anyio
    import httpx

    from aigateway.integrations.redis.binding import SharedBinding

__all__ = ["ClientState", "LoopSlots"]


@dataclass
class ClientState:
    """The last seen credits and rate-limit values, and the opt-in limits (None when off)."""

    remaining_credits: float | None = None
    balance_warning: bool | None = None
    rate_limit: RateLimitInfo | None = None
    budget: RequestBudget | None = None
    """The client-side rate limiter (``wait_for_rate_limit=True``)."""
    slots: threading.BoundedSemaphore | LoopSlots | None = None
    """Bounds the requests in flight (``max_concurrency=``)."""
    warned_low_balance: bool = False
    ledger: UsageLedger = field(default_factory=UsageLedger)
    """What the client and its copies spent (``client.usage``)."""
    shared: SharedBinding | None = None
    """The state shared with other processes on the key (``shared_state=``), or None."""
    leases: OpenLeases = field(default_factory=OpenLeases)
    """The streams and unread replies handed out and not released yet (`aigateway._http.leases`)."""

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
                    stacklevel=caller_stacklevel(),
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


class LoopSlots:
    """``max_concurrency`` of an async client: a semaphore per event loop, each bounding the
    requests in flight on its loop. anyio's semaphore belongs to the async library of its
    first use (and its waiters to their loop), while a client may serve one loop after
    another."""

    def __init__(self, limit: int) -> None:
        from aigateway._http.loops import PerLoop

        self._semaphores: PerLoop[anyio.Semaphore] = PerLoop(lambda loop: _semaphore(limit))

    async def acquire(self) -> None:
        await self._semaphores.get().acquire()

    def release(self) -> None:
        self._semaphores.get().release()

    @property
    def value(self) -> int:
        """The slots free on the running loop."""
        return self._semaphores.get().value


def _semaphore(limit: int) -> anyio.Semaphore:
    import anyio  # only with max_concurrency: keeps `import aigateway` light

    return anyio.Semaphore(limit)


def caller_stacklevel() -> int:
    """The stacklevel of the first frame outside aigateway (and tenacity): the caller's line."""
    level, frame = 1, sys._getframe(1)
    while frame.f_back is not None and str(frame.f_globals.get("__name__", "")).startswith(
        ("aigateway", "tenacity")
    ):
        level, frame = level + 1, frame.f_back
    return level
