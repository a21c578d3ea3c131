"""The fallback policy (``fallback_models=``): which models may be tried, which failures move
on to the next one, and how the result learns what happened (`FallbackInfo`).

`aigateway._pipeline.flow.Pipeline` runs the models in turn with these rules; what a call
with fallbacks did is recorded in `aigateway.types.fallbacks`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aigateway._pipeline.response import RawResponse
from aigateway.errors import (
    APIConnectionError,
    APIError,
    IncompleteStreamError,
    InternalServerError,
    InvalidRequestError,
    NotFoundError,
    RateLimitError,
    Violation,
)

if TYPE_CHECKING:
    from aigateway.types.fallbacks import FallbackInfo

__all__ = ["MAX_FALLBACK_MODELS", "attach_fallback", "checked_fallbacks", "model_unavailable"]

MAX_FALLBACK_MODELS = 5


def checked_fallbacks(models: object) -> tuple[str, ...]:
    """``fallback_models`` as a tuple, or an `InvalidRequestError` saying what is allowed."""
    if (
        isinstance(models, (list, tuple))
        and 1 <= len(models) <= MAX_FALLBACK_MODELS
        and all(isinstance(model, str) and model for model in models)
    ):
        return tuple(models)
    allowed = f"a list of 1 to {MAX_FALLBACK_MODELS} model ids (non-empty strings)"
    raise InvalidRequestError([Violation("fallback_models", models, allowed)])


def model_unavailable(error: APIError) -> bool:
    """Whether a call's final error says its model cannot serve now, so another may: the
    model does not exist (404), the gateway failed or is overloaded (5xx, 429 after the
    retries), or no reply came (a connection failure, a stream cut before its first chunk)."""
    return isinstance(
        error,
        (
            NotFoundError,
            InternalServerError,
            RateLimitError,
            APIConnectionError,
            IncompleteStreamError,
        ),
    )


def attach_fallback(result: Any, info: FallbackInfo) -> None:
    """Tell the result (a reply, a stream, a raw reply's parsed object) how the call went."""
    target = result.parse() if isinstance(result, RawResponse) else result
    learn = getattr(type(target), "_learn", None)  # a reply model (`ReplyMixin`)
    if learn is not None:
        learn(target, "fallback", info)
    elif hasattr(target, "__dict__"):
        target.fallback = info  # a stream or socket
