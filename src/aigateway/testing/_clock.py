"""The mock gateway's clock: time that tests set and advance instead of waiting.

Every time the mock reads (``created`` of completions, rate-limit windows, idempotency keys'
lifetime, ``X-RateLimit-Reset``) comes from one `MockClock`. A new clock is *manual*: it starts
at a fixed instant, so replies are byte-identical from run to run, and it moves only when a
test moves it. A clock can also *follow the wall clock* (`MockClock.follow_wall_clock`): it then
reads the real Unix time, and ``set`` and ``advance`` still move it, by an offset. A served
gateway runs on the wall clock (see `MockGateway.serve`), so its rate-limit windows and
``Retry-After`` are real; the objects holding the clock never notice the difference.
"""

from __future__ import annotations

import threading
import time

__all__ = ["DEFAULT_START", "MockClock"]

DEFAULT_START = 1_700_000_000.0
"""Where a new clock starts: 2023-11-14T22:13:20Z, a fixed instant for reproducible replies."""


class MockClock:
    """A settable clock: ``now()`` returns the current mock time in Unix seconds.

    Manual (the default) until `follow_wall_clock` is called; `freeze` makes it manual again.
    """

    def __init__(self, start: float = DEFAULT_START) -> None:
        self._base = float(start)
        """The time when manual; the offset from ``time.time()`` when following the wall."""
        self._wall = False
        self._lock = threading.Lock()

    @property
    def manual(self) -> bool:
        """True when the clock moves only by `set` and `advance`."""
        with self._lock:
            return not self._wall

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
            self._base = float(timestamp) - (time.time() if self._wall else 0.0)

    def follow_wall_clock(self) -> None:
        """Read the real time (``time.time()``) from now on; `set` and `advance` still move
        the clock, by an offset from the real time."""
        with self._lock:
            if not self._wall:
                self._wall, self._base = True, 0.0

    def freeze(self) -> None:
        """Stop the clock at its current time: from now on it is manual."""
        with self._lock:
            if self._wall:
                self._base, self._wall = self._read(), False

    def _read(self) -> float:
        return self._base + time.time() if self._wall else self._base

    def __repr__(self) -> str:
        mode = "manual" if self.manual else "wall"
        return f"MockClock(now={self.now()!r}, {mode})"
