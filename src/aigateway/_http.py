"""The request pipeline, written once: build the request, send it, classify the reply, parse it.

Everything here except `SyncPipeline.request` / `AsyncPipeline.request` is pure (no I/O), so
the sync and async clients share it; those two methods differ only in the lines that wait on
the network. The pipeline knows nothing of resources: a resource describes a call as an
`APICall` (method, path, body, how to parse the reply) and hands it over.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import httpx

from ._config import ClientConfig, coerce_timeout
from ._retry import RetryPolicy, attempts_of, set_attempts
from .errors import (
    APIConnectionError,
    APIResponseValidationError,
    APIStatusError,
    APITimeoutError,
    RateLimitInfo,
    snippet,
    status_error_class,
)

if TYPE_CHECKING:
    from ._streaming import AsyncStream, Stream
    from .types.chat_params import RequestOptions

T = TypeVar("T")

_NO_OPTIONS: RequestOptions = {}
_JSON_HEADERS = {"Content-Type": "application/json"}


@dataclass(frozen=True, slots=True)
class APICall(Generic[T]):
    """One API call as a resource describes it."""

    method: str
    path: str
    """Relative to the base URL, without a leading slash (``chat/completions``)."""
    parse: Callable[[bytes], T]
    """Bytes of a 2xx reply to the typed result (e.g. ``Model.model_validate_json``)."""
    body: bytes | None = None
    options: RequestOptions = field(default_factory=lambda: _NO_OPTIONS)
    stream: bool = False
    """When true, ``parse`` is applied to each event's data and a Stream is returned."""
    raw: bool = False
    """When true, a `RawResponse` is returned instead of the parsed result."""
    side_effect: bool = False
    """The call acts on the world (sends an email, moves money, writes data): it is retried
    only when it carries an idempotency key, so a retry cannot repeat the act."""


@dataclass(frozen=True, slots=True)
class RawResponse(Generic[T]):
    """The HTTP reply behind a result: status, headers, how many attempts it took, and the
    parsed object (``parse()``)."""

    http_response: httpx.Response
    attempts: int
    _parsed: T

    @property
    def status_code(self) -> int:
        return self.http_response.status_code

    @property
    def headers(self) -> httpx.Headers:
        return self.http_response.headers

    @property
    def request_id(self) -> str | None:
        request_id: str | None = self.http_response.headers.get("x-request-id")
        return request_id

    @property
    def rate_limit(self) -> RateLimitInfo | None:
        """The ``X-RateLimit-*`` headers of this reply."""
        return RateLimitInfo.from_headers(self.http_response.headers)

    def parse(self) -> T:
        """The typed result, as the method without ``with_raw_response`` would return it."""
        return self._parsed


@dataclass
class ClientState:
    """What the client remembers from the replies it has seen."""

    remaining_credits: float | None = None
    balance_warning: bool | None = None
    rate_limit: RateLimitInfo | None = None

    def observe(self, response: httpx.Response, parsed: object) -> None:
        """Remember the credits and rate-limit values of a reply."""
        credits = getattr(parsed, "remaining_credits", None)
        if credits is not None:
            self.remaining_credits = credits
            self.balance_warning = getattr(parsed, "balance_warning", None)
        rate_limit = RateLimitInfo.from_headers(response.headers)
        if rate_limit is not None:
            self.rate_limit = rate_limit


class BasePipeline:
    """The pure parts of the pipeline, shared by `SyncPipeline` and `AsyncPipeline`."""

    def __init__(
        self,
        config: ClientConfig,
        http_client: httpx.Client | httpx.AsyncClient,
        state: ClientState,
        retry: RetryPolicy,
    ) -> None:
        self.config = config
        self.http_client = http_client
        self.state = state
        self.retry = retry
        self._headers = config.headers()

    def build_request(self, call: APICall[Any]) -> httpx.Request:
        """The httpx request for a call: URL, headers, body, timeout."""
        options = call.options
        headers: dict[str, str] = dict(self._headers)
        if call.body is not None:
            headers.update(_JSON_HEADERS)
        if call.stream:
            headers["Accept"] = "text/event-stream"
        idempotency_key = options.get("idempotency_key")
        if idempotency_key:
            headers["Idempotency-Key"] = idempotency_key
        extra_headers = options.get("extra_headers")
        if extra_headers:
            headers.update(extra_headers)
        body = call.body
        extra_body = options.get("extra_body")
        if extra_body:
            merged = json.loads(body) if body else {}
            merged.update(extra_body)
            body = json.dumps(merged).encode()
        timeout = (
            coerce_timeout(options["timeout"]) if "timeout" in options else self.config.timeout
        )
        if call.stream:
            from ._streaming import stream_read_timeout

            timeout = stream_read_timeout(timeout, options)
        return self.http_client.build_request(
            call.method,
            self.config.base_url.join(call.path),
            headers=headers,
            content=body,
            timeout=timeout,
        )

    def retry_budget(self, call: APICall[Any]) -> int:
        """How many retries this call may have: none for an act without an idempotency key."""
        if call.side_effect and not call.options.get("idempotency_key"):
            return 0
        return call.options.get("max_retries", self.config.max_retries)

    def status_error(self, response: httpx.Response, attempts: int) -> APIStatusError:
        """The typed error for a non-2xx reply whose body has been read."""
        return make_status_error(response, attempts)

    def finish(self, call: APICall[T], response: httpx.Response, attempts: int) -> Any:
        """The result of a 2xx non-stream reply: parsed, remembered, raw if asked."""
        parsed = parse_body(call.parse, response)
        self.state.observe(response, parsed)
        return RawResponse(response, attempts, parsed) if call.raw else parsed


def make_status_error(response: httpx.Response, attempts: int = 1) -> APIStatusError:
    """Classify a non-2xx reply by status and error code; works for non-JSON bodies too."""
    text = response.text
    body: object | None
    try:
        body = json.loads(text) if text else None
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    message: str
    error_type: str | None = None
    code: str | None = None
    if isinstance(error, dict):
        message = str(error.get("message") or response.reason_phrase)
        error_type = _str_or_none(error.get("type"))
        code = _str_or_none(error.get("code"))
    elif isinstance(error, str):
        message = error
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


def _str_or_none(value: object) -> str | None:
    return None if value is None else str(value)


def parse_body(parse: Callable[[bytes], T], response: httpx.Response) -> T:
    """Apply ``parse`` to a reply's bytes; a reply of the wrong shape becomes a typed error."""
    try:
        return parse(response.content)
    except ValueError as exc:  # pydantic.ValidationError and json errors are ValueErrors
        raise APIResponseValidationError(
            f"the reply to {response.request.method} {response.request.url.path} "
            f"is not of the expected shape ({_first_line(exc)})",
            body=response.content,
            status_code=response.status_code,
            headers=response.headers,
            request=response.request,
        ) from exc


def _first_line(exc: Exception) -> str:
    lines = str(exc).splitlines()
    return "; ".join(line.strip() for line in lines[:3]) if lines else type(exc).__name__


def transport_error(exc: httpx.TransportError, request: httpx.Request) -> APIConnectionError:
    """Our error for httpx's: timeouts apart from the rest."""
    cls = APITimeoutError if isinstance(exc, httpx.TimeoutException) else APIConnectionError
    what = "timed out" if cls is APITimeoutError else "failed"
    err = cls(f"{request.method} {request.url.path} {what}: {exc!r}", request=request)
    err.__cause__ = exc
    return err


class SyncPipeline(BasePipeline):
    """The pipeline over an `httpx.Client`."""

    http_client: httpx.Client

    def request(self, call: APICall[Any]) -> Any:
        request = self.build_request(call)
        retrying = self.retry.sync_retrying(self.retry_budget(call))
        for attempt in retrying:
            with attempt:
                return self._attempt(call, request, attempt.retry_state.attempt_number)
        raise AssertionError("unreachable: tenacity reraises the last error")

    def _attempt(self, call: APICall[Any], request: httpx.Request, attempts: int) -> Any:
        try:
            response = self.http_client.send(request, stream=call.stream)
        except httpx.TransportError as exc:
            raise set_attempts(transport_error(exc, request), attempts) from exc
        if response.is_error:
            if call.stream:
                response.read()
                response.close()
            raise self.status_error(response, attempts)
        if call.stream:
            return self._open_stream(call, response, attempts)
        return self.finish(call, response, attempts)

    def _open_stream(self, call: APICall[Any], response: httpx.Response, attempts: int) -> Any:
        from ._streaming import Stream

        stream: Stream[Any] = Stream(
            response, call.parse, on_chunk=self.state.observe, options=call.options
        )
        return RawResponse(response, attempts, stream) if call.raw else stream


class AsyncPipeline(BasePipeline):
    """The pipeline over an `httpx.AsyncClient`."""

    http_client: httpx.AsyncClient

    async def request(self, call: APICall[Any]) -> Any:
        request = self.build_request(call)
        retrying = self.retry.async_retrying(self.retry_budget(call))
        async for attempt in retrying:
            with attempt:
                return await self._attempt(call, request, attempt.retry_state.attempt_number)
        raise AssertionError("unreachable: tenacity reraises the last error")

    async def _attempt(self, call: APICall[Any], request: httpx.Request, attempts: int) -> Any:
        try:
            response = await self.http_client.send(request, stream=call.stream)
        except httpx.TransportError as exc:
            raise set_attempts(transport_error(exc, request), attempts) from exc
        if response.is_error:
            if call.stream:
                await response.aread()
                await response.aclose()
            raise self.status_error(response, attempts)
        if call.stream:
            return self._open_stream(call, response, attempts)
        return self.finish(call, response, attempts)

    def _open_stream(self, call: APICall[Any], response: httpx.Response, attempts: int) -> Any:
        from ._streaming import AsyncStream

        stream: AsyncStream[Any] = AsyncStream(
            response, call.parse, on_chunk=self.state.observe, options=call.options
        )
        return RawResponse(response, attempts, stream) if call.raw else stream


__all__ = [
    "APICall",
    "AsyncPipeline",
    "BasePipeline",
    "ClientState",
    "RawResponse",
    "SyncPipeline",
    "attempts_of",
    "make_status_error",
]
