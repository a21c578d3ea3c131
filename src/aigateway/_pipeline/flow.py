"""The request path, written once: every call is a flow of logic without I/O, run by a driver.

A resource describes a call as an `APICall` (`aigateway._call.call`). `Pipeline.flow` turns
it into a generator that holds all the logic of the call (build the request, wait for the
client-side rate limit, take a concurrency slot, send, classify the reply, decide on a retry
and its wait with tenacity, try the fallback models, open a stream up to its first event,
book-keep and log) and yields the I/O it needs as the small commands of
`aigateway._call.commands` (`Send`, `Sleep`, `Next`, ...). The two drivers of
`aigateway._pipeline.drivers`, `SyncPipeline` and `AsyncPipeline`, perform each command with
blocking or awaited I/O and send the outcome back, so they differ only in the lines that do
I/O, like httpx's ``Auth.auth_flow``. Plain calls, streams, WebSocket sockets and file
downloads all take this path.

Reliability: a call that acts on the world is retried only with an idempotency key; a stream
is retried only while it has not delivered its first event (the flow reads that event before
handing the stream over, so a later failure can never repeat data the caller has seen); one
DEBUG log line per attempt, never a header.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from aigateway._call.call import APICall
from aigateway._call.classify import (
    looks_like_sse,
    not_an_event_stream,
    parse_body,
    request_failed,
    status_error,
)
from aigateway._call.commands import (
    NO_SLOT,
    Acquire,
    Close,
    Flow,
    Next,
    Send,
    Sleep,
    Slot,
    Write,
)
from aigateway._call.settings import ClientConfig
from aigateway._call.timeouts import Deadline, StreamTimeouts, call_deadline, is_deadline_error
from aigateway._http.body import (
    DEFAULT_MAX_DOWNLOAD_BYTES,
    WRITE_SIZE,
    declared_too_large,
    too_large,
    with_body,
)
from aigateway._logging import logger
from aigateway._pipeline.credit_budget import CreditBudget
from aigateway._pipeline.request import RequestBuilder
from aigateway._pipeline.response import RawResponse
from aigateway._pipeline.retry import RetryPolicy, set_attempts
from aigateway._pipeline.state import ClientState
from aigateway.errors import APIError, RateLimitInfo

if TYPE_CHECKING:  # streams, fallbacks and tracing load with the calls that use them
    from aigateway._http.loops import FirstLoop
    from aigateway._pipeline.observer import CallObserver
    from aigateway._pipeline.stream_usage import StreamUsage
    from aigateway._stacks import AsyncTransport, HTTPClient, Request, Response, SyncTransport
    from aigateway._streams.chunks import ChunkDecoder

__all__ = ["Pipeline"]


class Pipeline:
    """The logic of every call, without I/O; `SyncPipeline` and `AsyncPipeline` drive it."""

    asynchronous = False

    def __init__(
        self,
        config: ClientConfig,
        http_client: HTTPClient,
        state: ClientState,
        retry: RetryPolicy,
        transport: SyncTransport | AsyncTransport | None = None,
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
        self.loop_guard: FirstLoop | None = None
        """For an ``http_client=`` given to an async client: the event loop its connections
        belong to (a request from another is refused before it is sent)."""

    # Building the request

    def build_request(self, call: APICall[Any]) -> Request:
        """The httpx request for a call: URL, headers, body, timeout."""
        timeout = None
        if call.stream:
            timeout = self.stream_timeouts(call).read_timeout(self.requests.timeout_of(call))
        return self.requests.build(call, timeout)

    def stream_timeouts(self, call: APICall[Any]) -> StreamTimeouts:
        return StreamTimeouts.of(self.config.stream_timeouts, call.options)

    # The flow of a call

    def flow(self, call: APICall[Any]) -> Flow[Any]:
        """The call under its deadline and the client's credit budget, with its fallback
        models if any."""
        deadline = self.start_deadline(call)
        fallbacks = call.options.get("fallback_models")
        if fallbacks is not None:
            from aigateway._pipeline.fallbacks import checked_fallbacks

            fallbacks = checked_fallbacks(fallbacks)
        budget = self.credit_budget
        if budget is not None:
            budget.reserve()  # raises before anything is sent once the budget is spent
        trace = None if self.observer is None else self.observer.start(call, self)
        if trace is not None:
            call = replace(call, trace=trace)
        try:
            if self.state.shared is not None:  # many processes on the key: shared limits
                attempts = partial(self._models, fallbacks=fallbacks, deadline=deadline)
                result = yield from self.state.shared.run(self, call, attempts, budget)
            else:
                result = yield from self._models(call, fallbacks, deadline)
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

    def start_deadline(self, call: APICall[Any]) -> Deadline | None:
        """The call's deadline, started now, or None: its ``deadline`` option, else the
        client's for its kind of call (600 s for a plain call, none for a stream, by default);
        a value that cannot be one raises here, before anything is sent."""
        streaming = call.stream or call.websocket
        config = self.config
        seconds = config.stream_timeouts.deadline if streaming else config.deadline
        if call.options:
            seconds = call_deadline(call.options, streaming, seconds)
        return None if seconds is None else Deadline(seconds, self.retry.monotonic)

    def _models(
        self, call: APICall[Any], fallbacks: Sequence[str] | None, deadline: Deadline | None
    ) -> Flow[Any]:
        """The flow of the call for its model, then for each fallback model in turn, if any."""
        if fallbacks and call.model is not None:
            return self._fall_back(call, call.model, fallbacks, deadline)
        return self._call(call, deadline)

    def _fall_back(
        self,
        call: APICall[Any],
        first_model: str,
        fallbacks: Sequence[str],
        deadline: Deadline | None,
    ) -> Flow[Any]:
        """Try the call's model, then each fallback in turn while the error says the model is
        unavailable; only a whole failed call moves on, so no output has reached the caller.
        The deadline is the whole call's: once it ran out, no other model is tried."""
        from aigateway._pipeline.fallbacks import attach_fallback, model_unavailable
        from aigateway.types.fallbacks import FailedAttempt, FallbackInfo

        models = [first_model, *fallbacks]
        failed: list[FailedAttempt] = []
        for index, model in enumerate(models):
            attempt = call.for_model(model) if index else call
            try:
                result = yield from self._call(attempt, deadline)
            except APIError as error:
                failed.append(FailedAttempt(model, error))
                last = index == len(models) - 1
                if last or not model_unavailable(error) or is_deadline_error(error):
                    error.fallback = FallbackInfo(None, tuple(failed))
                    raise
                if logger.isEnabledFor(logging.DEBUG):
                    logger.debug("model %s unavailable (%s): falling back", model, error)
                continue
            attach_fallback(result, FallbackInfo(model, tuple(failed)))
            return result
        raise AssertionError("unreachable")  # pragma: no cover

    def _call(self, call: APICall[Any], deadline: Deadline | None) -> Flow[Any]:
        """The call's attempts; a final failure is counted in the usage ledger."""
        try:
            return (yield from self._attempts(call, deadline))
        except APIError as error:
            self.retry.record_asked_wait(error)
            self.state.ledger.record_failure(call.model, error)
            raise

    def _attempts(self, call: APICall[Any], deadline: Deadline | None) -> Flow[Any]:
        """Attempts of the call under the retry policy, until one succeeds, none is left or
        the deadline runs out (a wait that would pass it is not made).

        The first attempt runs outside tenacity (most calls succeed at once, and building
        tenacity's state costs microseconds); once it fails, the policy's strategies on
        tenacity's state machine decide every retry and wait, seeded with that failure."""
        request = self.build_request(call)
        if call.websocket:
            from aigateway._streams.websocket import open_socket

            exchange: Callable[..., Flow[Any]] = open_socket
        else:
            exchange = Pipeline._exchange
        try:
            return (yield from self._attempt(exchange, call, request, 1, deadline))
        except APIError as error:
            if deadline is not None:
                self._raise_if_out_of_time(error, deadline, request)
            if call.side_effect and "idempotency-key" not in request.headers:
                raise
            max_retries = call.options.get("max_retries", self.config.max_retries)
            if max_retries < 1:
                raise
            retries = self.retry.start_retries(max_retries, error, deadline, request)
        while True:
            wait = retries.next_wait()  # raises the call's error when no retry is left
            if call.trace is not None:
                call.trace.retrying(wait)
            yield Sleep(wait)
            try:
                return (
                    yield from self._attempt(exchange, call, request, retries.attempt, deadline)
                )
            except APIError as error:
                if deadline is not None:
                    self._raise_if_out_of_time(error, deadline, request)
                retries.failed(error)

    @staticmethod
    def _raise_if_out_of_time(error: APIError, deadline: Deadline, request: Request) -> None:
        """End the call when an attempt's failure is its deadline running out (its own error,
        or a timeout with no time left to try again)."""
        if is_deadline_error(error):
            raise error
        if deadline.ran_out(error):
            attempts = getattr(error, "attempts", 1)
            raise set_attempts(deadline.error(request, last=error), attempts)

    def _check_wait(
        self,
        deadline: Deadline | None,
        seconds: float,
        request: Request,
        attempts: int,
    ) -> None:
        """Raise the deadline's error when a wait of ``seconds`` before sending would pass it."""
        if deadline is not None and seconds >= deadline.left():
            raise set_attempts(deadline.error(request, waiting=seconds), attempts)

    def _attempt(
        self,
        exchange: Callable[..., Flow[Any]],
        call: APICall[Any],
        request: Request,
        attempts: int,
        deadline: Deadline | None,
    ) -> Flow[Any]:
        """One attempt: the client-side rate limit, a concurrency slot, then the exchange,
        whose request's timeouts are lowered to the time left."""
        shared = self.state.shared
        if shared is not None and self.state.limiter is not None:
            wait = self.rate_limit_wait((yield shared.slot_wait(self.retry.now())))
            while wait > 0:  # then count the request in the new window, like everyone else
                self._check_wait(deadline, wait, request, attempts - 1)
                yield Sleep(wait)
                wait = self.rate_limit_wait((yield shared.slot_wait(self.retry.now())))
        else:
            wait = self.rate_limit_wait()
        if wait > 0:
            self._check_wait(deadline, wait, request, attempts - 1)
            yield Sleep(wait)
        slots = self.state.slots
        slot = NO_SLOT
        if slots is not None:
            yield from self._take_slot(slots, deadline, request, attempts)
            slot = Slot(slots.release)
        if deadline is not None:
            clip_timeouts(request, deadline)
        try:
            result = yield from exchange(self, call, request, attempts, slot, deadline)
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

    @staticmethod
    def _take_slot(
        slots: Any, deadline: Deadline | None, request: Request, attempts: int
    ) -> Flow[None]:
        """Take a concurrency slot, waiting for one at most until the deadline."""
        try:
            yield Acquire(slots, None if deadline is None else max(deadline.left(), 0.0))
        except TimeoutError as exc:
            if deadline is None:
                raise
            raise set_attempts(deadline.error(request), attempts - 1) from exc

    def _exchange(
        self,
        call: APICall[Any],
        request: Request,
        attempts: int,
        slot: Slot,
        deadline: Deadline | None,
    ) -> Flow[Any]:
        """Send a request and turn its reply into the result or a typed error."""
        timer = None
        if call.stream:
            timer = self.stream_timeouts(call).timer(self.retry.monotonic, deadline)
        try:  # the reply's head within the time left (its timeout is the deadline's error)
            response = yield Send(request, None if deadline is None else max(deadline.left(), 0.0))
        except Exception as exc:
            raise self.failed(request, exc, attempts) from exc
        size, body = 0, b""
        if not (call.stream or call.streamed) or not response.is_success:
            size, body = yield from self._read_body(call, request, response, attempts, deadline)
        rate_limit = self.received(request, response, attempts)
        if call.trace is not None:
            call.trace.received(response)
        if rate_limit is not None and self.state.shared is not None:
            yield from self.state.shared.observe(rate_limit, self.retry.now())
        if not response.is_success:
            raise status_error(with_body(response, body), attempts)
        if call.streamed:
            return self.streamed_response(call, response, attempts, slot.take(), deadline)
        if call.stream:
            from aigateway._pipeline.stream_usage import StreamUsage
            from aigateway._streams.chunks import ChunkDecoder

            usage = StreamUsage(self.state.ledger)
            decoder = ChunkDecoder(call.parse, response, timer=timer)
            usage.watch(decoder.tail)
            return (
                yield from self._open_stream(
                    call, request, response, decoder, usage, attempts, slot, deadline
                )
            )
        if call.save_to is not None:
            parsed: Any = size
        else:
            parsed = parse_body(call.parse, response, body)
        self.state.observe(response, parsed)
        self.state.ledger.record_reply(parsed)
        if rate_limit is not None:
            learn = getattr(type(parsed), "_learn", None)  # a reply model (`ReplyMixin`)
            if learn is not None:
                learn(parsed, "rate_limit", rate_limit)
        if not call.raw:
            return parsed
        if call.save_to is None:
            response = with_body(response, body)
        return RawResponse(response, attempts, parsed)

    def _read_body(
        self,
        call: APICall[Any],
        request: Request,
        response: Response,
        attempts: int,
        deadline: Deadline | None,
    ) -> Flow[tuple[int, bytes]]:
        """Read a reply's whole body, the one place a body is read to its end; return its size
        and, unless it was written to a file, the body.

        The body comes in decoded pieces of bounded size (`aigateway._http.body`), counted as they
        arrive: past the limit (the client's ``max_response_bytes``; a download's ``max_bytes``
        for its 2xx body) the connection is closed, never read to its end, and
        `ResponseTooLargeError` raised. The deadline is checked between pieces too: a server
        sending a byte at a time restarts the read timeout on every byte, not the deadline. A
        download's body is written to its file as it arrives; a body kept in memory is
        returned, parsed from these bytes, and becomes the ``content`` of a reply only when
        one reaches the caller (`with_body`)."""
        if deadline is not None:
            clip_timeouts(request, deadline)  # the body's reads start with the time left now
        save_to = call.save_to if response.is_success else None
        if save_to is None:
            limit, limit_name = self.config.max_response_bytes, "max_response_bytes"
        else:
            limit, limit_name = call.max_bytes or DEFAULT_MAX_DOWNLOAD_BYTES, "max_bytes"
        pieces: list[bytes] = []
        size = written = 0
        body = None
        try:
            declared = declared_too_large(response, limit, limit_name)
            if declared is not None:
                raise declared
            body = self.body_pieces(response)
            if save_to is not None:
                yield Write(save_to, b"", restart=True)
            while True:
                try:
                    piece = yield Next(body)
                except Exception as exc:
                    raise self.failed(request, exc, attempts) from exc
                if piece is None:
                    break
                size += len(piece)
                if size > limit:
                    raise too_large(response, limit, limit_name, size)
                if deadline is not None and deadline.passed():
                    raise set_attempts(deadline.error(request), attempts)
                pieces.append(piece)
                if save_to is not None and size - written >= WRITE_SIZE:
                    yield Write(save_to, b"".join(pieces))  # a write per MiB, not per read
                    pieces.clear()
                    written = size
            if save_to is not None and pieces:
                yield Write(save_to, b"".join(pieces))
                pieces.clear()
        except BaseException:
            pieces.clear()  # the error's traceback holds this frame: it must not hold the body
            yield Close(response, body)
            raise
        if save_to is None:
            return size, b"".join(pieces)
        return size, b""

    def _open_stream(
        self,
        call: APICall[Any],
        request: Request,
        response: Response,
        decoder: ChunkDecoder[Any],
        usage: StreamUsage,
        attempts: int,
        slot: Slot,
        deadline: Deadline | None,
    ) -> Flow[Any]:
        """Read up to the first chunk (or the end), so that a failure before any data reaches
        the caller is retried like any other; then hand the stream over."""
        if deadline is not None:
            clip_timeouts(request, deadline)  # the body's reads start with the time left now
        body = self.body_pieces(response)
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
            yield Close(response, body)
            raise
        on_close = usage.closer(slot.take())
        if call.trace is not None:
            call.trace.first_chunk()
            on_close = call.trace.stream_closer(on_close, decoder)
        stream = self.stream_type()(
            response,
            decoder,
            body,
            head,
            on_chunk=self.state.observe,
            on_close=on_close,
            leases=self.state.leases,
        )
        return RawResponse(response, attempts, stream) if call.raw else stream

    # Book-keeping

    def rate_limit_wait(self, shared_wait: float | None = None) -> float:
        """How long to wait before sending, by the client-side limiter (0 when it is off, when
        the window has requests left, or when the wait would be beyond the retry cap: then the
        request goes and the gateway's 429 says how long, raised at once); ``shared_wait``:
        the shared state's answer instead of this process's limiter."""
        limiter = self.state.limiter
        if limiter is None:
            return 0.0
        wait = limiter.reserve(self.retry.now()) if shared_wait is None else shared_wait
        if wait > self.retry.max_wait:
            return 0.0
        if wait > 0 and logger.isEnabledFor(logging.DEBUG):
            logger.debug("rate limit window spent: waiting %.2f s for its reset", wait)
        return wait

    def received(self, request: Request, response: Response, attempts: int) -> RateLimitInfo | None:
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

    def failed(self, request: Request, exc: Exception, attempts: int) -> APIError:
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

    body_pieces: Callable[[Response], Any]
    """A reply's body as an (async) iterator of decoded pieces (`aigateway._http.body`): made
    here, not by a command, since making it does no I/O (one yield less per reply)."""
    streamed_response_type: type[Any]
    """`StreamedResponse` or `AsyncStreamedResponse`."""

    def stream_type(self) -> Any:
        """`Stream` or `AsyncStream` (imported with the first stream)."""
        raise NotImplementedError

    def streamed_response(
        self,
        call: APICall[Any],
        response: Response,
        attempts: int,
        on_close: Callable[[], object] | None,
        deadline: Deadline | None,
    ) -> Any:
        """The unread reply of ``with_streaming_response`` (the deadline bounds the call up to
        here, and a typed stream read from it)."""
        return self.streamed_response_type(
            response,
            attempts,
            call.parse,
            on_close,
            self._stream_over(call, deadline),
            leases=self.state.leases,
        )

    def _stream_over(
        self, call: APICall[Any], deadline: Deadline | None
    ) -> Callable[[Response], Any] | None:
        """For ``with_streaming_response`` on a streamed call: the typed stream over a reply."""
        if not call.stream:
            return None

        def open_stream(response: Response) -> Any:
            from aigateway._streams.chunks import ChunkDecoder

            timer = self.stream_timeouts(call).timer(self.retry.monotonic, deadline)
            decoder = ChunkDecoder(call.parse, response, timer=timer)
            return self.stream_type()(
                response, decoder, on_chunk=self.state.observe, leases=self.state.leases
            )

        return open_stream


def clip_timeouts(request: Request, deadline: Deadline) -> None:
    """Lower a request's timeouts to the time its call has left (httpx reads them when it
    connects, sends, and starts reading the reply and its body)."""
    timeouts = request.extensions.get("timeout")
    if timeouts:
        request.extensions["timeout"] = deadline.clip(timeouts)
