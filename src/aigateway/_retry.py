"""The retry policy, as data, built on tenacity and shared by the sync and async pipelines.

What retries: 429, 500, 502, 503 and 504 replies, lost connections and timeouts; never a
client error (400, 401, 402, 404) nor a credits error. How long it waits: ``Retry-After``
when the gateway sends it, else exponential backoff (1 s, 2 s, 4 s ...) with jitter. The
sleep functions are part of the policy, so tests inject ones that do not sleep.
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TypeVar

import anyio
from tenacity import AsyncRetrying, RetryCallState, Retrying, stop_after_attempt

from .errors import APIConnectionError, APIError, APIStatusError, InsufficientCreditsError

E = TypeVar("E", bound=APIError)

RETRY_STATUSES: frozenset[int] = frozenset({429, 500, 502, 503, 504})


def set_attempts(error: E, attempts: int) -> E:
    """Record on an error how many attempts were made before it."""
    error.attempts = attempts  # type: ignore[attr-defined]
    return error


def attempts_of(error: BaseException) -> int:
    """How many attempts were made before ``error`` (1 when it was not retried)."""
    return int(getattr(error, "attempts", 1))


def is_retryable(error: BaseException) -> bool:
    """Whether another attempt may succeed where this one failed."""
    if isinstance(error, InsufficientCreditsError):
        return False
    if isinstance(error, APIStatusError):
        return error.status_code in RETRY_STATUSES
    return isinstance(error, APIConnectionError)


@dataclass(frozen=True)
class RetryPolicy:
    """When to retry and how long to wait; override per client or per call."""

    initial_wait: float = 1.0
    """The first backoff wait in seconds; each later one doubles."""
    max_wait: float = 60.0
    """The longest single wait."""
    jitter: float = 0.25
    """Each backoff wait is multiplied by a random factor in [1 - jitter, 1 + jitter]."""
    sleep: Callable[[float], None] = time.sleep
    async_sleep: Callable[[float], Awaitable[None]] = anyio.sleep
    random: Callable[[], float] = field(default=random.random, repr=False)

    def with_changes(self, **changes: object) -> RetryPolicy:
        return replace(self, **changes)  # type: ignore[arg-type]

    def wait_seconds(self, state: RetryCallState) -> float:
        """The wait before the next attempt, from the failed attempt's error."""
        error = state.outcome.exception() if state.outcome else None
        if isinstance(error, APIStatusError):
            retry_after = _retry_after_seconds(error.headers.get("retry-after"))
            if retry_after is not None:
                return min(retry_after, self.max_wait)
        backoff = self.initial_wait * 2 ** (state.attempt_number - 1)
        factor = 1 + self.jitter * (2 * self.random() - 1)
        return float(min(backoff * factor, self.max_wait))

    def _retry(self, state: RetryCallState) -> bool:
        error = state.outcome.exception() if state.outcome else None
        return error is not None and is_retryable(error)

    def sync_retrying(self, max_retries: int) -> Retrying:
        return Retrying(
            stop=stop_after_attempt(max_retries + 1),
            wait=self.wait_seconds,
            retry=self._retry,
            sleep=self.sleep,
            reraise=True,
        )

    def async_retrying(self, max_retries: int) -> AsyncRetrying:
        return AsyncRetrying(
            stop=stop_after_attempt(max_retries + 1),
            wait=self.wait_seconds,
            retry=self._retry,
            sleep=self.async_sleep,
            reraise=True,
        )


def _retry_after_seconds(raw: str | None) -> float | None:
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        return None
