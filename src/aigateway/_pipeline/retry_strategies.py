"""The retries of a call, on tenacity: the strategies of ours and the state machine the flow
drives.

`RetryPolicy` holds the strategies as data; this module, imported on a call's first retry (a
call that succeeds at once never loads tenacity), holds what runs them:

- `wait_server_requested`: the wait the gateway's reply asked for (``retry-after-ms``,
  ``Retry-After``, a spent window's ``X-RateLimit-Reset``); ``wait_server_requested() | other``
  waits ``other``'s time when the reply asked for none;
- `wait_backoff`: exponential backoff with a random factor (jitter), capped;
- `retry_if_transient`: which failures may succeed on another attempt;
- `stop_when_wait_over` (the cap) and `stop_before_deadline` (the call's deadline), the stops
  every call has besides the attempts limit;
- `CallRetries`: one call's retries on tenacity's state machine (`Retrying.iter`, the core of
  tenacity's own loops), which the flow asks for each wait, so the sync and async clients share
  every decision.

The strategies are plain tenacity strategies: they compose with tenacity's own (``|``, ``&``,
``+``) and serve tenacity's own ``@retry`` too.
"""

from __future__ import annotations

import logging
import random as random_module
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, cast

from tenacity import DoSleep, RetryCallState, Retrying, stop_after_attempt
from tenacity.retry import retry_if_exception
from tenacity.stop import stop_any, stop_base
from tenacity.wait import wait_base

from aigateway._logging import logger
from aigateway._pipeline.retry import RETRY_STATUSES, asked_wait, set_attempts
from aigateway.errors import APIConnectionError, APIError, APIStatusError, InsufficientCreditsError

if TYPE_CHECKING:
    from tenacity.wait import WaitBaseT

    from aigateway._call.timeouts import Deadline
    from aigateway._pipeline.retry import RetryPolicy
    from aigateway._stacks import Request

__all__ = [
    "CallRetries",
    "retry_if_transient",
    "stop_before_deadline",
    "stop_when_wait_over",
    "wait_backoff",
    "wait_server_requested",
]


class wait_server_requested(wait_base):
    """Wait as long as the gateway's reply asked: ``retry-after-ms``, else ``Retry-After``
    (seconds or an HTTP date), else a spent rate-limit window's ``X-RateLimit-Reset``. When
    the reply asked for no wait, or the failure had no reply (a lost connection), wait as
    ``fallback`` says (no wait without one).

    ``wait_server_requested() | other`` reads as *or*: it is
    ``wait_server_requested(fallback=other)``. Dates and resets are read on the clock of the
    `RetryPolicy` running it (its ``now``), else on `time.time`.
    """

    def __init__(self, fallback: WaitBaseT | None = None) -> None:
        self.fallback = fallback

    def __call__(self, retry_state: RetryCallState) -> float:
        outcome = retry_state.outcome
        error = outcome.exception() if outcome is not None and outcome.failed else None
        now: Callable[[], float] = getattr(retry_state.retry_object, "now", time.time)
        asked = asked_wait(error, now())
        if asked is not None:
            return asked
        return 0.0 if self.fallback is None else float(self.fallback(retry_state))

    def __or__(self, other: WaitBaseT) -> wait_server_requested:
        """The server's wait, else ``other``'s (a fallback already set always answers, so it
        stays)."""
        return wait_server_requested(other if self.fallback is None else self.fallback)

    def __repr__(self) -> str:
        return f"wait_server_requested(fallback={self.fallback!r})"


class wait_backoff(wait_base):
    """Exponential backoff with jitter: ``initial`` seconds after the first failed attempt,
    doubling after each, multiplied by a random factor in [1 - jitter, 1 + jitter] and capped
    at ``maximum``. ``random`` draws in [0, 1) (tests pass a constant)."""

    def __init__(
        self,
        initial: float = 1.0,
        maximum: float = 60.0,
        jitter: float = 0.25,
        random: Callable[[], float] = random_module.random,
    ) -> None:
        self.initial = initial
        self.maximum = maximum
        self.jitter = jitter
        self.random = random

    def __call__(self, retry_state: RetryCallState) -> float:
        exponent = min(retry_state.attempt_number - 1, 1000)  # 2.0 ** 1024 overflows a float
        factor = 1 + self.jitter * (2 * self.random() - 1)
        return float(min(self.initial * 2.0**exponent * factor, self.maximum))

    def __repr__(self) -> str:
        return (
            f"wait_backoff(initial={self.initial!r}, maximum={self.maximum!r}, "
            f"jitter={self.jitter!r})"
        )


class retry_if_transient(retry_if_exception):
    """Retry what may succeed on another attempt: lost connections, timeouts, and replies
    whose status is in ``statuses`` (by default 408, 409, 429 and every 5xx but 501). A
    reply's ``x-should-retry: true`` or ``false`` decides instead of its status; a credits
    error is never retried."""

    def __init__(self, statuses: Iterable[int] = RETRY_STATUSES) -> None:
        self.statuses = frozenset(statuses)
        super().__init__(self.is_transient)

    def is_transient(self, error: BaseException) -> bool:
        if isinstance(error, InsufficientCreditsError):
            return False
        if isinstance(error, APIStatusError):
            verdict = str(error.headers.get("x-should-retry", "")).strip().lower()
            if verdict in ("true", "false"):
                return verdict == "true"
            return error.status_code in self.statuses
        return isinstance(error, APIConnectionError)

    def __repr__(self) -> str:
        return f"retry_if_transient(statuses={sorted(self.statuses)!r})"


class stop_when_wait_over(stop_base):
    """Stop rather than wait longer than ``seconds`` (the policy's ``max_wait``): a wait the
    gateway asks for beyond it, or one a wait strategy computes, raises the error at once
    instead of hanging unseen."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __call__(self, retry_state: RetryCallState) -> bool:
        return retry_state.upcoming_sleep > self.seconds


class stop_before_deadline(stop_base):
    """Stop when the next wait would reach the call's deadline; ``reached`` then says so, and
    the call ends with the deadline's error rather than the last attempt's."""

    def __init__(self, deadline: Deadline) -> None:
        self.deadline = deadline
        self.reached = False

    def __call__(self, retry_state: RetryCallState) -> bool:
        self.reached = retry_state.upcoming_sleep >= self.deadline.left()
        return self.reached


class PolicyRetrying(Retrying):
    """tenacity's `Retrying`, carrying the policy's clock for `wait_server_requested`."""

    def __init__(self, now: Callable[[], float], **options: object) -> None:
        super().__init__(**options)  # type: ignore[arg-type]
        self.now = now


class CallRetries:
    """The retries of one call whose first attempt failed, under the policy's strategies: the
    flow asks `next_wait` before each retry and reports each failure with `failed`.

    The stop is the policy's (else ``max_retries`` + 1 attempts), the cap and the deadline,
    in that order: the first two end the call with the last attempt's error, the deadline
    with its own."""

    def __init__(
        self,
        policy: RetryPolicy,
        max_retries: int,
        first_error: APIError,
        deadline: Deadline | None,
        request: Request,
    ) -> None:
        self.policy = policy
        self.deadline = deadline
        self.request = request
        attempts = stop_after_attempt(max_retries + 1) if policy.stop is None else policy.stop
        self.attempts_allowed: int | None = getattr(attempts, "max_attempt_number", None)
        stops = [cast("stop_base", attempts), stop_when_wait_over(policy.max_wait)]
        self.out_of_time = None if deadline is None else stop_before_deadline(deadline)
        if self.out_of_time is not None:
            stops.append(self.out_of_time)
        wait = policy.wait
        if wait is None:
            backoff = wait_backoff(
                policy.initial_wait, policy.max_wait, policy.jitter, policy.random
            )
            wait = wait_server_requested() | backoff
        self.retrying = PolicyRetrying(
            policy.now,
            stop=stop_any(*stops),
            wait=wait,
            retry=retry_if_transient(policy.statuses) if policy.retry is None else policy.retry,
            before_sleep=self._log_retry,
            reraise=True,
        )
        self.retrying.begin()
        self.state = RetryCallState(self.retrying, fn=None, args=(), kwargs={})
        self.failed(first_error)

    @property
    def attempt(self) -> int:
        """The number of the attempt about to be made (after `next_wait`)."""
        return self.state.attempt_number

    def next_wait(self) -> float:
        """The wait before the next attempt; raises the error the call ends with when no retry
        is left: the last attempt's, or the deadline's when the wait would pass it."""
        try:
            # a DoSleep (tenacity's wait): the state holds a failed attempt, so never DoAttempt
            wait = float(cast("DoSleep", self.retrying.iter(self.state)))
        except APIError as last:
            if self.out_of_time is None or not self.out_of_time.reached:
                raise
            assert self.deadline is not None
            self.policy.record_asked_wait(last)
            error = self.deadline.error(self.request, waiting=self.state.upcoming_sleep, last=last)
            raise set_attempts(error, self.state.attempt_number) from last
        self.state.prepare_for_next_attempt()
        return wait

    def failed(self, error: APIError) -> None:
        """Record that the attempt just made failed with ``error``."""
        self.state.set_exception((type(error), error, error.__traceback__))

    def _log_retry(self, retry_state: RetryCallState) -> None:
        """One DEBUG line per retry, before its wait."""
        if not logger.isEnabledFor(logging.DEBUG):
            return
        outcome = retry_state.outcome
        error = outcome.exception() if outcome is not None else None
        request = getattr(error, "request", None)
        what = (
            f"HTTP {error.status_code}"
            if isinstance(error, APIStatusError)
            else type(error).__name__
        )
        attempt, wait = retry_state.attempt_number, retry_state.upcoming_sleep
        logger.debug(
            "retry %s %s after %s: attempt %d failed, waiting %.2f s",
            getattr(request, "method", "?"),
            request.url.path if request is not None else "?",
            what,
            attempt,
            wait,
            # for handlers that report retries their own way (the ``aigateway`` command)
            extra={"retry": (error, attempt + 1, self.attempts_allowed, wait)},
        )
