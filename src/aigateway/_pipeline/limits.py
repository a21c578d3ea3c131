"""Opt-in client-side limits: wait for a spent rate-limit window, bound requests in flight.

Both are off by default and then cost nothing (the pipeline checks for None). `RequestBudget`
is pure bookkeeping (no I/O, no sleeping): it counts down the gateway's last
``X-RateLimit-Remaining`` as requests go out and says how long to wait once it reaches 0;
the pipeline does the waiting with the retry policy's sleep, so tests never sleep.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from aigateway.errors import ConfigurationError, RateLimitInfo

__all__ = ["RateLimit", "RequestBudget"]


@dataclass(frozen=True)
class RateLimit:
    """A rate limit the caller states (``rate_limit=``) instead of waiting to learn it from
    the gateway's ``X-RateLimit-*`` replies: ``requests`` per ``window`` seconds. ``tokens``
    is kept for the record; only requests are counted before sending."""

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
