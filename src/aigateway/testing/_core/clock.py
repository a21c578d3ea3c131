"""The mock gateway's clock: time that tests set and advance instead of waiting.

Every time the mock reads (``created`` of completions, rate-limit windows, idempotency keys'
lifetime, ``X-RateLimit-Reset``) comes from one `MockClock`. A new clock is *manual*: it starts
at a fixed instant, so replies are byte-identical from run to run, and it moves only when a
test moves it. A clock can also *follow the wall clock* (`MockClock.follow_wall_clock`): it then
reads the real Unix time, and ``set`` and ``advance`` still move it, by an offset; it may run
faster than the wall (``follow_wall_clock(speed=60)``: a mock minute per real second), so
tests of rate limits against a served mock take seconds, not minutes. A served gateway runs on
the wall clock (see `MockGateway.serve`), so its rate-limit windows and ``Retry-After`` are
real (or accelerated); the objects holding the clock never notice the difference.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

__all__ = ["DEFAULT_START", "MockClock"]

DEFAULT_START = 1_700_000_000.0
"""Where a new clock starts: 2023-11-14T22:13:20Z, a fixed instant for reproducible replies."""


class MockClock:
    """A settable clock: ``now()`` returns the current mock time in Unix seconds.

    Manual (the default) until `follow_wall_clock` is called; `freeze` makes it manual again.
    ``wall`` is the real clock it follows (``time.time``; tests give a fake one).
    """

    def __init__(
        self, start: float = DEFAULT_START, *, wall: Callable[[], float] = time.time
    ) -> None:
        self._base = float(start)
        """The time when manual; the mock time at ``_anchor`` when following the wall."""
        self._anchor = 0.0
        """The wall time from which a following clock counts, ``speed`` mock seconds a second."""
        self._speed = 1.0
        self._wall_clock = wall
        self._wall = False
        self._lock = threading.Lock()

    @property
    def manual(self) -> bool:
        """True when the clock moves only by `set` and `advance`."""
        with self._lock:
            return not self._wall

    @property
    def speed(self) -> float:
        """Mock seconds per wall second while following the wall clock (1.0: real time)."""
        with self._lock:
            return self._speed

    def now(self) -> float:
        """The current mock time (Unix seconds)."""
        with self._lock:
            return self._read()

    def advance(self, seconds: float) -> float:
        """Move the clock forward by ``seconds`` (not backwards); returns the new time."""
        if seconds < 0:
            raise ValueError(f"a clock only moves forward; got advance({seconds!r})")
        with self._lock:
            self._base += seconds
            return self._read()

    def set(self, timestamp: float) -> None:
        """Put the clock at ``timestamp`` (Unix seconds), in either direction."""
        with self._lock:
            self._base = float(timestamp)
            self._anchor = self._wall_clock() if self._wall else 0.0

    def follow_wall_clock(self, speed: float = 1.0) -> None:
        """Run with the real time from now on, ``speed`` times as fast (``speed=60``: a mock
        minute per wall second). A manual clock first jumps to the real time (``time.time()``);
        a clock already following only changes pace, without a jump. `set` and `advance`
        still move it."""
        if isinstance(speed, bool) or not isinstance(speed, (int, float)):
            raise TypeError(f"speed is a number of mock seconds per wall second, got {speed!r}")
        if not (math.isfinite(speed) and speed > 0):
            raise ValueError(
                f"speed is a finite number above 0 (mock seconds per wall second), got {speed!r}"
            )
        with self._lock:
            wall = self._wall_clock()
            self._base = self._read() if self._wall else wall
            self._anchor, self._speed, self._wall = wall, float(speed), True

    def freeze(self) -> None:
        """Stop the clock at its current time: from now on it is manual."""
        with self._lock:
            if self._wall:
                self._base, self._wall = self._read(), False

    def _read(self) -> float:
        if not self._wall:
            return self._base
        return self._base + (self._wall_clock() - self._anchor) * self._speed

    def __repr__(self) -> str:
        mode = "manual" if self.manual else "wall"
        if not self.manual and self.speed != 1.0:
            mode = f"wall x{self.speed:g}"
        return f"MockClock(now={self.now()!r}, {mode})"
