"""The retry policy, as data, built on tenacity and shared by the sync and async pipelines.

What retries: 429, 500, 502, 503 and 504 replies, lost connections and timeouts; never a
client error (400, 401, 402, 404) nor a credits error (a 429 whose code says the credits or
quota ran out is an `InsufficientCreditsError`: the body decides, not only the status).

How long it waits, first rule that applies:

1. ``Retry-After``, in seconds or as an HTTP date;
2. ``X-RateLimit-Reset`` (a Unix time) when ``X-RateLimit-Remaining`` is 0;
3. exponential backoff, 1 s, 2 s, 4 s ..., each multiplied by a random factor (jitter).

A wait the gateway asks for that is longer than ``max_wait`` is not slept: the error is raised
at once with ``retry_after`` set, so a caller never hangs unseen for minutes. The sleep
functions and the clock are part of the policy, so tests inject ones that do not sleep.
"""

from __future__ import annotations

import email.utils
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, TypeVar

from ._logging import logger
from .errors import (
    APIConnectionError,
    APIError,
    APIStatusError,
    InsufficientCreditsError,
    RateLimitInfo,
)

if TYPE_CHECKING:
    from tenacity import RetryCallState, Retrying

E = TypeVar("E", bound=APIError)

RETRY_STATUSES: frozenset[int] = frozenset({429, 500, 502, 503, 504})


def set_attempts(error: E, attempts: int) -> E:
    """Record on an error how many attempts were made before it."""
    error.attempts = attempts  # type: ignore[attr-defined]
    return error


def is_retryable(error: BaseException, statuses: frozenset[int] = RETRY_STATUSES) -> bool:
    """Whether another attempt may succeed where this one failed."""
    if isinstance(error, InsufficientCreditsError):
        return False
    if isinstance(error, APIStatusError):
        return error.status_code in statuses
    return isinstance(error, APIConnectionError)


def server_wait(headers: Mapping[str, str], now: float) -> float | None:
    """The wait in seconds a reply asks for (``Retry-After``, else a spent rate-limit window's
    ``X-RateLimit-Reset``), or None when it asks for none."""
    retry_after = parse_retry_after(headers.get("retry-after"), now)
    if retry_after is not None:
        return retry_after
    info = RateLimitInfo.from_headers(headers)
    if info is not None and info.remaining == 0 and info.reset is not None:
        return max(0.0, info.reset - now)
    return None


def parse_retry_after(raw: str | None, now: float) -> float | None:
    """``Retry-After`` as seconds from ``now``: a number of seconds or an HTTP date."""
    if raw is None:
        return None
    text = raw.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - now)


async def _event_loop_sleep(seconds: float) -> None:
    """`anyio.sleep`, imported when first needed (asyncio and trio alike)."""
    import anyio

    await anyio.sleep(seconds)


@dataclass(frozen=True)
class RetryPolicy:
    """When to retry and how long to wait; override per client (``retry_policy=``).

    The number of retries is not here but in ``max_retries`` (per client, per call and via
    ``with_options``), because it changes more often than the rules.
    """

    initial_wait: float = 1.0
    """The first backoff wait in seconds; each later one doubles."""
    max_wait: float = 60.0
    """The cap: backoff waits are clamped to it, and a wait the gateway asks for beyond it
    raises the error at once (with ``retry_after`` set) instead of sleeping."""
    jitter: float = 0.25
    """Each backoff wait is multiplied by a random factor in [1 - jitter, 1 + jitter]."""
    statuses: frozenset[int] = RETRY_STATUSES
    """The HTTP statuses that are retried (credits errors never are)."""
    sleep: Callable[[float], None] = time.sleep
    async_sleep: Callable[[float], Awaitable[None]] = _event_loop_sleep
    random: Callable[[], float] = field(default=random.random, repr=False)
    now: Callable[[], float] = field(default=time.time, repr=False)
    """The clock that ``Retry-After`` dates and ``X-RateLimit-Reset`` times are compared with."""
    monotonic: Callable[[], float] = field(default=time.monotonic, repr=False)
    """The clock of stream timers (first-event and idle timeouts, deadlines)."""

    def with_changes(self, **changes: object) -> RetryPolicy:
        return replace(self, **changes)  # type: ignore[arg-type]

    def backoff(self, attempt_number: int) -> float:
        """The backoff wait after failed attempt ``attempt_number`` (1-based), with jitter."""
        backoff = self.initial_wait * 2 ** (attempt_number - 1)
        factor = 1 + self.jitter * (2 * self.random() - 1)
        return float(min(backoff * factor, self.max_wait))

    def wait_for(self, error: BaseException | None, attempt_number: int) -> float:
        """The wait before the next attempt, after ``error`` ended attempt ``attempt_number``."""
        if isinstance(error, APIStatusError):
            asked = server_wait(error.headers, self.now())
            if asked is not None:
                return asked
        return self.backoff(attempt_number)

    def should_retry(self, error: BaseException | None) -> bool:
        """Whether ``error`` may be retried; a server-asked wait beyond the cap says no, and is
        recorded on the error as ``retry_after``."""
        if error is None or not is_retryable(error, self.statuses):
            return False
        if isinstance(error, APIStatusError):
            asked = server_wait(error.headers, self.now())
            if asked is not None and asked > self.max_wait:
                error.retry_after = asked
                return False
        return True

    def retrying(self, max_retries: int, first_error: APIError) -> tuple[Retrying, RetryCallState]:
        """Tenacity's state machine for the retries of a call whose first attempt failed with
        ``first_error``: ``retrying.iter(state)`` says how long to wait before the next attempt,
        or raises the last error when no retry is left. The pipeline drives it, so the sync and
        async clients share every retry decision (tenacity is imported on the first retry: a
        call that succeeds at once never needs it)."""
        from tenacity import RetryCallState, Retrying, stop_after_attempt

        def wait(state: RetryCallState) -> float:
            return self.wait_for(_error_of(state), state.attempt_number)

        def retry(state: RetryCallState) -> bool:
            return self.should_retry(_error_of(state))

        def before_sleep(state: RetryCallState) -> None:
            self._log_retry(_error_of(state), state.attempt_number, state.upcoming_sleep)

        retrying = Retrying(
            sleep=self.sleep,
            stop=stop_after_attempt(max_retries + 1),
            wait=wait,
            retry=retry,
            before_sleep=before_sleep,
            reraise=True,
        )
        retrying.begin()
        state = RetryCallState(retrying, fn=None, args=(), kwargs={})
        state.set_exception((type(first_error), first_error, first_error.__traceback__))
        return retrying, state

    @staticmethod
    def _log_retry(error: BaseException | None, attempt_number: int, wait: float) -> None:
        if logger.isEnabledFor(logging.DEBUG):
            request = getattr(error, "request", None)
            what = (
                f"HTTP {error.status_code}"
                if isinstance(error, APIStatusError)
                else type(error).__name__
            )
            logger.debug(
                "retry %s %s after %s: attempt %d failed, waiting %.2f s",
                getattr(request, "method", "?"),
                request.url.path if request is not None else "?",
                what,
                attempt_number,
                wait,
            )


def _error_of(state: RetryCallState) -> BaseException | None:
    return state.outcome.exception() if state.outcome else None
