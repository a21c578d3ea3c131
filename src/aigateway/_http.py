"""The request pipeline, written once: build the request, send it, classify the reply, parse it.

Everything here except `SyncPipeline.request` / `AsyncPipeline.request` is pure (no I/O), so
the sync and async clients share it; those two methods differ only in the lines that wait on
the network. The pipeline knows nothing of resources: a resource describes a call as an
`APICall` (method, path, body, how to parse the reply) and hands it over.

Reliability lives here too: each call runs under the retry policy (`_retry`); a call that acts
on the world is retried only with an idempotency key; a stream is retried only while it has
not delivered its first event (the pipeline reads that event before handing the stream over,
so a later failure can never repeat data the caller has seen); the opt-in limits of
`_limits` wait before sending; one DEBUG log line per attempt.
"""

from __future__ import annotations

import itertools
import json
import logging
import sys
import threading
import uuid
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import httpx

from ._config import ClientConfig, coerce_timeout
from ._limits import RequestBudget
from ._logging import logger
from ._retry import RetryPolicy, set_attempts
from .errors import (
    APIConnectionError,
    APIError,
    APIResponseValidationError,
    APIStatusError,
    APITimeoutError,
    LowBalanceWarning,
    RateLimitInfo,
    snippet,
    status_error_class,
)

if TYPE_CHECKING:
    import anyio

    from ._streaming import AsyncStream, Stream
    from .types.chat_params import RequestOptions

T = TypeVar("T")

_NO_OPTIONS: RequestOptions = {}
_URL_CACHE_SIZE = 256
"""Paths whose URL a pipeline remembers (ids in paths vary; the cache must not grow without end)."""
_JSON_HEADERS = {"Content-Type": "application/json"}


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
    """What a client (and its ``with_options`` copies) remembers and shares: the last seen
    credits and rate-limit values, and the opt-in limits (None when off)."""

    remaining_credits: float | None = None
    balance_warning: bool | None = None
    rate_limit: RateLimitInfo | None = None
    budget: RequestBudget | None = None
    """The client-side rate limiter (``wait_for_rate_limit=True``)."""
    slots: threading.BoundedSemaphore | anyio.Semaphore | None = None
    """Bounds the requests in flight (``max_concurrency=``)."""
    warned_low_balance: bool = False

    def observe(self, response: httpx.Response, parsed: object) -> None:
        """Remember the credits of a reply (or stream chunk); warn once of a low balance."""
        credits = getattr(parsed, "remaining_credits", None)
        if credits is not None:
            self.remaining_credits = credits
            self.balance_warning = getattr(parsed, "balance_warning", None)
            if self.balance_warning and not self.warned_low_balance:
                self.warned_low_balance = True
                warnings.warn(
                    LowBalanceWarning(
                        f"the gateway reports a low balance: {credits} credits left "
                        "(warned once per client; see client.remaining_credits)"
                    ),
                    stacklevel=_caller_stacklevel(),
                )

    def observe_headers(self, response: httpx.Response) -> None:
        """Remember the ``X-RateLimit-*`` values of any reply, success or error."""
        rate_limit = RateLimitInfo.from_headers(response.headers)
        if rate_limit is not None:
            self.rate_limit = rate_limit
            if self.budget is not None:
                self.budget.observe(rate_limit)


def _caller_stacklevel() -> int:
    """The stacklevel of the first frame outside aigateway (and tenacity): the caller's line."""
    level, frame = 1, sys._getframe(1)
    while frame.f_back is not None and str(frame.f_globals.get("__name__", "")).startswith(
        ("aigateway", "tenacity")
    ):
        level, frame = level + 1, frame.f_back
    return level


def new_idempotency_key() -> str:
    """A fresh idempotency key (a random UUID), to pass as ``idempotency_key=`` and keep, so
    the same call can be repeated later (even from another process) without acting twice."""
    return str(uuid.uuid4())


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
        self._urls: dict[str, tuple[httpx.URL, bool]] = {}

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
        elif self.config.auto_idempotency_keys and call.method == "POST":
            headers["Idempotency-Key"] = new_idempotency_key()
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
        url, same_origin = self._url_for(call.path)
        if not same_origin:
            headers.pop("Authorization", None)  # the key goes to the gateway only
        if call.stream:
            from ._streaming import stream_read_timeout

            timeout = stream_read_timeout(timeout, options)
        return self.http_client.build_request(
            call.method,
            url,
            headers=headers,
            content=body,
            timeout=timeout,
        )

    def _url_for(self, path: str) -> tuple[httpx.URL, bool]:
        """The absolute URL of a path and whether it is on the gateway's origin; the common
        paths are remembered, since joining URLs is the costliest step of building a request."""
        known = self._urls.get(path)
        if known is None:
            url = self.config.base_url.join(path)
            known = (url, _same_origin(url, self.config.base_url))
            if len(self._urls) < _URL_CACHE_SIZE:
                self._urls[path] = known
        return known

    def retry_budget(self, call: APICall[Any], request: httpx.Request) -> int:
        """How many retries this call may have: none for an act without an idempotency key
        (given, generated or passed in ``extra_headers``)."""
        if call.side_effect and "idempotency-key" not in request.headers:
            return 0
        return call.options.get("max_retries", self.config.max_retries)

    def rate_limit_wait(self) -> float:
        """How long to wait before sending, by the client-side limiter (0 when it is off, when
        the window has requests left, or when the wait would be beyond the retry cap: then the
        request goes and the gateway's 429 says how long, raised at once)."""
        budget = self.state.budget
        if budget is None:
            return 0.0
        wait = budget.reserve(self.retry.now())
        if wait > self.retry.max_wait:
            return 0.0
        if wait > 0 and logger.isEnabledFor(logging.DEBUG):
            logger.debug("rate limit window spent: waiting %.2f s for its reset", wait)
        return wait

    def received(self, request: httpx.Request, response: httpx.Response, attempts: int) -> None:
        """Book-keeping for every reply: rate-limit values and the DEBUG line."""
        self.state.observe_headers(response)
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug(
                "%s %s -> %d (attempt %d)",
                request.method,
                request.url.path,
                response.status_code,
                attempts,
            )

    def failed(
        self, request: httpx.Request, exc: httpx.TransportError, attempts: int
    ) -> APIConnectionError:
        """The error (and DEBUG line) for an attempt that got no reply."""
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug(
                "%s %s -> %s (attempt %d)",
                request.method,
                request.url.path,
                type(exc).__name__,
                attempts,
            )
        return set_attempts(transport_error(exc, request), attempts)

    def stream_class(self) -> type[Stream[Any]] | type[AsyncStream[Any]]:
        """The stream type this pipeline hands out (the only sync/async difference of a stream)."""
        raise NotImplementedError

    def _open_stream(self, call: APICall[Any], response: httpx.Response, attempts: int) -> Any:
        stream = self.stream_class()(
            response, call.parse, on_chunk=self.state.observe, options=call.options
        )
        return RawResponse(response, attempts, stream) if call.raw else stream

    def status_error(self, response: httpx.Response, attempts: int) -> APIStatusError:
        """The typed error for a non-2xx reply whose body has been read."""
        return make_status_error(response, attempts)

    def finish(self, call: APICall[T], response: httpx.Response, attempts: int) -> Any:
        """The result of a 2xx non-stream reply: parsed, remembered, raw if asked."""
        parsed = parse_body(call.parse, response)
        self.state.observe(response, parsed)
        return RawResponse(response, attempts, parsed) if call.raw else parsed


def _same_origin(url: httpx.URL, base: httpx.URL) -> bool:
    return (url.scheme, url.host, url.port) == (base.scheme, base.host, base.port)


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
        budget = self.retry_budget(call, request)
        try:
            return self._attempt(call, request, 1)
        except APIError as error:
            wait = self.retry.first_wait(error, budget)
            if wait is None:
                raise
        self.retry.sleep(wait)
        for attempt in self.retry.sync_retrying(budget, attempts_done=1):
            with attempt:
                return self._attempt(call, request, attempt.retry_state.attempt_number + 1)
        raise AssertionError("unreachable: tenacity reraises the last error")

    def _attempt(self, call: APICall[Any], request: httpx.Request, attempts: int) -> Any:
        wait = self.rate_limit_wait()
        if wait > 0:
            self.retry.sleep(wait)
        slots = self.state.slots
        if slots is not None:
            slots.acquire()
        release = slots.release if slots is not None else None
        try:
            try:
                response = self.http_client.send(request, stream=call.stream)
            except httpx.TransportError as exc:
                raise self.failed(request, exc, attempts) from exc
            self.received(request, response, attempts)
            if response.is_error:
                if call.stream:
                    response.read()
                    response.close()
                raise self.status_error(response, attempts)
            if call.stream:
                self._start_stream(request, response, attempts, release)
                release = None  # the stream gives its slot back when it closes
                return self._open_stream(call, response, attempts)
            return self.finish(call, response, attempts)
        finally:
            if release is not None:
                release()

    def _start_stream(
        self,
        request: httpx.Request,
        response: httpx.Response,
        attempts: int,
        on_close: Callable[[], object] | None,
    ) -> None:
        """Read up to the first event, so that a failure before it is retried like any other."""
        original = response.stream
        assert isinstance(original, httpx.SyncByteStream)
        rest = iter(original)
        head: list[bytes] = []
        try:
            for chunk in rest:
                head.append(chunk)
                if holds_an_event(head):
                    break
        except httpx.TransportError as exc:
            response.close()
            raise self.failed(request, exc, attempts) from exc
        response.stream = _ResumedStream(head, rest, original, on_close)

    def stream_class(self) -> type[Stream[Any]]:
        from ._streaming import Stream

        return Stream


class AsyncPipeline(BasePipeline):
    """The pipeline over an `httpx.AsyncClient`."""

    http_client: httpx.AsyncClient

    async def request(self, call: APICall[Any]) -> Any:
        request = self.build_request(call)
        budget = self.retry_budget(call, request)
        try:
            return await self._attempt(call, request, 1)
        except APIError as error:
            wait = self.retry.first_wait(error, budget)
            if wait is None:
                raise
        await self.retry.async_sleep(wait)
        async for attempt in self.retry.async_retrying(budget, attempts_done=1):
            with attempt:
                return await self._attempt(call, request, attempt.retry_state.attempt_number + 1)
        raise AssertionError("unreachable: tenacity reraises the last error")

    async def _attempt(self, call: APICall[Any], request: httpx.Request, attempts: int) -> Any:
        wait = self.rate_limit_wait()
        if wait > 0:
            await self.retry.async_sleep(wait)
        slots = self.state.slots
        if slots is not None:
            await slots.acquire()  # type: ignore[misc]
        release = slots.release if slots is not None else None
        try:
            try:
                response = await self.http_client.send(request, stream=call.stream)
            except httpx.TransportError as exc:
                raise self.failed(request, exc, attempts) from exc
            self.received(request, response, attempts)
            if response.is_error:
                if call.stream:
                    await response.aread()
                    await response.aclose()
                raise self.status_error(response, attempts)
            if call.stream:
                await self._start_stream(request, response, attempts, release)
                release = None  # the stream gives its slot back when it closes
                return self._open_stream(call, response, attempts)
            return self.finish(call, response, attempts)
        finally:
            if release is not None:
                release()

    async def _start_stream(
        self,
        request: httpx.Request,
        response: httpx.Response,
        attempts: int,
        on_close: Callable[[], object] | None,
    ) -> None:
        """Read up to the first event, so that a failure before it is retried like any other."""
        original = response.stream
        assert isinstance(original, httpx.AsyncByteStream)
        rest = original.__aiter__()
        head: list[bytes] = []
        try:
            async for chunk in rest:
                head.append(chunk)
                if holds_an_event(head):
                    break
        except httpx.TransportError as exc:
            await response.aclose()
            raise self.failed(request, exc, attempts) from exc
        response.stream = _AsyncResumedStream(head, rest, original, on_close)

    def stream_class(self) -> type[AsyncStream[Any]]:
        from ._streaming import AsyncStream

        return AsyncStream


_EVENT_ENDS = (b"\n\n", b"\r\n\r\n", b"\r\r")


def holds_an_event(head: list[bytes]) -> bool:
    """Whether the bytes read so far complete at least one server-sent event."""
    joined = head[0] if len(head) == 1 else b"".join(head)
    return any(end in joined for end in _EVENT_ENDS)


class _Resumable:
    """A reply body whose first chunks were read ahead: they come first, then the rest.
    Closing it closes the original body and runs ``on_close`` once (a concurrency slot)."""

    def __init__(
        self, head: list[bytes], rest: Any, original: Any, on_close: Callable[[], object] | None
    ) -> None:
        self._head = head
        self._rest = rest
        self._original = original
        self._on_close = on_close

    def _closed(self) -> None:
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close()


class _ResumedStream(_Resumable, httpx.SyncByteStream):
    def __iter__(self) -> Iterator[bytes]:
        return itertools.chain(self._head, self._rest)  # no Python frame per chunk

    def close(self) -> None:
        try:
            close_rest = getattr(self._rest, "close", None)
            if close_rest is not None:
                close_rest()
            self._original.close()
        finally:
            self._closed()


class _AsyncResumedStream(_Resumable, httpx.AsyncByteStream):
    """An iterator object, not an async generator: nothing is left for trio to warn about
    when the caller stops early."""

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self

    async def __anext__(self) -> bytes:
        if self._head:
            return self._head.pop(0)
        chunk: bytes = await self._rest.__anext__()
        return chunk

    async def aclose(self) -> None:
        try:
            close_rest = getattr(self._rest, "aclose", None)
            if close_rest is not None:
                await close_rest()  # an async generator left open would warn under trio
            await self._original.aclose()
        finally:
            self._closed()


__all__ = [
    "APICall",
    "AsyncPipeline",
    "BasePipeline",
    "ClientState",
    "RawResponse",
    "SyncPipeline",
    "make_status_error",
    "new_idempotency_key",
]
