"""Stream timeouts: the limits a call or a client sets on a stream, and the timer that
enforces them, without I/O.

Three limits, each in seconds or None for none: ``stream_first_event_timeout`` from sending
the request to the first event (the idle timeout when unset), ``stream_idle_timeout`` between
two events (keep-alive comments do not count), and ``stream_deadline`` for the whole stream.
The timer reads a clock it is given (the retry policy's ``monotonic``), so tests move time
instead of waiting.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

__all__ = ["DEFAULT_STREAM_IDLE_TIMEOUT", "StreamTimeouts", "StreamTimer"]

DEFAULT_STREAM_IDLE_TIMEOUT = 300.0
"""Seconds a stream may go without an event before it raises `StreamTimeoutError`."""
_MARGIN = 1e-6
"""Seconds before a limit's time from which the timer checks it exactly (float rounding)."""


@dataclass(frozen=True)
class StreamTimeouts:
    """The limits of one stream, in seconds (None: no limit)."""

    first_event: float | None = None
    """From sending the request to the first event; the idle timeout when None."""
    idle: float | None = DEFAULT_STREAM_IDLE_TIMEOUT
    """Between two events (keep-alive comments do not count)."""
    deadline: float | None = None
    """The whole stream, from sending the request."""

    @classmethod
    def of(cls, defaults: StreamTimeouts, options: Mapping[str, Any]) -> StreamTimeouts:
        """The limits a call asks for (``stream_first_event_timeout``, ``stream_idle_timeout``,
        ``stream_deadline``), else the client's."""
        if not options:
            return defaults
        return cls(
            options.get("stream_first_event_timeout", defaults.first_event),
            options.get("stream_idle_timeout", defaults.idle),
            options.get("stream_deadline", defaults.deadline),
        )

    def read_timeout(self, timeout: httpx.Timeout) -> httpx.Timeout:
        """``timeout`` with its read timeout lowered to the longest silence these limits allow,
        so a server that sends nothing at all raises instead of hanging."""
        gap = self.idle if self.first_event is None else _largest(self.first_event, self.idle)
        limits = [t for t in (timeout.read, gap, self.deadline) if t is not None]
        read = min(limits) if limits else None
        if read == timeout.read:
            return timeout
        return httpx.Timeout(
            connect=timeout.connect, read=read, write=timeout.write, pool=timeout.pool
        )

    def timer(self, clock: Callable[[], float]) -> StreamTimer | None:
        """A timer started now, or None when there is no limit."""
        if self.first_event is None and self.idle is None and self.deadline is None:
            return None
        return StreamTimer(self.idle, self.deadline, clock, first_event_timeout=self.first_event)


def _largest(first: float, idle: float | None) -> float | None:
    return None if idle is None else max(first, idle)


class StreamTimer:
    """The first-event timeout, idle timeout and deadline of one stream, without I/O: told
    after each read whether an event arrived, it says when a limit was passed. A late event
    trips the limit it broke: time is checked before the event is counted."""

    __slots__ = (
        "_clock",
        "_deadline",
        "_due",
        "_first_event",
        "_idle_timeout",
        "_last_event",
        "_start",
    )

    def __init__(
        self,
        idle_timeout: float | None,
        deadline: float | None,
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
            dues.append(self._start + self._deadline)
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
        if self._deadline is not None and now - self._start > self._deadline:
            return f"the stream went over its deadline of {self._deadline:g} s (stream_deadline)"
        limit, since, name = self._silence_limit()
        if limit is not None and now - since > limit:
            what = "no first event" if name == "stream_first_event_timeout" else "no event"
            return f"{what} for more than {limit:g} s ({name}; keep-alive comments do not count)"
        return None

    def next_wait(self) -> float | None:
        """How long the next wait for an event may last (None: no limit)."""
        now = self._clock()
        waits = []
        if self._deadline is not None:
            waits.append(self._start + self._deadline - now)
        limit, since, _ = self._silence_limit()
        if limit is not None:
            waits.append(since + limit - now)
        return max(0.0, min(waits)) if waits else None
