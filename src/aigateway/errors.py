"""The exceptions `aigateway` raises.

Every exception derives from `AIGatewayError`, so one ``except`` catches them all::

    AIGatewayError
    ├── ConfigurationError          bad client settings (missing key, malformed base URL); also a ValueError
    │   └── HTTPClientTypeError     ``http_client=`` or ``transport=`` of no HTTP stack, or of the wrong kind; also a TypeError
    ├── InvalidRequestError         arguments rejected before anything was sent; also a ValueError
    ├── BudgetExceededError         the client's credit budget is spent; nothing was sent
    ├── SharedStateError            the shared state (``shared_state=``, e.g. Redis) failed; nothing was sent
    ├── MaxRoundsExceededError      ``run_tools``: the model still asked for tools after ``max_rounds`` calls
    ├── RecordedError               a batch item's error, as its checkpoint file recorded it
    ├── APIError                    something happened on the way to or from the gateway
    │   ├── APIConnectionError      no reply: connection refused, reset, dropped
    │   │   └── APITimeoutError     no reply in time
    │   ├── APIResponseValidationError   a reply that is not what the API promises (HTML, truncated JSON, missing fields)
    │   │   └── StructuredOutputError   ``parse``: the content is not JSON of the requested type
    │   ├── LengthFinishReasonError     ``parse``: the reply was cut by the token limit
    │   ├── ResponseTooLargeError   a reply (or one stream event) over its size limit, counted decompressed
    │   ├── IncompleteStreamError   a stream that ended before ``data: [DONE]``
    │   │   ├── StreamConnectionError   the connection failed mid-stream (also an APIConnectionError)
    │   │   └── StreamTimeoutError      the stream stalled or ran past its deadline (also an APITimeoutError)
    │   └── APIStatusError          a non-2xx reply; a generic one for statuses without a class of their own
    │       ├── BadRequestError            400
    │       ├── AuthenticationError        401
    │       ├── InsufficientCreditsError   402 (or an error code saying the credits ran out)
    │       ├── PermissionDeniedError      403 (e.g. a quota of the account is reached)
    │       ├── NotFoundError              404
    │       ├── ConflictError              409 (e.g. an idempotency key reused or still in use)
    │       ├── UnprocessableEntityError   422
    │       ├── RateLimitError             429, with the parsed ``X-RateLimit-*`` values and ``seconds_to_wait``
    │       └── InternalServerError        500 and other 5xx
    │           └── ServiceUnavailableError    503
    ├── InsecureBaseURLWarning      also a ``UserWarning``: emitted once per host for a plain ``http://`` base address on the network
    ├── LowBalanceWarning           also a ``UserWarning``: emitted once per client when a reply says the balance is below 10 credits
    └── SharedStateWarning          also a ``UserWarning``: emitted once per state object when it is unreachable and this process uses its own limits

The ``...Warning`` classes are emitted with `warnings.warn`, not raised.

Errors carry what arrived (status, headers, request id, parsed error body, raw text), never the
API key, and pickle (across processes) with the request's ``Authorization`` header redacted.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from aigateway._stacks import DEFAULT_STACK, get, loaded_errors, stack_of
from aigateway.types.rate_limits import (
    UNIX_MILLISECONDS_FROM,
    UNIX_SECONDS_FROM,
    RateLimitInfo,
    server_wait,
)

if TYPE_CHECKING:
    from aigateway._stacks import Headers, Request, Response
    from aigateway.types.chat import ChatCompletion
    from aigateway.types.error_body import ErrorBody
    from aigateway.types.fallbacks import FallbackInfo

__all__ = [
    "AIGatewayError",
    "APIConnectionError",
    "APIError",
    "APIResponseValidationError",
    "APIStatusError",
    "APITimeoutError",
    "AuthenticationError",
    "BadRequestError",
    "BudgetExceededError",
    "ConfigurationError",
    "HTTPClientTypeError",
    "ConflictError",
    "IncompleteStreamError",
    "InsecureBaseURLWarning",
    "InsufficientCreditsError",
    "InternalServerError",
    "InvalidRequestError",
    "LengthFinishReasonError",
    "LowBalanceWarning",
    "MaxRoundsExceededError",
    "NotFoundError",
    "PermissionDeniedError",
    "RateLimitError",
    "RateLimitInfo",
    "RecordedError",
    "ResponseTooLargeError",
    "ServiceUnavailableError",
    "SharedStateError",
    "SharedStateWarning",
    "StreamConnectionError",
    "StreamTimeoutError",
    "StructuredOutputError",
    "UnprocessableEntityError",
    "Violation",
]

SNIPPET_CHARS = 500


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    """The start of a body, on one line, for an error message."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "…"


_TEXT_FAILURES = (LookupError, ValueError)
"""What decoding a body by its charset may raise (an unknown charset, bytes not in it)."""


def body_text(response: Response) -> str:
    """A reply's body as text, never raising: by its charset, else as UTF-8 with replacement
    characters (a charset Python does not know, bytes that are not in it); "" when unread."""
    try:
        return response.text
    except loaded_errors().read + _TEXT_FAILURES:
        pass
    try:
        return response.content.decode("utf-8", "replace")
    except loaded_errors().read:
        return ""


def _headers(headers: Mapping[str, str] | None) -> Headers:
    """``headers`` as a header object (names case-insensitive), of their own HTTP stack when
    they are one (a reply's), else of the default stack."""
    return (stack_of(headers) or get(DEFAULT_STACK)).Headers(headers)


class AIGatewayError(Exception):
    """Base class of every exception raised by `aigateway`.

    Errors pickle (``ProcessPoolExecutor`` workers send them back this way) with the request's
    credentials redacted and what cannot be pickled left out.
    """

    def __reduce__(self) -> tuple[Any, ...]:
        from aigateway._pickling import picklable, restore_error

        state = {name: picklable(value) for name, value in self.__dict__.items()}
        return (restore_error, (type(self), self.args, state))

    def __repr__(self) -> str:
        from aigateway._display import error_repr, guarded

        return guarded(error_repr)(self)

    def _repr_html_(self) -> str | None:
        from aigateway._display import error_html, guarded

        return guarded(error_html)(self)


class ConfigurationError(AIGatewayError, ValueError):
    """The client was given settings it cannot work with (raised at construction)."""


class HTTPClientTypeError(ConfigurationError, TypeError):
    """``http_client=`` or ``transport=`` is not what the client takes: the message names
    the types it accepts (an ``httpx.Client`` or an ``httpx2.Client`` for a `Client`, the
    ``AsyncClient`` of either for an `AsyncClient`; their transports likewise)."""


class BudgetExceededError(AIGatewayError):
    """The client's credit budget (``max_credits``) is spent; the call was not sent."""

    max_credits: float = 0.0
    spent: float = 0.0


class SharedStateError(AIGatewayError):
    """The shared state (``shared_state=``, e.g. Redis) could not be reached or answered
    wrongly; with ``on_unavailable="raise"`` the call was not sent."""


class SharedStateWarning(AIGatewayError, UserWarning):
    """The shared state is unreachable and ``on_unavailable="local"``: this process falls back
    to its own limits (warned once per state object)."""


@dataclass(frozen=True)
class Violation:
    """One argument that broke a rule: where it is, what it was, what is allowed."""

    field: str
    value: Any
    problem: str

    def __str__(self) -> str:
        return f"{self.field}={self.value!r}: {self.problem}"


class InvalidRequestError(AIGatewayError, ValueError):
    """Arguments that break the API's rules; raised before anything is sent.

    ``violations`` lists every offending field with its value and what is allowed.
    """

    def __init__(self, violations: Sequence[Violation]) -> None:
        self.violations = tuple(violations)
        lines = "; ".join(str(v) for v in self.violations)
        super().__init__(f"invalid request, nothing was sent: {lines}")

    @property
    def field(self) -> str:
        """The first offending field (dotted path, e.g. ``messages.0.role``)."""
        return self.violations[0].field


class MaxRoundsExceededError(AIGatewayError):
    """``run_tools``: the model still asked for tools after ``max_rounds`` calls.

    ``messages`` is the conversation up to the last tool results (it can be passed to another
    run to go on); ``completion`` is the last reply, whose tool calls were not run.
    """

    def __init__(self, rounds: int, completion: ChatCompletion, messages: list[Any]) -> None:
        super().__init__(
            f"the model still asked for tools after {rounds} rounds (max_rounds={rounds}); "
            "the conversation so far is in .messages"
        )
        self.rounds = rounds
        self.completion = completion
        self.messages = messages


class RecordedError(AIGatewayError):
    """A batch item's error as its checkpoint file recorded it: the original class name
    (``kind``), message and HTTP status (None when the error had none)."""

    def __init__(self, kind: str, message: str, status_code: int | None = None) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.status_code = status_code


class APIError(AIGatewayError):
    """Something went wrong talking to the gateway."""

    request: Request | None
    fallback: FallbackInfo | None = None  # with ``fallback_models``: every model tried

    def __init__(self, message: str, *, request: Request | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.request = request


class APIConnectionError(APIError):
    """The request got no reply: the connection failed, was refused or was dropped."""


class APITimeoutError(APIConnectionError):
    """The request got no reply in time.

    ``limit_name`` names the limit that ran out: ``"timeout"`` (one connect, read, write or
    pool wait of the ``timeout`` setting), ``"deadline"`` (the whole call's), or for a stream
    ``"stream_first_event_timeout"`` / ``"stream_idle_timeout"``; ``limit`` is its value in
    seconds (None for ``timeout``). An error of the deadline is never retried: the call's time
    is up."""

    limit_name: str = "timeout"
    limit: float | None = None


class APIResponseValidationError(APIError):
    """A reply arrived but is not of the shape the API promises.

    ``body`` holds the raw bytes that arrived, ``status_code`` and ``headers`` the rest.
    """

    def __init__(
        self,
        message: str,
        *,
        body: bytes,
        status_code: int | None = None,
        headers: Mapping[str, str] | None = None,
        request: Request | None = None,
    ) -> None:
        text = body.decode("utf-8", errors="replace")
        super().__init__(f"{message}; received: {snippet(text) or '(empty body)'}", request=request)
        self.body = body
        self.text = text
        self.status_code = status_code
        self.headers = _headers(headers)


class StructuredOutputError(APIResponseValidationError):
    """``parse``: a reply's content (or a strict tool's arguments) is not JSON of the requested
    type; ``text`` is what arrived, ``errors`` pydantic's list of what did not validate."""

    def __init__(
        self, message: str, *, body: bytes, errors: Sequence[Any] = (), **rest: Any
    ) -> None:
        super().__init__(message, body=body, **rest)
        self.errors = list(errors)


class LengthFinishReasonError(APIError):
    """``parse``: a reply stopped at the token limit (``finish_reason`` ``length``), so its JSON
    is incomplete; ``completion`` holds the reply. Raise ``max_completion_tokens``."""

    def __init__(self, message: str, *, completion: Any = None, **rest: Any) -> None:
        super().__init__(message, **rest)
        self.completion = completion


class ResponseTooLargeError(APIError):
    """A reply's body went over a size limit, counted after decompression, so it was not read
    to its end: the connection was closed instead (a compressed "bomb" of a few kilobytes
    cannot fill memory).

    ``limit`` is the limit in bytes and ``limit_name`` the setting that holds it
    (``max_response_bytes`` of the client for a reply read into memory, ``max_bytes`` of a
    file's ``save()``, ``max_event_size`` for one event of a stream); ``received`` counts the
    decompressed bytes that had arrived, ``status_code`` and ``headers`` are the reply's.
    """

    def __init__(
        self,
        message: str,
        *,
        limit: int,
        limit_name: str,
        received: int,
        status_code: int | None = None,
        headers: Mapping[str, str] | None = None,
        request: Request | None = None,
    ) -> None:
        super().__init__(message, request=request)
        self.limit = limit
        self.limit_name = limit_name
        self.received = received
        self.status_code = status_code
        self.headers = _headers(headers)


class IncompleteStreamError(APIError):
    """A stream ended (or was cut) before the gateway said it was done (``data: [DONE]``).

    Every chunk before the cut was already handed to the caller, so the error does not hold
    them all (a long stream would need unbounded memory); it carries ``received``, the number
    of chunks received, ``chunks``, the last few of them (at most 16), and ``partial``, the
    completion rebuilt so far when the stream was read through an accumulator
    (``client.chat.completions.stream(...)``), else None. A connection cut mid-stream raises
    this error too, with the transport error as ``__cause__``.
    """

    def __init__(
        self,
        message: str,
        *,
        chunks: Sequence[Any] = (),
        received: int | None = None,
        partial: Any = None,
        request: Request | None = None,
    ) -> None:
        super().__init__(message, request=request)
        self.chunks = list(chunks)
        self.received = len(self.chunks) if received is None else received
        self.partial = partial


class StreamConnectionError(IncompleteStreamError, APIConnectionError):
    """The connection failed mid-stream, after data had reached the caller (not retried).
    Also an `APIConnectionError`, so one ``except`` catches lost connections wherever they happen."""


class StreamTimeoutError(IncompleteStreamError, APITimeoutError):
    """A stream stalled: no event within the idle timeout (keep-alive comments do not count),
    or the whole stream went over its deadline. Also an `APITimeoutError`."""


class APIStatusError(APIError):
    """The gateway answered with a non-2xx status.

    Attributes: ``status_code``, ``headers``, ``request_id``, ``body`` (parsed JSON or None),
    ``error_body`` (the body as an `ErrorBody`, None when it is not one), ``error_type``/``code``/``param`` (from ``{"error": {...}}`` when present; ``param``
    names the offending parameter), ``text`` (raw body) and ``rate_limit`` (the
    ``X-RateLimit-*`` values, if sent).
    """

    response: Response

    def __init__(
        self,
        message: str,
        *,
        response: Response,
        body: object | None,
        error_type: str | None = None,
        code: str | None = None,
        param: str | None = None,
        attempts: int = 1,
    ) -> None:
        super().__init__(message, request=response.request)
        self.response = response
        self.status_code = response.status_code
        self.headers: Headers = response.headers
        self.request_id: str | None = response.headers.get("x-request-id")
        self.body = body
        self.text = body_text(response)
        self.error_type = error_type
        self.code = code
        self.param = _param_of(body) if param is None else param
        self.attempts = attempts
        self.rate_limit = RateLimitInfo.from_headers(response.headers)
        self.retry_after: float | None = None
        """The wait the reply asked for, in seconds (``retry-after-ms``, ``Retry-After``, or a
        spent window's ``X-RateLimit-Reset``), whether the call was retried or not; None when
        it asked for none. A wait beyond the retry policy's cap is not slept: the error is
        raised at once."""

    @property
    def error_body(self) -> ErrorBody | None:
        """The body as an `ErrorBody` (unknown fields kept); None when it is not the API's
        error shape (an HTML page from a proxy, say), whose raw text stays in ``text``."""
        from pydantic import ValidationError

        from aigateway.types.error_body import ErrorBody

        if not isinstance(self.body, dict):
            return None
        try:
            return ErrorBody.model_validate(self.body)
        except ValidationError:
            return None

    def __str__(self) -> str:
        parts = [f"HTTP {self.status_code}"]
        if self.code:
            parts.append(f"code={self.code}")
        if self.request_id:
            parts.append(f"request_id={self.request_id}")
        if self.attempts > 1:
            parts.append(f"attempts={self.attempts}")
        if self.retry_after is not None:
            not_retried = "; not retried" if self.attempts == 1 else ""
            parts.append(
                f"the gateway asks to wait {self.retry_after:.0f} s{self._reset_note()}"
                + not_retried
            )
        return f"{self.message} ({', '.join(parts)})"

    def _reset_note(self) -> str:
        reset = self.rate_limit.reset if self.rate_limit else None
        if reset is None or reset < UNIX_SECONDS_FROM:
            return ""
        unit = " ms" if reset >= UNIX_MILLISECONDS_FROM else ""
        return f", resets at Unix time {reset}{unit}"


def _param_of(body: object) -> str | None:
    """``error.param`` of an error body, or None."""
    error = body.get("error") if isinstance(body, dict) else None
    param = error.get("param") if isinstance(error, dict) else None
    return None if param is None else str(param)


class BadRequestError(APIStatusError):
    """400: the gateway rejected the parameters or the request format."""


class AuthenticationError(APIStatusError):
    """401: the API key is missing or invalid."""


class InsufficientCreditsError(APIStatusError):
    """402 (or a credits error code): the account has too few credits for this call.

    ``remaining_credits`` holds the balance when the gateway said it.
    """

    @property
    def remaining_credits(self) -> float | None:
        body = self.body
        if isinstance(body, dict):
            for holder in (body, body.get("error")):
                if isinstance(holder, dict):
                    value = holder.get("_remaining_credits", holder.get("remaining_credits"))
                    if isinstance(value, (int, float)) and not isinstance(value, bool):
                        return float(value)
        return None


class PermissionDeniedError(APIStatusError):
    """403: the API key is valid but may not do this (for example, a quota of the account,
    such as its storage, is reached)."""


class NotFoundError(APIStatusError):
    """404: the model (or path) does not exist."""


class ConflictError(APIStatusError):
    """409: the request conflicts with another, e.g. an idempotency key reused with another
    request, or still in use by one being answered; retried, as the conflict may clear."""


class UnprocessableEntityError(APIStatusError):
    """422: the request was well formed but the gateway could not process what it asked for."""


class RateLimitError(APIStatusError):
    """429: too many requests for this key. ``rate_limit`` holds the parsed headers;
    ``seconds_to_wait`` says how long to wait before trying again, never None."""

    default_wait: ClassVar[float] = 60.0
    """``seconds_to_wait`` when the reply gave neither a wait nor a window's reset: the length
    of a per-minute window, the shortest the gateway's plans count requests in."""

    @property
    def seconds_to_wait(self) -> float:
        """Seconds to wait before trying again: the wait the reply asked for (``retry_after``:
        ``retry-after-ms``, ``Retry-After`` or a spent window's ``X-RateLimit-Reset``), else
        the time until ``rate_limit.reset``, else `default_wait`."""
        if self.retry_after is not None:
            return self.retry_after
        now = time.time()
        wait = server_wait(self.headers, now, status=self.status_code)
        if wait is None and self.rate_limit is not None:
            wait = self.rate_limit.seconds_until_reset(now)
        return self.default_wait if wait is None else wait


class InternalServerError(APIStatusError):
    """500 or another 5xx: the gateway failed; retrying later may succeed."""


class ServiceUnavailableError(InternalServerError):
    """503: the service is temporarily unavailable."""


class InsecureBaseURLWarning(AIGatewayError, UserWarning):
    """The base URL is plain ``http://`` to a host on the network, so the API key would travel
    unencrypted; emitted once per host. Use ``https://`` (loopback addresses, ``localhost`` and
    names reserved for tests and local networks do not warn)."""


class LowBalanceWarning(AIGatewayError, UserWarning):
    """A reply said the balance is below 10 credits (``_balance_warning``); emitted once per
    client with `warnings.warn`, so notebooks and test runs notice before calls start failing."""
