"""`RateLimitInfo`: the ``X-RateLimit-*`` headers of a reply, read by one set of rules.

Every reply's headers pass through `RateLimitInfo.from_headers`, so it reads them in one scan;
a header that is absent or not a sane number reads as None and never raises.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["UNIX_MILLISECONDS_FROM", "UNIX_SECONDS_FROM", "RateLimitInfo", "parse_number"]


@dataclass(frozen=True)
class RateLimitInfo:
    """The ``X-RateLimit-*`` headers of one reply (None where a header was absent or unreadable)."""

    limit: int | None = None
    remaining: int | None = None
    reset: int | None = None
    """When the window resets, as sent: seconds from now (below 1e9), Unix seconds (below
    1e11) or Unix milliseconds; `seconds_until_reset` reads all three."""
    limit_tokens: int | None = None
    """``X-RateLimit-Limit-Tokens``: the tokens the window allows, when tokens are limited."""
    remaining_tokens: int | None = None
    """``X-RateLimit-Remaining-Tokens``: the tokens left in the window."""

    def seconds_until_reset(self, now: float) -> float | None:
        """Seconds from ``now`` (Unix seconds) until the window resets, 0 when already past;
        None without a reset. The magnitude says how ``reset`` is meant: below 1e9 it is a
        delay in seconds, below 1e11 a Unix time in seconds, above that in milliseconds."""
        if self.reset is None:
            return None
        if self.reset < UNIX_SECONDS_FROM:
            return float(self.reset)
        at = self.reset / 1000 if self.reset >= UNIX_MILLISECONDS_FROM else self.reset
        return max(0.0, at - now)

    @classmethod
    def from_headers(cls, headers: Mapping[str, str]) -> RateLimitInfo | None:
        """Parse the headers; None when the reply carries none of them.

        Runs on every reply, so httpx headers are scanned once, as bytes."""
        raw: Iterable[tuple[bytes, bytes]] | None = getattr(headers, "raw", None)
        if raw is None:
            found = {
                name.lower(): value
                for name, value in headers.items()
                if name[:12].lower() == "x-ratelimit-"
            }
        else:
            found = {
                name.decode("latin-1").lower(): value.decode("latin-1")
                for name, value in raw
                if name[:12].lower() == b"x-ratelimit-"
            }
        if not found:
            return None
        return cls(
            _parse_int(found.get("x-ratelimit-limit")),
            _parse_int(found.get("x-ratelimit-remaining")),
            _parse_int(found.get("x-ratelimit-reset")),
            _parse_int(found.get("x-ratelimit-limit-tokens")),
            _parse_int(found.get("x-ratelimit-remaining-tokens")),
        )


UNIX_SECONDS_FROM = 1e9
"""An ``X-RateLimit-Reset`` from here (September 2001) up is a Unix time, below a delay."""
UNIX_MILLISECONDS_FROM = 1e11
"""An ``X-RateLimit-Reset`` from here up is a Unix time in milliseconds (as seconds it would be
the year 5138)."""
_LARGEST_COUNT = 2**63 - 1


def parse_number(raw: str | None) -> float | None:
    """A header's number, or None when absent or not a finite number of at least 0
    (``inf``, ``nan``, ``-5`` and words all read as None); never raises."""
    if raw is None:
        return None
    try:
        value = float(raw.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def _parse_int(raw: str | None) -> int | None:
    """`parse_number` truncated to an int; None for numbers too large for a 64-bit count."""
    value = parse_number(raw)
    return int(value) if value is not None and value <= _LARGEST_COUNT else None
