"""Time limits of a call, without I/O: the whole call's deadline, and a stream's timeouts
with the timer that enforces them.

``deadline`` bounds a whole call, from its start: connecting, every attempt, every wait
between attempts and, for a stream, its whole life (`Deadline`). A stream also has
``stream_first_event_timeout``, from sending the request to the first event (the idle timeout
when unset), and ``stream_idle_timeout``, between two events (keep-alive comments do not
count). Each is in seconds, or None for none. Everything reads a clock it is given (the retry
policy's ``monotonic``), so tests move time instead of waiting.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from aigateway._call.caller import caller_stacklevel
from aigateway._stacks import failure_kind
from aigateway.errors import APIError, APITimeoutError, InvalidRequestError, Violation

if TYPE_CHECKING:
    from aigateway._stacks import Request, Timeout

__all__ = [
    "CLIP_SLACK",
    "DEFAULT_STREAM_IDLE_TIMEOUT",
    "SEND_ENDS_AT",
    "TIME_LIMIT_RULE",
    "Deadline",
    "StreamTimeouts",
    "StreamTimer",
    "call_deadline",
    "deprecated_stream_deadline",
    "is_deadline_error",
    "is_time_limit",
]

DEFAULT_STREAM_IDLE_TIMEOUT = 300.0
"""Seconds a stream may go without an event before it raises `StreamTimeoutError`."""
_MARGIN = 1e-6
"""Seconds before a limit's time from which the timer checks it exactly (float rounding)."""
CLIP_SLACK = 0.1
"""Seconds by which a request's timeout may outlast the time left before it is lowered to it
(so the first attempt of a call keeps the timeouts it was given); also how close to its end a
timeout counts as the deadline's."""
SEND_ENDS_AT: ContextVar[float | None] = ContextVar("aigateway_send_ends_at", default=None)
"""While the sync driver sends a request of a call that has a deadline: the `time.monotonic`
time by which the reply's head must have come (`aigateway._http.sync_transport` ends each read and
write there); None otherwise."""


TIME_LIMIT_RULE: Final = "must be a number of seconds > 0 or None"


def is_time_limit(value: object) -> bool:
    """Whether ``value`` can be a time limit: None (no limit) or a number of seconds > 0 (not a
    bool, not NaN)."""
    return value is None or (
        not isinstance(value, bool) and isinstance(value, int | float) and value > 0
    )


def call_deadline(
    options: Mapping[str, Any], streaming: bool, default: float | None
) -> float | None:
    """The deadline a call's options ask for: ``deadline``, else for a stream the deprecated
    ``stream_deadline`` (which warns), else ``default``. A value that cannot be a deadline, or
    both names at once, is an `InvalidRequestError`, raised before anything is sent."""
    for name in ("deadline", "stream_deadline"):
        value = options.get(name)
        if name in options and not is_time_limit(value):
            raise InvalidRequestError([Violation(name, value, TIME_LIMIT_RULE)])
    if "stream_deadline" in options:
        deprecated_stream_deadline()
        if "deadline" in options:
            problem = "is the deprecated name of deadline (for streams only): pass deadline only"
            raise InvalidRequestError(
                [Violation("stream_deadline", options["stream_deadline"], problem)]
            )
    if "deadline" in options:
        seconds: float | None = options["deadline"]
        return seconds
    if streaming and "stream_deadline" in options:
        seconds = options["stream_deadline"]
        return seconds
    return default


def is_deadline_error(error: BaseException) -> bool:
    """Whether ``error`` says a call's deadline ran out (then nothing more is tried)."""
    return isinstance(error, APITimeoutError) and error.limit_name == "deadline"


def deprecated_stream_deadline() -> None:
    """Warn, at the caller's line, that ``stream_deadline`` is now ``deadline``."""
    warnings.warn(
        "stream_deadline is deprecated and will be removed in the next release: use "
        "deadline=, which bounds a whole call, plain or streamed (stream_deadline still "
        "bounds streams only until then)",
        DeprecationWarning,
        stacklevel=caller_stacklevel(),
    )


class Deadline:
    """The time by which a whole call must be over, started when the call starts.

    The request path asks it how long each step may take: `clip` lowers a request's timeouts
    to the time left, `passed` is checked between the chunks of a body (a server sending a
    byte at a time restarts the read timeout on every byte), a wait between attempts that
    would pass it is not made, and a stream's timer ends the stream at it. `error` is the
    `APITimeoutError` that names it."""

    __slots__ = ("clock", "end", "seconds", "start")

    def __init__(self, seconds: float, clock: Callable[[], float]) -> None:
        self.seconds = seconds
        self.clock = clock
        self.start = clock()
        self.end = self.start + seconds

    def left(self) -> float:
        """Seconds left (negative once passed)."""
        return self.end - self.clock()

    def passed(self, now: float | None = None) -> bool:
        """Whether the deadline is behind ``now`` (the clock's time when not given)."""
        return (self.clock() if now is None else now) - self.start > self.seconds

    def ran_out(self, exc: BaseException) -> bool:
        """Whether ``exc``, a failure of the call, is this deadline running out: a timeout
        (the HTTP stack's, lowered by `clip`, a driver's, or our error for one) with at most
        `CLIP_SLACK` left."""
        timeout = isinstance(exc, APITimeoutError) or failure_kind(exc) == "timeout"
        return timeout and self.left() <= CLIP_SLACK

    def clip(self, timeouts: dict[str, float | None]) -> dict[str, float | None]:
        """A request's timeouts (its ``extensions["timeout"]``) lowered to the time left,
        those longer than it by over `CLIP_SLACK`; ``timeouts`` itself when none is."""
        left = self.left()
        longest = left + CLIP_SLACK
        for value in timeouts.values():
            if value is None or value > longest:
                left = max(left, _MARGIN)
                return {
                    name: left if value is None or value > left else value
                    for name, value in timeouts.items()
                }
        return timeouts

    def error(
        self,
        request: Request,
        *,
        waiting: float | None = None,
        last: BaseException | None = None,
    ) -> APITimeoutError:
        """The error of a call stopped by this deadline: it ran out, or ``waiting`` seconds
        for the next attempt would pass it; ``last`` is the failure of the last attempt, if
        any (also the error's cause)."""
        what = f"its deadline of {self.seconds:g} s (deadline)"
        call = f"{request.method} {request.url.path}"
        if waiting is None:
            message = f"{call} went over {what}"
        else:
            message = (
                f"{call} would go over {what}: waiting {waiting:.2f} s for the next attempt "
                f"would pass it ({max(self.left(), 0.0):.2f} s left)"
            )
        if isinstance(last, APIError):
            message += f"; the last attempt failed: {last.message}"
        error = APITimeoutError(message, request=request)
        error.limit_name, error.limit = "deadline", self.seconds
        error.__cause__ = last
        return error


@dataclass(frozen=True)
class StreamTimeouts:
    """The limits of one stream, in seconds (None: no limit)."""

    first_event: float | None = None
    """From sending the request to the first event; the idle timeout when None."""
    idle: float | None = DEFAULT_STREAM_IDLE_TIMEOUT
    """Between two events (keep-alive comments do not count)."""
    deadline: float | None = None
    """The whole stream, from the start of the call (a client's ``deadline``; a call's is
    chosen by the request path, which starts it as the call's `Deadline`)."""

    @classmethod
    def of(cls, defaults: StreamTimeouts, options: Mapping[str, Any]) -> StreamTimeouts:
        """The limits a call asks for (``stream_first_event_timeout``,
        ``stream_idle_timeout``), else the client's."""
        if not options:
            return defaults
        return cls(
            options.get("stream_first_event_timeout", defaults.first_event),
            options.get("stream_idle_timeout", defaults.idle),
            defaults.deadline,
        )

    def read_timeout(self, timeout: Timeout) -> Timeout:
        """``timeout`` with its read timeout lowered to the longest silence these limits allow,
        so a server that sends nothing at all raises instead of hanging (the deadline lowers
        it further on each attempt: `Deadline.clip`)."""
        gap = self.idle if self.first_event is None else _largest(self.first_event, self.idle)
        limits = [t for t in (timeout.read, gap) if t is not None]
        read = min(limits) if limits else None
        if read == timeout.read:
            return timeout
        return type(timeout)(  # the same HTTP stack's
            connect=timeout.connect, read=read, write=timeout.write, pool=timeout.pool
        )

    def timer(self, clock: Callable[[], float], deadline: Deadline | None) -> StreamTimer | None:
        """A timer started now that also ends the stream at the call's ``deadline``, or None
        when there is no limit."""
        if self.first_event is None and self.idle is None and deadline is None:
            return None
        return StreamTimer(self.idle, deadline, clock, first_event_timeout=self.first_event)


def _largest(first: float, idle: float | None) -> float | None:
    return None if idle is None else max(first, idle)


class StreamTimer:
    """The first-event timeout, idle timeout and deadline of one stream, without I/O: told
    after each read whether an event arrived, it says when a limit was passed (and `passed`
    names it). A late event trips the limit it broke: time is checked before the event is
    counted."""

    __slots__ = (
        "_clock",
        "_deadline",
        "_due",
        "_first_event",
        "_idle_timeout",
        "_last_event",
        "_start",
        "passed",
    )

    def __init__(
        self,
        idle_timeout: float | None,
        deadline: Deadline | None,
        clock: Callable[[], float],
        *,
        first_event_timeout: float | None = None,
    ) -> None:
        self._clock = clock
        self._idle_timeout = idle_timeout
        self._first_event = first_event_timeout
        self._deadline = deadline
        self._start = clock()
        self._last_event: float | None = None
        self._due = self._next_due()
        self.passed: tuple[str, float] | None = None
        """The limit `overdue` last found passed: the option naming it (``deadline``,
        ``stream_idle_timeout``, ``stream_first_event_timeout``) and its seconds."""

    def _silence_limit(self) -> tuple[float | None, float, str]:
        if self._last_event is None and self._first_event is not None:
            return self._first_event, self._start, "stream_first_event_timeout"
        since = self._start if self._last_event is None else self._last_event
        return self._idle_timeout, since, "stream_idle_timeout"

    def _next_due(self) -> float:
        """A time before which no limit can be passed, whatever arrives from now on (events
        only push the idle limit later). Until then a read costs `overdue` one comparison."""
        dues = []
        if self._deadline is not None:
            dues.append(self._deadline.end)
        if self._idle_timeout is not None:
            since = self._start if self._last_event is None else self._last_event
            dues.append(since + self._idle_timeout)
        if self._last_event is None and self._first_event is not None:
            dues.append(self._start + self._first_event)
        return min(dues, default=math.inf) - _MARGIN

    def overdue(self, progressed: bool) -> str | None:
        """Why the stream must stop now, or None; ``progressed``: an event just arrived."""
        now = self._clock()
        if now >= self._due:
            why = self._passed(now)
            if why is not None:
                return why
        if progressed:
            self._last_event = now
        if now >= self._due:
            self._due = self._next_due()
        return None

    def _passed(self, now: float) -> str | None:
        """The limit passed at ``now``, checked exactly, or None."""
        deadline = self._deadline
        if deadline is not None and deadline.passed(now):
            self.passed = ("deadline", deadline.seconds)
            return f"the stream went over its deadline of {deadline.seconds:g} s (deadline)"
        limit, since, name = self._silence_limit()
        if limit is not None and now - since > limit:
            self.passed = (name, limit)
            what = "no first event" if name == "stream_first_event_timeout" else "no event"
            return f"{what} for more than {limit:g} s ({name}; keep-alive comments do not count)"
        return None

    def next_wait(self) -> float | None:
        """How long the next wait for an event may last (None: no limit)."""
        now = self._clock()
        waits = []
        if self._deadline is not None:
            waits.append(self._deadline.end - now)
        limit, since, _ = self._silence_limit()
        if limit is not None:
            waits.append(since + limit - now)
        return max(0.0, min(waits)) if waits else None
