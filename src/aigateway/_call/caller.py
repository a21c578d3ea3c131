"""The caller's line: where a warning of the SDK points."""

from __future__ import annotations

import sys

__all__ = ["caller_stacklevel"]


def caller_stacklevel() -> int:
    """The stacklevel of the first frame outside aigateway (and tenacity): the caller's line."""
    level, frame = 1, sys._getframe(1)
    while frame.f_back is not None and str(frame.f_globals.get("__name__", "")).startswith(
        ("aigateway", "tenacity")
    ):
        level, frame = level + 1, frame.f_back
    return level
