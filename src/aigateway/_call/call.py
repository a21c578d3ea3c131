"""One API call as a resource describes it: the bottom of the request path.

An `APICall` carries what the caller said: the method and path, the JSON body as an object
(`APICall.payload`) and its encoding (`APICall.body`, made once), the model, the per-call
options and how the reply comes back. Everything above reads the call rather than the bytes:
the usage ledger and tracing take `APICall.model`, tracing the request's settings from the
payload, a fallback makes the call for another model (`APICall.for_model`) and ``extra_body``
is merged into the payload; no body is ever parsed back.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from aigateway.errors import InvalidRequestError, Violation

if TYPE_CHECKING:
    from aigateway._call.trace import CallTrace
    from aigateway.types.chat_params import RequestOptions

T = TypeVar("T")

__all__ = ["APICall", "encode_json"]

_NO_OPTIONS: RequestOptions = {}


def encode_json(payload: Mapping[str, Any], field_name: str = "(body)") -> bytes:
    """A JSON body: compact, UTF-8 as it is. A value JSON cannot hold (an object of another
    type, NaN, an infinity) is an `InvalidRequestError` naming ``field_name``, before anything
    is sent."""
    try:
        text = json.dumps(payload, allow_nan=False, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise InvalidRequestError(
            [Violation(field_name, "(not shown)", f"must be JSON-serialisable ({exc})")]
        ) from None
    return text.encode()


@dataclass(frozen=True, slots=True)
class APICall(Generic[T]):
    """One API call as a resource describes it."""

    method: str
    path: str
    """Relative to the base URL, without a leading slash (``chat/completions``); or an absolute
    URL (a file to fetch), which gets no ``Authorization`` header unless it is on the gateway's
    own host."""
    parse: Callable[[bytes], T]
    """Bytes of a 2xx reply to the typed result (e.g. ``Model.model_validate_json``)."""
    payload: Mapping[str, Any] | None = None
    """The JSON object the call sends, as checked (plain JSON values); None: no body."""
    body: bytes | None = None
    """The payload encoded: made from it (`encode_json`) when not given; a resource with a
    faster encoder of the same payload (a pydantic adapter's ``dump_json``) passes its own."""
    model: str | None = None
    """The model the call is for: the payload's ``model`` when not given."""
    options: RequestOptions = field(default_factory=lambda: _NO_OPTIONS)
    stream: bool = False
    """When true, ``parse`` is applied to each event's data and a Stream is returned."""
    raw: bool = False
    """When true, a `RawResponse` is returned instead of the parsed result."""
    streamed: bool = False
    """When true, the 2xx reply is handed back unread (``with_streaming_response``)."""
    websocket: bool = False
    """When true, the call streams over the WebSocket endpoint instead of HTTP."""
    side_effect: bool = False
    """The call acts on the world (sends an email, moves money, writes data): it is retried
    only when it carries an idempotency key, so a retry cannot repeat the act."""
    trace: CallTrace | None = None
    """The observer's record of this call (``Client(tracing=...)``); None when off."""
    save_to: Any = None
    """A file download's open file: the 2xx body is written there as it arrives, and the
    result is the number of bytes written (``parse`` is not used)."""
    max_bytes: int | None = None
    """The most bytes a download's body may hold, decompressed (`DEFAULT_MAX_DOWNLOAD_BYTES`
    when None); any other body is held to the client's ``max_response_bytes``."""

    def __post_init__(self) -> None:
        payload = self.payload
        if payload is None:
            return
        if self.body is None:
            object.__setattr__(self, "body", encode_json(payload))
        if self.model is None:
            model = payload.get("model")
            if isinstance(model, str):
                object.__setattr__(self, "model", model)

    def for_model(self, model: str) -> APICall[T]:
        """The same call for another model (a fallback): its payload's ``model`` replaced."""
        return replace(
            self, payload={**(self.payload or {}), "model": model}, body=None, model=model
        )
