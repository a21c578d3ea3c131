"""The request path, written once: every call is a flow of logic without I/O, run by a driver.

A resource describes a call as an `APICall`. `Pipeline.flow` turns it into a generator that
holds all the logic of the call (build the request, wait for the client-side rate limit, take
a concurrency slot, send, classify the reply, decide on a retry and its wait with tenacity,
open a stream up to its first event, book-keep and log) and yields the I/O it needs as the
small commands of ``_commands`` (`Send`, `Sleep`, `Next`, ...). The two drivers of
``_drivers``, `SyncPipeline` and `AsyncPipeline`, perform each command with blocking or
awaited I/O and send the outcome back, so they differ only in the lines that do I/O, like
httpx's ``Auth.auth_flow``. Plain calls, streams, WebSocket sockets and file downloads all
take this path.

Reliability: a call that acts on the world is retried only with an idempotency key; a stream
is retried only while it has not delivered its first event (the flow reads that event before
handing the stream over, so a later failure can never repeat data the caller has seen); one
DEBUG log line per attempt, never a header.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import httpx

from ._classify import (
    looks_like_sse,
    not_an_event_stream,
    parse_body,
    request_failed,
    status_error,
)
from ._commands import NO_SLOT, Acquire, Body, Close, Flow, Next, Read, Send, Sleep, Slot
from ._config import ClientConfig
from ._ledger import (
    CreditBudget,
    FailedAttempt,
    FallbackInfo,
    StreamTally,
    attach_fallback,
    checked_fallbacks,
    model_of,
    model_unavailable,
)
from ._logging import logger
from ._observer import CallObserver, CallTrace
from ._request_builder import RequestBuilder
from ._response import RawResponse
from ._retry import RetryPolicy, set_attempts
from ._state import ClientState
from ._timeouts import StreamTimeouts
from .errors import APIError, RateLimitInfo

if TYPE_CHECKING:
    from ._streaming import ChunkDecoder
    from .types.chat_params import RequestOptions

T = TypeVar("T")

__all__ = ["APICall", "Pipeline", "RawResponse"]

_NO_OPTIONS: RequestOptions = {}


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
    streamed: bool = False
    """When true, the 2xx reply is handed back unread (``with_streaming_response``)."""
    websocket: bool = False
    """When true, the call streams over the WebSocket endpoint instead of HTTP."""
    side_effect: bool = False
    """The call acts on the world (sends an email, moves money, writes data): it is retried
    only when it carries an idempotency key, so a retry cannot repeat the act."""
    trace: CallTrace | None = None
    """The observer's record of this call (``Client(tracing=...)``); None when off."""


class Pipeline:
    """The logic of every call, without I/O; `SyncPipeline` and `AsyncPipeline` drive it."""

    asynchronous = False

    def __init__(
        self,
        config: ClientConfig,
        http_client: httpx.Client | httpx.AsyncClient,
        state: ClientState,
        retry: RetryPolicy,
        transport: httpx.BaseTransport | httpx.AsyncBaseTransport | None = None,
        credit_budget: CreditBudget | None = None,
    ) -> None:
        self.config = config
        self.http_client = http_client
        self.state = state
        self.retry = retry
        self.transport = transport
        """The transport the client was given, if any (a mock's serves sockets in-process)."""
        self.requests = RequestBuilder(config, http_client)
        self.credit_budget = credit_budget
        """The opt-in credit budget of this client object (``max_credits``), or None."""
        self.observer: CallObserver | None = None
        """Follows every call (``Client(tracing=...)``), or None: then it costs one check."""

    # Building the request

    def build_request(self, call: APICall[Any]) -> httpx.Request:
        """The httpx request for a call: URL, headers, body, timeout."""
        timeout = None
        if call.stream:
            timeout = self.stream_timeouts(call).read_timeout(self.requests.timeout_of(call))
        return self.requests.build(call, timeout)

    def stream_timeouts(self, call: APICall[Any]) -> StreamTimeouts:
        return StreamTimeouts.of(self.config.stream_timeouts, call.options)

    # The flow of a call

    def flow(self, call: APICall[Any]) -> Flow[Any]:
        """The call under the client's credit budget, with its fallback models if any."""
        fallbacks = call.options.get("fallback_models")
        if fallbacks is not None:
            fallbacks = checked_fallbacks(fallbacks)
        budget = self.credit_budget
        if budget is not None:
            budget.reserve()  # raises before anything is sent once the budget is spent
        trace = None if self.observer is None else self.observer.start(call, self)
        if trace is not None:
            call = replace(call, trace=trace)
        try:
            if self.state.shared is not None:  # many processes on the key: shared limits
                result = yield from self.state.shared.run(self, call, fallbacks, budget)
            elif fallbacks:
                result = yield from self._fall_back(call, fallbacks)
            else:
                result = yield from self._call(call)
        except BaseException as error:
            if trace is not None:
                trace.failed(error)
            raise
        finally:
            if budget is not None:
                budget.release()
        if trace is not None:
            trace.finished(result)
        return result

    def _fall_back(self, call: APICall[Any], fallbacks: Sequence[str]) -> Flow[Any]:
        """Try the call's model, then each fallback in turn while the error says the model is
        unavailable; only a whole failed call moves on, so no output has reached the caller."""
        body = json.loads(call.body) if call.body else None
        if not isinstance(body, dict) or not isinstance(body.get("model"), str):
            return (yield from self._call(call))
        models = [body["model"], *fallbacks]
        failed: list[FailedAttempt] = []
        for index, model in enumerate(models):
            attempt = call
            if index:
                attempt = replace(call, body=json.dumps({**body, "model": model}).encode())
            try:
                result = yield from self._call(attempt)
            except APIError as error:
                failed.append(FailedAttempt(model, error))
                if index == len(models) - 1 or not model_unavailable(error):
                    error.fallback = FallbackInfo(None, tuple(failed))
                    raise
                if logger.isEnabledFor(logging.DEBUG):
                    logger.debug("model %s unavailable (%s): falling back", model, error)
                continue
            attach_fallback(result, FallbackInfo(model, tuple(failed)))
            return result
        raise AssertionError("unreachable")  # pragma: no cover

    def _call(self, call: APICall[Any]) -> Flow[Any]:
        """The call's attempts; a final failure is counted in the usage ledger."""
        try:
            return (yield from self._attempts(call))
        except APIError as error:
            self.retry.record_asked_wait(error)
            self.state.ledger.record_failure(model_of(call.body), error)
            raise

    def _attempts(self, call: APICall[Any]) -> Flow[Any]:
        """Attempts of the call under the retry policy, until one succeeds or none is left.

        The first attempt runs outside tenacity (most calls succeed at once, and building
        tenacity's state costs microseconds); once it fails, tenacity's state machine decides
        every retry and wait, seeded with that failure."""
        request = self.build_request(call)
        if call.websocket:
            from ._websocket import open_socket

            exchange: Callable[..., Flow[Any]] = open_socket
        else:
            exchange = Pipeline._exchange
        try:
            return (yield from self._attempt(exchange, call, request, 1))
        except APIError as error:
            if call.side_effect and "idempotency-key" not in request.headers:
                raise
            retries = call.options.get("max_retries", self.config.max_retries)
            if retries < 1:
                raise
            retrying, state = self.retry.retrying(retries, error)
        while True:
            wait: Any = retrying.iter(state)  # raises the last error when no retry is left
            state.prepare_for_next_attempt()
            if call.trace is not None:
                call.trace.retrying(float(wait))
            yield Sleep(float(wait))  # a DoSleep, tenacity's wait
            try:
                return (yield from self._attempt(exchange, call, request, state.attempt_number))
            except APIError:
                state.set_exception(sys.exc_info())  # type: ignore[arg-type]

    def _attempt(
        self,
        exchange: Callable[..., Flow[Any]],
        call: APICall[Any],
        request: httpx.Request,
        attempts: int,
    ) -> Flow[Any]:
        """One attempt: the client-side rate limit, a concurrency slot, then the exchange."""
        shared = self.state.shared
        if shared is not None and self.state.budget is not None:
            wait = self.rate_limit_wait((yield shared.slot_wait(self.retry.now())))
            while wait > 0:  # then count the request in the new window, like everyone else
                yield Sleep(wait)
                wait = self.rate_limit_wait((yield shared.slot_wait(self.retry.now())))
        else:
            wait = self.rate_limit_wait()
        if wait > 0:
            yield Sleep(wait)
        slots = self.state.slots
        slot = NO_SLOT
        if slots is not None:
            yield Acquire(slots)
            slot = Slot(slots.release)
        try:
            result = yield from exchange(self, call, request, attempts, slot)
        except BaseException as error:
            if isinstance(error, APIError):  # also an error frame or event before any data
                set_attempts(error, attempts)
            if call.trace is not None:
                call.trace.attempt_end(attempts, error)
            raise
        finally:
            slot.release()  # unless a stream took it
        if call.trace is not None:
            call.trace.attempt_end(attempts, None)
        return result

    def _exchange(
        self, call: APICall[Any], request: httpx.Request, attempts: int, slot: Slot
    ) -> Flow[Any]:
        """Send a request and turn its reply into the result or a typed error."""
        timeouts = self.stream_timeouts(call) if call.stream else None
        timer = timeouts.timer(self.retry.monotonic) if timeouts is not None else None
        try:
            response = yield Send(request, call.stream or call.streamed)
        except Exception as exc:
            raise self.failed(request, exc, attempts) from exc
        rate_limit = self.received(request, response, attempts)
        if call.trace is not None:
            call.trace.received(response)
        if rate_limit is not None and self.state.shared is not None:
            yield from self.state.shared.observe(rate_limit, self.retry.now())
        if not response.is_success:
            if call.stream or call.streamed:
                yield from self._read_and_close(request, response, attempts)
            raise status_error(response, attempts)
        if call.streamed:
            return self.streamed_response(call, response, attempts, slot.take())
        if call.stream:
            from ._streaming import ChunkDecoder

            tally = StreamTally(self.state)
            decoder = ChunkDecoder(call.parse, response, timer=timer)
            tally.watch(decoder.tail)
            return (
                yield from self._open_stream(
                    call, request, response, decoder, tally, attempts, slot
                )
            )
        parsed = parse_body(call.parse, response)
        self.state.observe(response, parsed)
        self.state.ledger.record_reply(parsed)
        if rate_limit is not None:
            learn = getattr(type(parsed), "_learn", None)  # a reply model (`ReplyMixin`)
            if learn is not None:
                learn(parsed, "rate_limit", rate_limit)
        return RawResponse(response, attempts, parsed) if call.raw else parsed

    def _read_and_close(
        self, request: httpx.Request, response: httpx.Response, attempts: int
    ) -> Flow[None]:
        try:
            yield Read(response)
        except Exception as exc:
            raise self.failed(request, exc, attempts) from exc
        finally:
            yield Close(response)

    def _open_stream(
        self,
        call: APICall[Any],
        request: httpx.Request,
        response: httpx.Response,
        decoder: ChunkDecoder[Any],
        tally: StreamTally,
        attempts: int,
        slot: Slot,
    ) -> Flow[Any]:
        """Read up to the first chunk (or the end), so that a failure before any data reaches
        the caller is retried like any other; then hand the stream over."""
        body = yield Body(response)
        head: list[Any] = []
        try:
            first = True
            while not head and not decoder.done:
                try:
                    data = yield Next(body, decoder.next_wait())
                except Exception as exc:
                    if isinstance(exc, TimeoutError):
                        raise decoder.stalled() from exc
                    raise self.failed(request, exc, attempts) from exc
                if data is None:
                    decoder.end()  # raises, unless the body ended with data: [DONE]
                    break
                if first and not looks_like_sse(response, data):
                    raise not_an_event_stream(response, data[:500])
                first = False
                if decoder.feed(data):
                    head = [decoder.next_chunk()]
        except BaseException:
            yield Close(body)
            yield Close(response)
            raise
        on_close = tally.closer(slot.take())
        if call.trace is not None:
            call.trace.first_chunk()
            on_close = call.trace.stream_closer(on_close, decoder)
        stream = self.stream_type()(
            response, decoder, body, head, on_chunk=self.state.observe, on_close=on_close
        )
        return RawResponse(response, attempts, stream) if call.raw else stream

    # Book-keeping

    def rate_limit_wait(self, shared_wait: float | None = None) -> float:
        """How long to wait before sending, by the client-side limiter (0 when it is off, when
        the window has requests left, or when the wait would be beyond the retry cap: then the
        request goes and the gateway's 429 says how long, raised at once); ``shared_wait``:
        the shared state's answer instead of this process's limiter."""
        budget = self.state.budget
        if budget is None:
            return 0.0
        wait = budget.reserve(self.retry.now()) if shared_wait is None else shared_wait
        if wait > self.retry.max_wait:
            return 0.0
        if wait > 0 and logger.isEnabledFor(logging.DEBUG):
            logger.debug("rate limit window spent: waiting %.2f s for its reset", wait)
        return wait

    def received(
        self, request: httpx.Request, response: httpx.Response, attempts: int
    ) -> RateLimitInfo | None:
        """Book-keeping for every reply: rate-limit values (returned) and the DEBUG line."""
        rate_limit = self.state.observe_headers(response, self.retry.now)
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug(
                "%s %s -> %d (attempt %d)",
                request.method,
                request.url.path,
                response.status_code,
                attempts,
                extra={"request_id": response.headers.get("x-request-id")},
            )
        return rate_limit

    def failed(self, request: httpx.Request, exc: Exception, attempts: int) -> APIError:
        """The error (and DEBUG line) for an attempt that got no usable reply."""
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug(
                "%s %s -> %s (attempt %d)",
                request.method,
                request.url.path,
                type(exc).__name__,
                attempts,
            )
        return set_attempts(request_failed(exc, request), attempts)

    # What differs between sync and async results

    def stream_type(self) -> Any:
        """`Stream` or `AsyncStream`."""
        raise NotImplementedError

    def streamed_response_type(self) -> Any:
        """`StreamedResponse` or `AsyncStreamedResponse`."""
        raise NotImplementedError

    def streamed_response(
        self,
        call: APICall[Any],
        response: httpx.Response,
        attempts: int,
        on_close: Callable[[], object] | None,
    ) -> Any:
        """The unread reply of ``with_streaming_response``."""
        return self.streamed_response_type()(
            response, attempts, call.parse, on_close, self._stream_over(call)
        )

    def _stream_over(self, call: APICall[Any]) -> Callable[[httpx.Response], Any] | None:
        """For ``with_streaming_response`` on a streamed call: the typed stream over a reply."""
        if not call.stream:
            return None

        def open_stream(response: httpx.Response) -> Any:
            from ._streaming import ChunkDecoder

            timer = self.stream_timeouts(call).timer(self.retry.monotonic)
            decoder = ChunkDecoder(call.parse, response, timer=timer)
            return self.stream_type()(response, decoder, on_chunk=self.state.observe)

        return open_stream
