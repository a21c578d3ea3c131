"""The retry policy, as data, built on tenacity and shared by the sync and async pipelines.

What retries: lost connections, timeouts, and 408, 409, 429 and 5xx replies except 501 (Not
Implemented will not change); never a credits error (a 429 whose code says the credits or quota
ran out is an `InsufficientCreditsError`: the body decides, not only the status). A reply
header ``x-should-retry: true`` or ``false`` overrides the status either way, except for
credits errors.

How long it waits, first rule that applies:

1. ``retry-after-ms``, in milliseconds;
2. ``Retry-After``, in seconds or as an HTTP date (always GMT, whatever the date's format);
3. ``X-RateLimit-Reset`` when the window is spent (``X-RateLimit-Remaining`` is 0, or a 429
   gives a reset but no remaining). Its magnitude says how to read it: below 1e9 a delay in
   seconds (``12`` waits 12 s), from 1e9 a Unix time in seconds, from 1e11 a Unix time in
   milliseconds;
4. exponential backoff, 1 s, 2 s, 4 s ..., each multiplied by a random factor (jitter).

Header values that are not a finite number of at least 0 (``inf``, ``nan``, ``-5``, words) are
ignored, never raised on; a wait asked beyond ten years counts as ten years.

A wait the gateway asks for that is longer than ``max_wait`` is not slept: the error is raised
at once, so a caller never hangs unseen for minutes. Whenever the reply that ends a call asked
for a wait, retried or not, its error carries it as ``retry_after``. The sleep
functions and the clock are part of the policy, so tests inject ones that do not sleep.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, TypeVar

from aigateway._logging import logger
from aigateway.errors import APIConnectionError, APIError, APIStatusError, InsufficientCreditsError
from aigateway.types.rate_limits import server_wait

if TYPE_CHECKING:
    from tenacity import RetryCallState, Retrying

E = TypeVar("E", bound=APIError)

RETRY_STATUSES: frozenset[int] = frozenset({408, 409, 429, *range(500, 600)} - {501})
"""The statuses retried by default: request timeout, conflict, rate limit, and every 5xx but
501 Not Implemented."""


def set_attempts(error: E, attempts: int) -> E:
    """Record on an error how many attempts were made before it."""
    error.attempts = attempts  # type: ignore[attr-defined]
    return error


def is_retryable(error: BaseException, statuses: frozenset[int] = RETRY_STATUSES) -> bool:
    """Whether another attempt may succeed where this one failed: the reply's
    ``x-should-retry`` when it says ``true`` or ``false``, else the status."""
    if isinstance(error, InsufficientCreditsError):
        return False
    if isinstance(error, APIStatusError):
        verdict = str(error.headers.get("x-should-retry", "")).strip().lower()
        if verdict in ("true", "false"):
            return verdict == "true"
        return error.status_code in statuses
    return isinstance(error, APIConnectionError)


async def event_loop_sleep(seconds: float) -> None:
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
    """The HTTP statuses that are retried (credits errors never are; a reply's
    ``x-should-retry`` header overrides this)."""
    sleep: Callable[[float], None] = time.sleep
    async_sleep: Callable[[float], Awaitable[None]] = event_loop_sleep
    random: Callable[[], float] = field(default=random.random, repr=False)
    now: Callable[[], float] = field(default=time.time, repr=False)
    """The clock (Unix seconds) that ``Retry-After`` dates and ``X-RateLimit-Reset`` times are
    compared with."""
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
        asked = self._asked_wait(error)
        return self.backoff(attempt_number) if asked is None else asked

    def _asked_wait(self, error: BaseException | None) -> float | None:
        """The wait the reply behind ``error`` asks for, if any."""
        if not isinstance(error, APIStatusError):
            return None
        return server_wait(error.headers, self.now(), status=error.status_code)

    def record_asked_wait(self, error: BaseException) -> None:
        """Set ``retry_after`` on the status error a call ends with, when its reply asked for a
        wait, retried or not (the caller may want to wait it out itself)."""
        if isinstance(error, APIStatusError) and error.retry_after is None:
            error.retry_after = self._asked_wait(error)

    def should_retry(self, error: BaseException | None) -> bool:
        """Whether ``error`` may be retried; a server-asked wait beyond the cap says no, and is
        recorded on the error as ``retry_after``."""
        if error is None or not is_retryable(error, self.statuses):
            return False
        asked = self._asked_wait(error)
        if isinstance(error, APIStatusError) and asked is not None and asked > self.max_wait:
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
            self._log_retry(
                _error_of(state), state.attempt_number, state.upcoming_sleep, max_retries
            )

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
    def _log_retry(
        error: BaseException | None, attempt_number: int, wait: float, max_retries: int
    ) -> None:
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
                # for handlers that report retries their own way (the ``aigateway`` command)
                extra={"retry": (error, attempt_number + 1, max_retries + 1, wait)},
            )


def _error_of(state: RetryCallState) -> BaseException | None:
    return state.outcome.exception() if state.outcome else None
