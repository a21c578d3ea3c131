"""Sans-io request and reply values of the mock gateway, and helpers that build replies.

The gateway's logic works on plain values, not on sockets or on a particular HTTP library:
a `MockRequest` goes in, a `MockResponse` comes out. The in-process httpx transport
(`aigateway.testing._transport`) converts httpx objects to and from these values, and a server
(an ASGI app, later) can do the same, so the gateway's behaviour is written once, the way h11
keeps protocol logic apart from I/O.

A reply body is either ``bytes`` (a whole reply) or an iterator of ``bytes`` (a streamed
reply, one server-sent event per item). Error bodies follow the spec (section 2.5)::

    {"error": {"message": "...", "type": "...", "code": "...", "param": "..." | null}}

``param`` (the offending request field, as in the OpenAI convention) is added to the spec's
three fields; a 402 also carries ``_remaining_credits`` inside ``error``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from ..types.shared import ErrorBody, ErrorObject

__all__ = [
    "JSON_CONTENT_TYPE",
    "JSON_MEDIA_TYPES",
    "SSE_CONTENT_TYPE",
    "SSE_DONE",
    "MockRequest",
    "MockResponse",
    "dumps",
    "error_body",
    "error_response",
    "declared_length",
    "is_json_content_type",
    "json_loads_bounded",
    "json_response",
    "sse_event",
    "sse_response",
]

JSON_CONTENT_TYPE = "application/json"
SSE_CONTENT_TYPE = "text/event-stream; charset=utf-8"
SSE_DONE = b"data: [DONE]\n\n"


def dumps(obj: object) -> bytes:
    """Compact UTF-8 JSON, keys in insertion order (so equal inputs give equal bytes)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


@dataclass(frozen=True)
class MockRequest:
    """One HTTP request as the gateway sees it.

    ``path`` is the path as sent, percent-encoding kept and without the query (``query`` holds
    the raw query string). Header names are stored lower-case, whatever case they arrive in.
    """

    method: str
    path: str
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    query: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "method", self.method.upper())
        object.__setattr__(self, "headers", {k.lower(): v for k, v in self.headers.items()})

    @classmethod
    def build(
        cls,
        method: str,
        path: str,
        *,
        json_body: object = None,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> MockRequest:
        """A request for tests that call `MockGateway.handle` directly: ``json_body`` is
        encoded as the body, ``api_key`` becomes ``Authorization: Bearer <key>``, and a
        ``?query`` in ``path`` is split off."""
        all_headers = dict(headers or {})
        body = b""
        if json_body is not None:
            body = dumps(json_body)
            all_headers.setdefault("content-type", JSON_CONTENT_TYPE)
        if api_key is not None:
            all_headers["authorization"] = f"Bearer {api_key}"
        path, _, query = path.partition("?")
        return cls(method, path, all_headers, body, query)

    @property
    def bearer_key(self) -> str:
        """The key of an ``Authorization: Bearer <key>`` header ("" without one)."""
        scheme, _, key = self.headers.get("authorization", "").strip().partition(" ")
        return key.strip() if scheme.lower() == "bearer" else ""

    @property
    def params(self) -> dict[str, str]:
        """The query string as a dict (the last value wins for a repeated name)."""
        return dict(parse_qsl(self.query, keep_blank_values=True))

    def json(self) -> Any:
        """The body decoded as JSON (raises ``ValueError`` when it is not JSON, or nested
        deeper than `MAX_JSON_DEPTH`)."""
        return json_loads_bounded(self.body)


def declared_length(headers: Mapping[str, str]) -> int:
    """The ``Content-Length`` of lower-case ``headers`` (0 when absent or not a number)."""
    value = headers.get("content-length", "").strip()
    if not (value.isascii() and value.isdigit()):
        return 0
    return int(value) if len(value) <= 18 else 10**18


JSON_MEDIA_TYPES = "application/json or application/<name>+json (any charset)"
"""What a JSON route accepts as ``Content-Type``, as a 415 says it."""


def is_json_content_type(value: str) -> bool:
    """Whether a ``Content-Type`` header names JSON: ``application/json`` or
    ``application/<name>+json``, with any parameters (``; charset=utf-8``)."""
    media_type = value.partition(";")[0].strip().lower()
    kind, _, subtype = media_type.partition("/")
    return kind == "application" and (subtype == "json" or subtype.endswith("+json"))


MAX_JSON_DEPTH = 64
"""How deep a request's JSON may nest; deeper is a 400, never a ``RecursionError``."""


def json_loads_bounded(body: bytes | str) -> Any:
    """``json.loads``, refusing (``ValueError``) a value nested deeper than `MAX_JSON_DEPTH`."""
    try:
        value = json.loads(body)
    except RecursionError:
        raise ValueError(f"nested deeper than {MAX_JSON_DEPTH} levels") from None
    level: list[Any] = [value]
    for depth in range(MAX_JSON_DEPTH + 1):
        below = [
            item
            for node in level
            if isinstance(node, dict | list)
            for item in (node.values() if isinstance(node, dict) else node)
            if isinstance(item, dict | list)
        ]
        if not below:
            return value
        if depth == MAX_JSON_DEPTH - 1:
            raise ValueError(f"nested deeper than {MAX_JSON_DEPTH} levels")
        level = below
    return value


@dataclass
class MockResponse:
    """One reply: a status, headers (lower-case names) and a body.

    The body is ``bytes`` for a whole reply, or an iterator of ``bytes`` for a streamed one.
    """

    status: int
    headers: dict[str, str]
    body: bytes | Iterator[bytes]

    @property
    def is_stream(self) -> bool:
        """True when the body is an iterator (a streamed reply)."""
        return not isinstance(self.body, bytes)

    def json(self) -> Any:
        """The body decoded as JSON; only for whole (not streamed) replies."""
        if not isinstance(self.body, bytes):
            raise TypeError("a streamed reply has no single JSON body; iterate `body` instead")
        return json.loads(self.body)


def json_response(
    status: int, obj: object, headers: Mapping[str, str] | None = None
) -> MockResponse:
    """A JSON reply."""
    return MockResponse(status, {"content-type": JSON_CONTENT_TYPE, **(headers or {})}, dumps(obj))


def error_body(
    message: str, type: str, code: str, *, param: str | None = None, **extra: object
) -> dict[str, Any]:
    """The spec's Error body (`ErrorBody`, the model the client parses it with), ``param``
    added, plus any ``extra`` members inside ``error``."""
    error = ErrorObject(message=message, type=type, code=code, param=param, **extra)
    return ErrorBody(error=error).model_dump()


def error_response(
    status: int,
    message: str,
    type: str,
    code: str,
    *,
    param: str | None = None,
    headers: Mapping[str, str] | None = None,
    **extra: object,
) -> MockResponse:
    """A JSON reply holding an Error body."""
    return json_response(status, error_body(message, type, code, param=param, **extra), headers)


def sse_event(obj: object) -> bytes:
    """One server-sent event: ``data: <json>`` and a blank line."""
    return b"data: " + dumps(obj) + b"\n\n"


def sse_response(
    chunks: Iterable[object], headers: Mapping[str, str] | None = None
) -> MockResponse:
    """A streamed reply: one event per chunk, then ``data: [DONE]``."""
    events = [sse_event(chunk) for chunk in chunks]
    events.append(SSE_DONE)
    return MockResponse(
        200,
        {"content-type": SSE_CONTENT_TYPE, "cache-control": "no-cache", **(headers or {})},
        iter(events),
    )
