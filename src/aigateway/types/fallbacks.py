"""What a call with ``fallback_models`` did: the record a reply (``reply.fallback``), a stream
and an error (``error.fallback``) carry. The fallback policy itself lives in the request path."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aigateway.errors import APIError

__all__ = ["FailedAttempt", "FallbackInfo"]


@dataclass(frozen=True)
class FailedAttempt:
    """A model a call with ``fallback_models`` tried, and the error it ended in."""

    model: str
    error: APIError


@dataclass(frozen=True)
class FallbackInfo:
    """How a call with ``fallback_models`` went: the model that served it (None when every
    model failed) and the models tried before it, in order, with their errors."""

    served_by: str | None
    failed: tuple[FailedAttempt, ...] = ()
