"""The retry policy, as data: tenacity strategies and the settings of the default ones,
shared by the sync and async pipelines.

Its ``wait``, ``stop`` and ``retry`` are tenacity strategies, so a user who knows tenacity
can replace any of them or compose them with their own (``|``, ``&``, ``+``). Left unset,
they are the defaults described below, built on the first retry from the other fields by
`aigateway._pipeline.retry_strategies` (which imports tenacity: a call that succeeds at once
never loads it).

What retries (`retry_if_transient`): lost connections, timeouts, and 408, 409, 429 and 5xx replies except 501 (Not
Implemented will not change); never a credits error (a 429 whose code says the credits or quota
ran out is an `InsufficientCreditsError`: the body decides, not only the status). A reply
header ``x-should-retry: true`` or ``false`` overrides the status either way, except for
credits errors.

How long it waits (``wait_server_requested() | wait_backoff(...)``), first rule that applies:

1. ``retry-after-ms``, in milliseconds;
2. ``Retry-After``, in seconds or as an HTTP date (always GMT, whatever the date's format);
3. ``X-RateLimit-Reset`` when the window is spent (``X-RateLimit-Remaining`` is 0, or a 429
   gives a reset but no remaining). Its magnitude says how to read it: below 1e9 a delay in
   seconds (``12`` waits 12 s), from 1e9 a Unix time in seconds, from 1e11 a Unix time in
   milliseconds;
4. exponential backoff, 1 s, 2 s, 4 s ..., each multiplied by a random factor (jitter).

Header values that are not a finite number of at least 0 (``inf``, ``nan``, ``-5``, words) are
ignored, never raised on; a wait asked beyond ten years counts as ten years.

How many attempts: ``max_retries`` + 1 (``stop_after_attempt``), per client, per call and via
``with_options``; a ``stop`` on the policy replaces that limit (``max_retries=0`` still turns
retries off). Every call also stops before a wait longer than ``max_wait`` and before a wait
that would pass its deadline.

A wait longer than ``max_wait`` is not slept: the error is raised at once, so a caller never
hangs unseen for minutes. Whenever the reply that ends a call asked
for a wait, retried or not, its error carries it as ``retry_after``. The sleep
functions and the clock are part of the policy, so tests inject ones that do not sleep.
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, TypeVar

from aigateway.errors import APIError, APIStatusError, ConfigurationError
from aigateway.types.rate_limits import server_wait

if TYPE_CHECKING:
    from tenacity.retry import RetryBaseT
    from tenacity.stop import StopBaseT
    from tenacity.wait import WaitBaseT

    from aigateway._call.timeouts import Deadline
    from aigateway._pipeline.retry_strategies import CallRetries
    from aigateway._stacks import Request

E = TypeVar("E", bound=APIError)

RETRY_STATUSES: frozenset[int] = frozenset({408, 409, 429, *range(500, 600)} - {501})
"""The statuses retried by default: request timeout, conflict, rate limit, and every 5xx but
501 Not Implemented."""


def set_attempts(error: E, attempts: int) -> E:
    """Record on an error how many attempts were made before it."""
    error.attempts = attempts  # type: ignore[attr-defined]
    return error


def asked_wait(error: BaseException | None, now: float) -> float | None:
    """The wait in seconds the reply behind ``error`` asked for, if any (``now``: Unix
    seconds, for ``Retry-After`` dates and ``X-RateLimit-Reset`` times)."""
    if not isinstance(error, APIStatusError):
        return None
    return server_wait(error.headers, now, status=error.status_code)


async def event_loop_sleep(seconds: float) -> None:
    """`anyio.sleep`, imported when first needed (asyncio and trio alike)."""
    import anyio

    await anyio.sleep(seconds)


@dataclass(frozen=True)
class RetryPolicy:
    """When to retry and how long to wait; override per client (``retry_policy=``).

    ``wait``, ``stop`` and ``retry`` take tenacity strategies (``wait_fixed(2)``,
    ``stop_after_attempt(5)``, ``retry_if_exception_type(...)``, ours, and their ``|``, ``&``,
    ``+`` compositions); unset, they are the defaults built from the fields before them. The
    number of retries is not here but in ``max_retries`` (per client, per call and via
    ``with_options``), because it changes more often than the rules.
    """

    initial_wait: float = 1.0
    """The default backoff's first wait in seconds; each later one doubles."""
    max_wait: float = 60.0
    """The cap: the default backoff is clamped to it, and any longer wait (one the gateway
    asks for, or one your ``wait`` computes) raises the error at once (with ``retry_after``
    set when the gateway asked) instead of sleeping."""
    jitter: float = 0.25
    """Each default backoff wait is multiplied by a random factor in [1 - jitter, 1 + jitter]."""
    statuses: frozenset[int] = RETRY_STATUSES
    """The HTTP statuses the default rule retries (credits errors never are; a reply's
    ``x-should-retry`` header overrides this)."""
    sleep: Callable[[float], None] = time.sleep
    async_sleep: Callable[[float], Awaitable[None]] = event_loop_sleep
    random: Callable[[], float] = field(default=random.random, repr=False)
    now: Callable[[], float] = field(default=time.time, repr=False)
    """The clock (Unix seconds) that ``Retry-After`` dates and ``X-RateLimit-Reset`` times are
    compared with."""
    monotonic: Callable[[], float] = field(default=time.monotonic, repr=False)
    """The clock of stream timers (first-event and idle timeouts, deadlines)."""
    wait: WaitBaseT | None = None
    """The wait before each retry, a tenacity wait strategy; unset:
    ``wait_server_requested() | wait_backoff(initial_wait, max_wait, jitter, random)``."""
    stop: StopBaseT | None = None
    """When to stop retrying, a tenacity stop strategy; unset:
    ``stop_after_attempt(max_retries + 1)``. The cap and the call's deadline apply either way."""
    retry: RetryBaseT | None = None
    """Which failures are retried, a tenacity retry strategy; unset:
    ``retry_if_transient(statuses)``."""

    def __post_init__(self) -> None:
        for name in ("wait", "stop", "retry"):
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise ConfigurationError(
                    f"RetryPolicy({name}=...) must be a tenacity {name} strategy (such as "
                    f"tenacity's {name}_* objects) or None for the default; got {value!r}"
                )

    def with_changes(self, **changes: object) -> RetryPolicy:
        return replace(self, **changes)  # type: ignore[arg-type]

    def record_asked_wait(self, error: BaseException) -> None:
        """Set ``retry_after`` on the status error a call ends with, when its reply asked for a
        wait, retried or not (the caller may want to wait it out itself)."""
        if isinstance(error, APIStatusError) and error.retry_after is None:
            error.retry_after = asked_wait(error, self.now())

    def start_retries(
        self,
        max_retries: int,
        first_error: APIError,
        deadline: Deadline | None,
        request: Request,
    ) -> CallRetries:
        """The retries of a call whose first attempt failed with ``first_error``, on
        tenacity's state machine under this policy's strategies; the flow asks it for each
        wait (tenacity is imported here: a call that succeeds at once never needs it)."""
        from aigateway._pipeline.retry_strategies import CallRetries

        return CallRetries(self, max_retries, first_error, deadline, request)
