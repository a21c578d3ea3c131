"""The mock gateway's clock: time that tests set and advance instead of waiting.

Every timestamp the mock writes (``created`` of completions and chunks) comes from one
`MockClock`. It starts at a fixed instant, so replies are byte-identical from run to run, and
it moves only when a test moves it: nothing in the mock sleeps or reads the wall clock.
"""

from __future__ import annotations

import threading

__all__ = ["DEFAULT_START", "MockClock"]

DEFAULT_START = 1_700_000_000.0
"""Where a new clock starts: 2023-11-14T22:13:20Z, a fixed instant for reproducible replies."""


class MockClock:
    """A settable clock: ``now()`` returns the current mock time in Unix seconds."""

    def __init__(self, start: float = DEFAULT_START) -> None:
        self._now = float(start)
        self._lock = threading.Lock()

    def now(self) -> float:
        """The current mock time (Unix seconds)."""
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> float:
        """Move the clock forward by ``seconds`` (not backwards); returns the new time."""
        if seconds < 0:
            raise ValueError(f"a clock only moves forward; got advance({seconds!r})")
        with self._lock:
            self._now += seconds
            return self._now

    def set(self, timestamp: float) -> None:
        """Put the clock at ``timestamp`` (Unix seconds), in either direction."""
        with self._lock:
            self._now = float(timestamp)

    def __repr__(self) -> str:
        return f"MockClock(now={self.now()!r})"
