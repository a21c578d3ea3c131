"""Opt-in client-side limits: wait for a spent rate-limit window, bound requests in flight.

Both are off by default and then cost nothing (the pipeline checks for None). `RequestBudget`
is pure bookkeeping (no I/O, no sleeping): it counts down the gateway's last
``X-RateLimit-Remaining`` as requests go out and says how long to wait once it reaches 0;
the pipeline does the waiting with the retry policy's sleep, so tests never sleep.
"""

from __future__ import annotations

import threading

from .errors import RateLimitInfo

__all__ = ["RequestBudget"]


class RequestBudget:
    """The requests left in the gateway's current rate-limit window, as this client knows it."""

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
