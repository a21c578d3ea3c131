"""Opt-in client-side limits: wait for a spent rate-limit window, bound requests in flight.

Both are off by default and then cost nothing (the pipeline checks for None). `RateLimiter`
(``wait_for_rate_limit=True``) is pure bookkeeping (no I/O, no sleeping): it counts down the
gateway's last ``X-RateLimit-Remaining`` as requests go out and says how long to wait once it
reaches 0; the pipeline does the waiting with the retry policy's sleep, so tests never sleep.
``max_concurrency=`` bounds the requests in flight with a semaphore: a
`threading.BoundedSemaphore` for a `Client`, `LoopSlots` (one per event loop) for an
`AsyncClient`; the pipeline takes a slot before sending and gives it back when the reply (or
its stream) is done.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aigateway.errors import ConfigurationError, RateLimitInfo

if TYPE_CHECKING:
    import anyio

__all__ = ["LoopSlots", "RateLimit", "RateLimiter"]


@dataclass(frozen=True)
class RateLimit:
    """A rate limit the caller states (``rate_limit=``, with a shared state) instead of waiting
    to learn it from the gateway's ``X-RateLimit-*`` replies: ``requests`` per ``window``
    seconds, and at most ``tokens`` tokens in that window when given. Every process on the key
    counts its requests, and the tokens of each whole reply (not of a stream), in the shared
    window, and waits for the window's reset once either is spent."""

    requests: int
    window: float = 60.0
    tokens: int | None = None

    def __post_init__(self) -> None:
        if (
            isinstance(self.requests, bool)
            or not isinstance(self.requests, int)
            or self.requests < 1
        ):
            raise ConfigurationError(
                f"RateLimit.requests must be an integer >= 1, got {self.requests!r}"
            )
        if (
            isinstance(self.window, bool)
            or not isinstance(self.window, (int, float))
            or not self.window > 0
        ):
            raise ConfigurationError(
                f"RateLimit.window must be a number of seconds > 0, got {self.window!r}"
            )
        if self.tokens is not None and (
            isinstance(self.tokens, bool) or not isinstance(self.tokens, int) or self.tokens < 1
        ):
            raise ConfigurationError(
                f"RateLimit.tokens must be an integer >= 1 or None, got {self.tokens!r}"
            )


class RateLimiter:
    """The client-side rate limiter: the requests left in the gateway's current rate-limit
    window, as this client knows it, and how long to wait once none is left."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._remaining: int | None = None
        self._reset: float | None = None

    def observe(self, info: RateLimitInfo, now: float) -> None:
        """Take the gateway's word from a reply's ``X-RateLimit-*`` headers, received at
        ``now`` (a reset is a delay, a Unix time or Unix milliseconds, by its magnitude)."""
        wait = info.seconds_until_reset(now)
        if info.remaining is None or wait is None:
            return
        with self._lock:
            self._remaining = info.remaining
            self._reset = now + wait

    def reserve(self, now: float) -> float:
        """Count one request going out; return how long to wait first (0 to go at once)."""
        with self._lock:
            if self._remaining is None or self._reset is None:
                return 0.0
            if now >= self._reset:  # a new window: unknown until the next reply says
                self._remaining = None
                return 0.0
            if self._remaining > 0:
                self._remaining -= 1
                return 0.0
            return self._reset - now


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
