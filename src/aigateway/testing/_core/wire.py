"""Sans-io request and reply values of the mock gateway, and helpers that build replies.

The gateway's logic works on plain values, not on sockets or on a particular HTTP library:
a `MockRequest` goes in, a `MockResponse` comes out. The in-process transport for httpx and
httpx2 (`aigateway.testing._serving.inprocess`) and the ASGI app (`aigateway.testing._serving.asgi`)
convert what they carry to and from these values, so the gateway's behaviour is written once,
the way h11 keeps protocol logic apart from I/O.

A reply body is either ``bytes`` (a whole reply) or an iterator of ``bytes`` (a streamed
reply, one server-sent event per item). Error bodies are the API's::

    {"error": {"message": "...", "type": "...", "code": "...", "param": "..." | null}}

``param`` (the offending request field, as in the OpenAI convention) is added to the API's
three fields; a 402 also carries ``_remaining_credits`` inside ``error``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from aigateway.types.error_body import ErrorBody, ErrorObject

__all__ = [
    "INVALID",
    "JSON_CONTENT_TYPE",
    "JSON_MEDIA_TYPES",
    "SSE_CONTENT_TYPE",
    "SSE_DONE",
    "MockRequest",
    "MockResponse",
    "bearer_key",
    "close_body",
    "dumps",
    "error_body",
    "error_response",
    "shown",
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
INVALID = "invalid_request_error"
"""The error type of every 4xx that blames the request."""


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
    body_size: int = -1
    """The body's length as it arrived (``len(body)`` when not given). The request log keeps
    only the first bytes of a body: there, ``body_size`` can be larger (see `body_cut`)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "method", self.method.upper())
        object.__setattr__(self, "headers", {k.lower(): v for k, v in self.headers.items()})
        if self.body_size < 0:
            object.__setattr__(self, "body_size", len(self.body))

    @property
    def body_cut(self) -> bool:
        """True when ``body`` holds only the first bytes of the body (a logged request)."""
        return self.body_size > len(self.body)

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
        return bearer_key(self.headers)

    @property
    def params(self) -> dict[str, str]:
        """The query string as a dict (the last value wins for a repeated name)."""
        return dict(parse_qsl(self.query, keep_blank_values=True))

    def json(self) -> Any:
        """The body decoded as JSON (raises ``ValueError`` when it is not JSON, breaks a limit
        of `json_loads_bounded`, or was cut by the request log)."""
        if self.body_cut:
            raise ValueError(
                f"only the first {len(self.body)} of the body's {self.body_size} bytes were "
                "kept (MockGateway(max_logged_body_bytes=...) keeps more)"
            )
        return json_loads_bounded(self.body)


def bearer_key(headers: Mapping[str, str]) -> str:
    """The key of lower-case ``headers``' ``Authorization: Bearer <key>`` ("" without one)."""
    scheme, _, key = headers.get("authorization", "").strip().partition(" ")
    return key.strip() if scheme.lower() == "bearer" else ""


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
MAX_JSON_VALUES = 100_000
"""How many values (members and items) a request's JSON may hold; more is a 400. Parsed JSON
takes up to 20 times its size in memory (``{}`` is 2 bytes of JSON and 64 of dict), so the
count is checked on the bytes, before parsing."""
MAX_JSON_NUMBER_CHARS = 100
"""The longest number a request's JSON may hold, in characters; longer is a 400, checked
before the number is converted."""
_MARKS = b",:[{"
_NOT_MARK = bytes(sorted(set(range(256)) - set(_MARKS)))
_NOT_STRUCTURE = bytes(sorted(set(range(256)) - set(_MARKS + b'"')))
_SCAN_BYTES = 1024 * 1024


def json_loads_bounded(body: bytes | str) -> Any:
    """``json.loads``, refusing (``ValueError`` naming the limit) JSON nested deeper than
    `MAX_JSON_DEPTH`, holding more than `MAX_JSON_VALUES` values, a number longer than
    `MAX_JSON_NUMBER_CHARS` or out of a float's range, and ``NaN`` / ``Infinity`` (not JSON)."""
    raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    if _value_count(raw) > MAX_JSON_VALUES:
        raise ValueError(f"it holds more than {MAX_JSON_VALUES} values")
    try:
        value = json.loads(
            raw, parse_int=_bounded_int, parse_float=_bounded_float, parse_constant=_no_constant
        )
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


def _value_count(raw: bytes) -> int:
    """About how many values ``raw`` holds: its commas, colons and brackets outside strings.
    A value takes a byte at least, so a short body is not looked at. A long one is scanned a
    megabyte at a time (the GIL is let go between scans, so the server's event loop is not
    held up): its marks anywhere first, and only when they exceed the limit its structure,
    escapes taken out, then its strings."""
    if len(raw) <= MAX_JSON_VALUES:
        return 0
    if sum(len(chunk.translate(None, _NOT_MARK)) for chunk in _chunks(raw)) <= MAX_JSON_VALUES:
        return 0
    outside, in_string = 0, False
    for chunk in _chunks(raw):
        # escapes out, every " left delimits a string; marks and quotes kept
        structure = chunk.replace(b"\\\\", b"").replace(b'\\"', b"")
        pieces = structure.translate(None, _NOT_STRUCTURE).split(b'"')
        outside += len(b"".join(pieces[1 if in_string else 0 :: 2]))
        in_string ^= len(pieces) % 2 == 0
    return outside


def _chunks(raw: bytes) -> Iterator[bytes]:
    """``raw`` a megabyte at a time, never cut within an escape (after a backslash)."""
    start = 0
    while start < len(raw):
        end = start + _SCAN_BYTES
        while end < len(raw) and raw[end - 1] == 0x5C:  # a backslash escapes what follows
            end += 1
        yield raw[start:end]
        start = end


def _bounded_int(text: str) -> int:
    if len(text) > MAX_JSON_NUMBER_CHARS:
        raise ValueError(f"a number has more than {MAX_JSON_NUMBER_CHARS} characters")
    return int(text)


def _bounded_float(text: str) -> float:
    if len(text) > MAX_JSON_NUMBER_CHARS:
        raise ValueError(f"a number has more than {MAX_JSON_NUMBER_CHARS} characters")
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {text} is beyond a float's range")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (numbers are finite)")


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


def close_body(body: object) -> None:
    """Close a reply's streamed body (a generator, a paced body: anything with ``close``), so
    what it holds is let go even when it was not read to its end; other bodies need nothing."""
    close = getattr(body, "close", None)
    if callable(close):
        close()


def json_response(
    status: int, obj: object, headers: Mapping[str, str] | None = None
) -> MockResponse:
    """A JSON reply."""
    return MockResponse(status, {"content-type": JSON_CONTENT_TYPE, **(headers or {})}, dumps(obj))


MAX_ERROR_MESSAGE_CHARS = 2_000
"""The longest message an Error body holds."""


def shown(text: str, limit: int = 100) -> str:
    """``text`` quoted for a message, its first ``limit`` characters only (a request's value
    can be megabytes long)."""
    return repr(text[:limit]) + ("..." if len(text) > limit else "")


def error_body(
    message: str, type: str, code: str, *, param: str | None = None, **extra: object
) -> dict[str, Any]:
    """The API's Error body (`ErrorBody`, the model the client parses it with), ``param``
    added, plus any ``extra`` members inside ``error``; a message is cut at
    `MAX_ERROR_MESSAGE_CHARS` (it may quote what the request sent)."""
    if len(message) > MAX_ERROR_MESSAGE_CHARS:
        message = message[: MAX_ERROR_MESSAGE_CHARS - 1] + "\u2026"
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
