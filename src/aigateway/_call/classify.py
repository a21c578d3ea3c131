"""What arrived, as our errors: every reply the gateway refused and every failure of the
transport becomes one of our exceptions here.

Every public call raises only `AIGatewayError` subclasses: a non-2xx reply (`status_error`),
an ``{"error": {...}}`` object inside a stream or a WebSocket frame (`error_event`), a
WebSocket handshake refused with a status, a failure of the transport (`request_failed`), a
body that cannot be decoded, and a 2xx body of the wrong shape (`parse_body`) are classified
here. The errors of limits the client keeps itself are made where each limit is kept: a
body's size (`aigateway._http.body`), a stream's events and time limits
(`aigateway._streams`), the call's deadline (`aigateway._call.timeouts`). JSON of any nesting
depth is read safely: a body nested too deep to parse is treated as text, never a
``RecursionError``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TypeVar

from aigateway._stacks import DEFAULT_STACK, failure_kind, get, stack_of
from aigateway.errors import (
    APIConnectionError,
    APIError,
    APIResponseValidationError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    InsufficientCreditsError,
    InternalServerError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ServiceUnavailableError,
    UnprocessableEntityError,
    body_text,
    snippet,
)

if TYPE_CHECKING:
    from aigateway._stacks import Request, Response

T = TypeVar("T")

__all__ = [
    "error_event",
    "looks_like_sse",
    "not_an_event_stream",
    "other_loop_error",
    "parse_body",
    "read_json",
    "request_failed",
    "status_error",
]

_ERROR_TYPE_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "insufficient_credits": 402,
    "insufficient_balance": 402,
    "not_found_error": 404,
    "rate_limit_error": 429,
    "rate_limit_exceeded": 429,
    "service_unavailable": 503,
}
"""The status an error object inside a stream stands for, by its type (500 when unknown)."""

_STATUS_CLASSES: dict[int, type[APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    402: InsufficientCreditsError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: UnprocessableEntityError,
    429: RateLimitError,
    503: ServiceUnavailableError,
}
"""The class of each status that has one: other 5xx are `InternalServerError`, the rest
`APIStatusError`."""
_CREDIT_ERROR_CODES = frozenset(
    {"insufficient_credits", "insufficient_balance", "insufficient_quota"}
)
"""Error codes that mean the credits ran out, whatever the status (some servers send 429)."""


def status_error_class(status_code: int, code: str | None) -> type[APIStatusError]:
    """The exception class for a status and an error code (the code wins for credits)."""
    if code in _CREDIT_ERROR_CODES:
        return InsufficientCreditsError
    cls = _STATUS_CLASSES.get(status_code)
    if cls is not None:
        return cls
    if status_code >= 500:
        return InternalServerError
    return APIStatusError


def read_json(raw: bytes | str) -> object | None:
    """The JSON value of ``raw``, or None when it is not JSON (or nested too deep to parse)."""
    try:
        return json.loads(raw)  # type: ignore[no-any-return]
    except (ValueError, RecursionError):
        return None


def _text_or_none(value: object) -> str | None:
    return None if value is None else str(value)


def status_error(response: Response, attempts: int = 1) -> APIStatusError:
    """The typed error of a non-2xx reply whose body has been read: the class by status and
    error code, the message from the error body, else what arrived (a redirect names where
    it points; a non-JSON body shows its content type and first characters)."""
    text = body_text(response)
    body = read_json(text) if text else None
    error = body.get("error") if isinstance(body, dict) else None
    error_type = code = None
    if isinstance(error, dict):
        message = str(error.get("message") or response.reason_phrase)
        error_type = _text_or_none(error.get("type"))
        code = _text_or_none(error.get("code"))
    elif isinstance(error, str):
        message = error
    elif response.is_redirect or 300 <= response.status_code < 400:
        location = response.headers.get("location", "(no Location header)")
        message = (
            f"the gateway redirected to {location}; redirects are not followed "
            "(check base_url: is it the gateway's address, with https:// if it uses TLS?)"
        )
    elif body is not None:
        message = f"{response.reason_phrase}: {snippet(text)}"
    else:
        content_type = response.headers.get("content-type", "unknown content type")
        shown = snippet(text) if text else "(empty body)"
        message = f"{response.reason_phrase} (non-JSON reply, {content_type}): {shown}"
    cls = status_error_class(response.status_code, code)
    return cls(
        message, response=response, body=body, error_type=error_type, code=code, attempts=attempts
    )


def error_event(
    raw: bytes | str, request: Request, headers: Mapping[str, str] | None = None
) -> APIStatusError | None:
    """The API error an ``{"error": {...}}`` object inside a stream stands for, or None when
    ``raw`` is not such an object. The status comes from ``error.status`` when the server sent
    it, else from the error type (500 when unknown); the code wins for credits."""
    body = read_json(raw)
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return None
    status = error.get("status")
    if not isinstance(status, int) or isinstance(status, bool) or not 400 <= status <= 599:
        status = _ERROR_TYPE_STATUS.get(str(error.get("type")), 500)
    content = raw.encode() if isinstance(raw, str) else raw
    stack = stack_of(request) or get(DEFAULT_STACK)
    replied = stack.Headers(headers)
    replied.pop("content-encoding", None)  # the event is already decoded: no gzip to undo
    response = stack.Response(status, content=content, headers=replied, request=request)  # type: ignore[arg-type]
    return status_error(response)


def request_failed(exc: Exception, request: Request) -> APIError:
    """Our error for an exception from sending a request or reading its reply: timeouts and
    lost connections (retried) apart from a body that cannot be decoded and anything else,
    whichever HTTP stack raised it."""
    if isinstance(exc, APIError):
        return exc
    kind = failure_kind(exc)
    if kind == "timeout":
        error: APIError = APITimeoutError(
            f"{request.method} {request.url.path} timed out: {exc!r}", request=request
        )
    elif kind == "connection":
        error = APIConnectionError(
            f"{request.method} {request.url.path} failed: {exc!r}", request=request
        )
    elif kind == "decoding":
        error = APIResponseValidationError(
            f"the reply to {request.method} {request.url.path} could not be decoded "
            f"as its Content-Encoding says ({exc})",
            body=b"",
            request=request,
        )
    elif isinstance(exc, RuntimeError) and _OTHER_LOOP.search(str(exc)):
        error = other_loop_error(request, str(exc))
    elif isinstance(exc, RuntimeError) and _CLOSED.search(str(exc)):
        error = APIError(
            f"{request.method} {request.url.path} was not sent: the http client is closed "
            "(a client used after close(), or an http_client= its owner closed)",
            request=request,
        )
    else:
        error = APIError(f"{request.method} {request.url.path} failed: {exc!r}", request=request)
    error.__cause__ = exc
    return error


_OTHER_LOOP = re.compile(
    r"Event loop is closed|bound to a different event loop|attached to a different loop"
)
"""What asyncio raises when an object of one event loop is used from another (or after it)."""
_CLOSED = re.compile(r"client has been closed")
"""What httpx and httpx2 raise, before sending, for a request on a closed client."""


def other_loop_error(request: Request, why: str) -> APIError:
    """The error of a request through an ``http_client=`` given to an async client from an
    event loop other than its connections' (``why``: what showed it)."""
    return APIError(
        f"{request.method} {request.url.path} failed: the http client's connections belong "
        f"to another event loop ({why}); an async HTTP client cannot move between event "
        "loops: make it inside the loop that uses it, or leave out http_client= (the "
        "client's own pool is made per event loop)",
        request=request,
    )


def parse_body(parse: Callable[[bytes], T], response: Response, body: bytes | None = None) -> T:
    """Apply ``parse`` to a reply's bytes (``body``, read already, else its ``content``); a
    reply of the wrong shape becomes a typed error."""
    if body is None:
        body = response.content
    try:
        return parse(body)
    except (ValueError, RecursionError) as exc:  # pydantic's errors are ValueErrors
        raise APIResponseValidationError(
            f"the reply to {response.request.method} {response.request.url.path} "
            f"is not of the expected shape ({_first_line(exc)})",
            body=body,
            status_code=response.status_code,
            headers=response.headers,
            request=response.request,
        ) from exc


def _first_line(exc: BaseException) -> str:
    lines = str(exc).splitlines()
    return "; ".join(line.strip() for line in lines[:3]) if lines else type(exc).__name__


def not_an_event_stream(response: Response, head: bytes) -> APIResponseValidationError:
    """The error for a reply to a stream request that is not an event stream (an HTML page
    from a proxy, a JSON body): it shows the content type and the first bytes."""
    content_type = response.headers.get("content-type", "no content type")
    return APIResponseValidationError(
        f"expected an event stream (text/event-stream) in reply to "
        f"{response.request.method} {response.request.url.path}, got {content_type}",
        body=head,
        status_code=response.status_code,
        headers=response.headers,
        request=response.request,
    )


_SSE_STARTS = (b"data:", b":", b"event:", b"id:", b"retry:", b"\n", b"\r", b"\xef\xbb\xbf")


def looks_like_sse(response: Response, head: bytes) -> bool:
    """Whether a reply to a stream request is an event stream: by its content type, or, when
    that is absent or wrong, by its first bytes (some servers label streams ``text/plain``)."""
    content_type = response.headers.get("content-type", "")
    if not content_type or "event-stream" in content_type:
        return True
    return head.lstrip(b" \t").startswith(_SSE_STARTS)
