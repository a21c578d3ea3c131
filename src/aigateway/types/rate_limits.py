"""A reply's rate-limit headers, read by one set of rules: `RateLimitInfo` (the
``X-RateLimit-*`` headers) and `server_wait` (the wait a reply asks for: ``retry-after-ms``,
``Retry-After``, a spent window's reset).

Every reply's headers pass through `RateLimitInfo.from_headers`, so it reads them in one scan;
a header that is absent or not a sane number reads as None and never raises. The retry policy
and `RateLimitError.seconds_to_wait` both read a wait through `server_wait`.
"""

from __future__ import annotations

import datetime
import email.utils
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["RateLimitInfo"]
"""The public name; the header readers below serve the errors and the retry policy."""


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


LONGEST_SERVER_WAIT = 10 * 365 * 24 * 3600.0
"""`server_wait` clamps to ten years: still beyond any cap, so still raised at once, but a
number an error message can show."""


def server_wait(
    headers: Mapping[str, str], now: float, *, status: int | None = None
) -> float | None:
    """The wait in seconds a reply asks for, or None when it asks for none: ``retry-after-ms``,
    else ``Retry-After``, else a spent rate-limit window's ``X-RateLimit-Reset`` (``status``
    429 counts the window spent when ``X-RateLimit-Remaining`` is absent)."""
    wait = parse_retry_after_ms(headers.get("retry-after-ms"))
    if wait is None:
        wait = parse_retry_after(headers.get("retry-after"), now)
    if wait is None:
        info = RateLimitInfo.from_headers(headers)
        if info is not None and (info.remaining == 0 or (info.remaining is None and status == 429)):
            wait = info.seconds_until_reset(now)
    return None if wait is None else min(wait, LONGEST_SERVER_WAIT)


def parse_retry_after_ms(raw: str | None) -> float | None:
    """``retry-after-ms`` in seconds, or None when absent or not a number of milliseconds."""
    milliseconds = parse_number(raw)
    return None if milliseconds is None else milliseconds / 1000


def parse_retry_after(raw: str | None, now: float) -> float | None:
    """``Retry-After`` as seconds from ``now``: a number of seconds or an HTTP date (read as
    GMT even when it names no zone, as asctime dates do); None when unreadable."""
    if raw is None:
        return None
    seconds = parse_number(raw)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(raw.strip())
        if when.tzinfo is None:
            when = when.replace(tzinfo=datetime.timezone.utc)
        wait = when.timestamp() - now
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return max(0.0, wait)
