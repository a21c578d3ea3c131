"""Rate limits of the mock gateway, per API key, on the mock's clock.

The API description publishes three conflicting forms of the limits; the mock has one named
preset per form and the default is ``free``:

============== =====================================================================
``free``        60 requests/min and 90,000 tokens/min (the chat reference)
``paid``        10,000,000 tokens/min, requests unlimited
``free_plan``   10 requests/min and 2 concurrent requests (the plan table)
``starter``     60 requests/min and 10 concurrent requests
``integration`` 100 requests/min, 1,000/hour, 10,000/day (the integration guide)
``unlimited``   no limits (for load tests of your own code)
============== =====================================================================

Windows are fixed and aligned to the clock (a minute window starts at a whole minute of mock
time), so tests can reason about them and move past them with ``gateway.clock.advance(60)``.
A request is admitted when every window has room; tokens are counted when the reply is known,
so the tokens limit refuses the requests after the one that went over it. A concurrent request
is in flight until its reply is complete (for a stream, until its body ends or is closed).

Every admitted reply carries ``X-RateLimit-Limit``/``-Remaining``/``-Reset`` for the requests
per minute window (without one: the tokens window, as for ``paid``, else the hour's or the
day's requests; with no limit at all, as for ``unlimited``, a minute window of `UNLIMITED`
requests, counted), plus ``X-RateLimit-Limit-Tokens``/``-Remaining-Tokens`` when tokens are
limited. A refusal is a 429
(``rate_limit_exceeded``, or ``concurrency_limit_exceeded``) whose ``X-RateLimit-*`` describe the
exhausted window (remaining 0) and whose ``Retry-After`` is the seconds until it resets. Replies
that count no request (a 401, a 413, an injected fault) carry `RateLimiter.headers`: the key's
state, or for a caller without a valid key the default limits with nothing used.
"""

from __future__ import annotations

import functools
import math
import threading
from dataclasses import dataclass, field

from aigateway.testing._core.clock import MockClock

__all__ = ["PRESETS", "UNLIMITED", "Admission", "RateLimiter", "RateLimits"]


@dataclass(frozen=True)
class RateLimits:
    """The limits of one key; None means unlimited."""

    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    concurrent: int | None = None
    requests_per_hour: int | None = None
    requests_per_day: int | None = None


PRESETS: dict[str, RateLimits] = {
    "free": RateLimits(requests_per_minute=60, tokens_per_minute=90_000),
    "paid": RateLimits(tokens_per_minute=10_000_000),
    "free_plan": RateLimits(requests_per_minute=10, concurrent=2),
    "starter": RateLimits(requests_per_minute=60, concurrent=10),
    "integration": RateLimits(
        requests_per_minute=100, requests_per_hour=1_000, requests_per_day=10_000
    ),
    "unlimited": RateLimits(),
}

UNLIMITED = 2**31 - 1
"""The requests per minute that ``X-RateLimit-Limit`` reports for a key without limits."""

_MINUTE, _HOUR, _DAY = 60, 3_600, 86_400
_REQUEST_WINDOWS = (
    ("requests_per_minute", _MINUTE, "requests per minute"),
    ("requests_per_hour", _HOUR, "requests per hour"),
    ("requests_per_day", _DAY, "requests per day"),
)


def resolve_limits(limits: str | RateLimits) -> RateLimits:
    """A preset name or a `RateLimits` as `RateLimits`; an unknown name is a ValueError."""
    if isinstance(limits, RateLimits):
        return limits
    try:
        return PRESETS[limits]
    except KeyError:
        raise ValueError(
            f"unknown rate-limit preset {limits!r}; presets: {', '.join(PRESETS)}"
        ) from None


@dataclass
class _KeyState:
    counts: dict[int, tuple[float, int]] = field(default_factory=dict)
    """Window length -> (window start, requests in it)."""
    tokens: tuple[float, int] = (0.0, 0)
    in_flight: int = 0


@dataclass(frozen=True)
class Admission:
    """The limiter's answer: ``ok``, the headers for the reply, and for a refusal what was hit."""

    ok: bool
    headers: dict[str, str]
    code: str = ""
    message: str = ""


class RateLimiter:
    """Per-key request, token and concurrency accounting, thread-safe."""

    def __init__(self, clock: MockClock, default: str | RateLimits = "free") -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self.default = resolve_limits(default)
        self._per_key: dict[str, RateLimits] = {}
        self._state: dict[str, _KeyState] = {}

    def set(self, limits: str | RateLimits, key: str | None = None) -> None:
        """Set the limits of one key, or the default of every key without limits of its own."""
        resolved = resolve_limits(limits)
        with self._lock:
            if key is None:
                self.default = resolved
            else:
                self._per_key[key] = resolved

    def limits(self, key: str) -> RateLimits:
        with self._lock:
            return self._per_key.get(key, self.default)

    def in_flight(self, key: str) -> int:
        """The requests of ``key`` being answered now."""
        with self._lock:
            state = self._state.get(key)
            return state.in_flight if state else 0

    def reset(self) -> None:
        """Forget every count (limits are kept)."""
        with self._lock:
            self._state.clear()

    def admit(self, key: str) -> Admission:
        """Count a request of ``key`` if every window has room; else refuse it."""
        now = self._clock.now()
        with self._lock:
            limits = self._per_key.get(key, self.default)
            state = self._state.setdefault(key, _KeyState())
            for name, length, label in _REQUEST_WINDOWS:
                limit = getattr(limits, name)
                if limit is not None and self._count(state, length, now) >= limit:
                    return self._refusal(limit, _window_end(now, length), now, label)
            if limits.tokens_per_minute is not None:
                used = self._tokens(state, now)
                if used >= limits.tokens_per_minute:
                    return self._refusal(
                        limits.tokens_per_minute,
                        _window_end(now, _MINUTE),
                        now,
                        "tokens per minute",
                    )
            if limits.concurrent is not None and state.in_flight >= limits.concurrent:
                headers = {"retry-after": "1"}
                return Admission(
                    False,
                    headers,
                    "concurrency_limit_exceeded",
                    f"rate limit reached: {limits.concurrent} concurrent requests for this key",
                )
            for length in _counted_windows(limits):
                self._count(state, length, now)  # starts a new window when one has passed
                start, count = state.counts[length]
                state.counts[length] = (start, count + 1)
            state.in_flight += 1
            return Admission(True, self._headers(limits, state, now))

    def headers(self, key: str | None = None) -> dict[str, str]:
        """The ``X-RateLimit-*`` headers of ``key`` now, without counting a request; for None
        (a caller without a valid key) those of the default limits with nothing used."""
        now = self._clock.now()
        with self._lock:
            if key is None:
                limits, state = self.default, _KeyState()
            else:
                limits = self._per_key.get(key, self.default)
                state = self._state.get(key) or _KeyState()
            for length in _counted_windows(limits):
                self._count(state, length, now)
            return self._headers(limits, state, now)

    def finish(self, key: str, tokens: int = 0) -> None:
        """An admitted request of ``key`` is complete and used ``tokens``."""
        now = self._clock.now()
        with self._lock:
            state = self._state.setdefault(key, _KeyState())
            state.in_flight = max(0, state.in_flight - 1)
            if tokens:
                used = self._tokens(state, now)
                state.tokens = (_window_start(now, _MINUTE), used + tokens)

    @staticmethod
    def _count(state: _KeyState, length: int, now: float) -> int:
        start = _window_start(now, length)
        window_start, count = state.counts.get(length, (start, 0))
        if window_start != start:
            count = 0
        state.counts[length] = (start, count)
        return count

    @staticmethod
    def _tokens(state: _KeyState, now: float) -> int:
        start = _window_start(now, _MINUTE)
        window_start, used = state.tokens
        return used if window_start == start else 0

    def _headers(self, limits: RateLimits, state: _KeyState, now: float) -> dict[str, str]:
        """The headers of the window described (see the module docstring); the counted
        windows of ``state`` are current."""
        headers: dict[str, str] = {}
        if limits.tokens_per_minute is not None:
            left = max(0, limits.tokens_per_minute - self._tokens(state, now))
            headers["x-ratelimit-limit-tokens"] = str(limits.tokens_per_minute)
            headers["x-ratelimit-remaining-tokens"] = str(left)
            if limits.requests_per_minute is None:
                headers["x-ratelimit-limit"] = str(limits.tokens_per_minute)
                headers["x-ratelimit-remaining"] = str(left)
                headers["x-ratelimit-reset"] = str(int(_window_end(now, _MINUTE)))
                return headers
        limit, length = _described_window(limits)
        _, count = state.counts.get(length, (0.0, 0))
        headers["x-ratelimit-limit"] = str(limit)
        headers["x-ratelimit-remaining"] = str(max(0, limit - count))
        headers["x-ratelimit-reset"] = str(int(_window_end(now, length)))
        return headers

    @staticmethod
    def _refusal(limit: int, reset: float, now: float, label: str) -> Admission:
        headers = {
            "x-ratelimit-limit": str(limit),
            "x-ratelimit-remaining": "0",
            "x-ratelimit-reset": str(int(reset)),
            "retry-after": str(max(1, math.ceil(reset - now))),
        }
        return Admission(
            False,
            headers,
            "rate_limit_exceeded",
            f"rate limit reached: {limit} {label} for this key; retry after the reset",
        )


@functools.lru_cache(maxsize=64)
def _counted_windows(limits: RateLimits) -> tuple[int, ...]:
    """The lengths of the request windows counted for ``limits``: the limited ones, or the
    minute's when nothing at all is limited (so ``unlimited`` reports requests made)."""
    lengths = [length for name, length, _ in _REQUEST_WINDOWS if getattr(limits, name) is not None]
    if not lengths and limits.tokens_per_minute is None:
        lengths.append(_MINUTE)
    return tuple(lengths)


@functools.lru_cache(maxsize=64)
def _described_window(limits: RateLimits) -> tuple[int, int]:
    """(limit, window length) of the request window ``X-RateLimit-*`` describe: the first
    limited of the minute, hour and day, else `UNLIMITED` per minute."""
    for name, length, _ in _REQUEST_WINDOWS:
        limit = getattr(limits, name)
        if limit is not None:
            return limit, length
    return UNLIMITED, _MINUTE


def _window_start(now: float, length: int) -> float:
    return math.floor(now / length) * length


def _window_end(now: float, length: int) -> float:
    return _window_start(now, length) + length
