"""Typed streams of a streamed reply: `Stream` (sync) and `AsyncStream` (async).

Both feed the bytes they read into one `ChunkDecoder` (sans-io: SSE events in, typed chunks
out, ``[DONE]``, error events, the idle timeout and the deadline handled), so the two classes
differ only in how they read. A stream is iterable and a context manager; leaving the ``with``
block, breaking out of the loop, an exception or a cancelled task all release the connection.
After ``data: [DONE]`` the rest of the body is read, so the connection goes back to the pool.

A stream keeps no more than the last few chunks (`TAIL`): memory stays flat however long the
stream is. Timing: the idle timeout counts from the last event (keep-alive comments are not
events), the deadline from the moment the stream opened; both are checked whenever bytes
arrive, and the read timeout of a stream request is lowered to the smaller of the two, so a
server that sends nothing at all is caught by httpx's read timeout.
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Iterator, Mapping
from functools import cached_property
from types import TracebackType
from typing import Any, Generic, TypeVar

import anyio
import httpx
from typing_extensions import Self

from ._sse import SSEDecodeError, SSEDecoder
from .errors import (
    APIResponseValidationError,
    APIStatusError,
    IncompleteStreamError,
    StreamConnectionError,
    StreamTimeoutError,
    status_error_class,
)

T = TypeVar("T")

DONE = "[DONE]"
DONE_OBJECT = "chat.completion.done"
"""The ``object`` of the WebSocket frame that ends a stream (design section 2)."""
TAIL = 16
"""How many of the last chunks a stream keeps, for the error of a stream cut short."""
DEFAULT_STREAM_IDLE_TIMEOUT = 300.0
"""Seconds a stream may go without an event before it raises `StreamTimeoutError`."""
_DRAIN_LIMIT = 65_536
"""Bytes read after ``[DONE]`` to free the connection; past this it is closed instead."""

monotonic: Callable[[], float] = time.monotonic
"""The clock of stream timers (tests replace it instead of waiting)."""

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


def stream_settings(options: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """The idle timeout and deadline a call asks for (``stream_idle_timeout``,
    ``stream_deadline``); the idle timeout defaults to `DEFAULT_STREAM_IDLE_TIMEOUT`."""
    idle = options.get("stream_idle_timeout", DEFAULT_STREAM_IDLE_TIMEOUT)
    return idle, options.get("stream_deadline")


def stream_read_timeout(timeout: httpx.Timeout, options: Mapping[str, Any]) -> httpx.Timeout:
    """The timeout of a stream request: its read timeout lowered to the idle timeout and the
    deadline, so a silent server raises instead of hanging."""
    limits = [t for t in (timeout.read, *stream_settings(options)) if t is not None]
    read = min(limits) if limits else None
    if read == timeout.read:
        return timeout
    return httpx.Timeout(connect=timeout.connect, read=read, write=timeout.write, pool=timeout.pool)


class StreamTimer:
    """The idle timeout and deadline of one stream, without I/O: told after each read whether
    an event arrived, it says when a limit was passed."""

    __slots__ = ("_clock", "_deadline", "_idle_timeout", "_last_event", "_start")

    def __init__(
        self,
        idle_timeout: float | None,
        deadline: float | None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._clock = clock or monotonic
        self._idle_timeout = idle_timeout
        self._deadline = deadline
        self._start = self._last_event = self._clock()

    def overdue(self, progressed: bool) -> str | None:
        """Why the stream must stop now, or None; ``progressed``: an event just arrived."""
        now = self._clock()
        if progressed:
            self._last_event = now
        if self._deadline is not None and now - self._start > self._deadline:
            return f"the stream went over its deadline of {self._deadline:g} s (stream_deadline)"
        if self._idle_timeout is not None and now - self._last_event > self._idle_timeout:
            return (
                f"no event for more than {self._idle_timeout:g} s (stream_idle_timeout; "
                "keep-alive comments do not count)"
            )
        return None

    def next_wait(self) -> float | None:
        """How long the next wait for an event may last (None: no limit)."""
        now = self._clock()
        waits = []
        if self._deadline is not None:
            waits.append(self._start + self._deadline - now)
        if self._idle_timeout is not None:
            waits.append(self._last_event + self._idle_timeout - now)
        return max(0.0, min(waits)) if waits else None


def error_from_object(
    raw: bytes | str, request: httpx.Request, headers: Mapping[str, str] | None = None
) -> APIStatusError | None:
    """The API error an ``{"error": {...}}`` object inside a stream stands for, or None when
    ``raw`` is not such an object. The status comes from ``error.status`` when the server sent
    it, else from the error type (500 when unknown); the code wins for credits."""
    try:
        body = json.loads(raw)
    except ValueError:
        return None
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return None
    code = error.get("code")
    status = error.get("status")
    if not isinstance(status, int) or isinstance(status, bool):
        status = _ERROR_TYPE_STATUS.get(str(error.get("type")), 500)
    content = raw.encode() if isinstance(raw, str) else raw
    response = httpx.Response(status, content=content, headers=headers, request=request)
    cls = status_error_class(status, None if code is None else str(code))
    return cls(
        str(error.get("message") or "error event in the stream"),
        response=response,
        body=body,
        error_type=None if error.get("type") is None else str(error.get("type")),
        code=None if code is None else str(code),
    )


def _object_of(text: str) -> object:
    try:
        body = json.loads(text)
    except ValueError:
        return None
    return body.get("object") if isinstance(body, dict) else None


def close_generator(generator: Generator[Any, None, None]) -> None:
    """Close a generator, unless it is the one running (a close from inside its own loop)."""
    if not getattr(generator, "gi_running", False):
        generator.close()


async def aclose_generator(generator: AsyncIterator[Any]) -> None:
    """Close an async generator, unless it is the one running (other iterators are left be)."""
    aclose = getattr(generator, "aclose", None)
    if aclose is not None and not getattr(generator, "ag_running", False):
        await aclose()


class ChunkDecoder(Generic[T]):
    """Bytes of an event stream in, typed chunks out; no I/O.

    ``data: [DONE]`` marks the end; an event whose data is ``{"error": {...}}`` raises the
    matching API error; a chunk that does not parse raises `APIResponseValidationError`; a
    passed idle timeout or deadline raises `StreamTimeoutError`. Only the count of chunks and
    the last `TAIL` of them are kept.
    """

    def __init__(
        self,
        parse: Callable[[bytes], T],
        response: httpx.Response,
        *,
        timer: StreamTimer | None = None,
    ) -> None:
        self._parse = parse
        self._response = response
        self._sse = SSEDecoder()
        self._timer = timer
        self.done = False
        self.received = 0
        self.tail: deque[T] = deque(maxlen=TAIL)

    def feed(self, data: bytes) -> list[T]:
        """The chunks completed by the next bytes of the body (empty once ``[DONE]`` is seen)."""
        try:
            events = self._sse.feed(data)
        except SSEDecodeError as exc:
            raise self._invalid(str(exc), data) from exc
        chunks: list[T] = []
        parse = self._parse
        for event in events:  # the hot path: one parse per event, no other call
            text = event.data
            if text == DONE or self.done:
                self.done = True
                break
            if event.event == "error" or '"error"' in text[:32]:
                self._raise_error_object(text)
            try:
                # model_validate_json takes str as well as bytes: no re-encoding
                chunks.append(parse(text))  # type: ignore[arg-type]
            except ValueError as exc:
                raise self._not_a_chunk(text, exc) from exc
        if chunks:
            self.received += len(chunks)
            self.tail.extend(chunks)
        self._check_time(bool(events))
        return chunks

    def feed_frame(self, message: str | bytes) -> T | None:
        """The chunk of one WebSocket frame; None for the done frame (design section 2)."""
        text = message.decode("utf-8", "replace") if isinstance(message, bytes) else message
        if DONE_OBJECT in text[:64] and _object_of(text) == DONE_OBJECT:
            self.done = True
            return None
        if '"error"' in text[:32]:
            self._raise_error_object(text)
        try:
            chunk = self._parse(text)  # type: ignore[arg-type]
        except ValueError as exc:
            raise self._not_a_chunk(text, exc) from exc
        self.received += 1
        self.tail.append(chunk)
        self._check_time(True)
        return chunk

    def _raise_error_object(self, text: str) -> None:
        """Raise the API error an ``{"error": {...}}`` event stands for (if it is one)."""
        error = error_from_object(text, self._response.request, self._response.headers)
        if error is not None:
            raise error

    def _not_a_chunk(self, text: str, exc: ValueError) -> APIResponseValidationError:
        return self._invalid(f"a stream chunk is not of the expected shape ({exc})", text.encode())

    def _check_time(self, progressed: bool) -> None:
        if self._timer is not None and not self.done:
            overdue = self._timer.overdue(progressed)
            if overdue is not None:
                raise self.incomplete(overdue, StreamTimeoutError)

    def next_wait(self) -> float | None:
        """How long the next wait for an event may last (None: no limit)."""
        return None if self._timer is None else self._timer.next_wait()

    def stalled(self) -> StreamTimeoutError:
        """The error for a wait of `next_wait` seconds that brought nothing."""
        why = self._timer.overdue(False) if self._timer is not None else None
        error = self.incomplete(why or "the stream stalled", StreamTimeoutError)
        assert isinstance(error, StreamTimeoutError)
        return error

    def end(self) -> None:
        """The body ended: raise unless ``[DONE]`` was seen."""
        if not self.done:
            cut = " in the middle of an event" if self._sse.pending else ""
            raise self.incomplete(f"the stream ended{cut} before data: [DONE]")

    def transport_failure(self, exc: httpx.TransportError) -> IncompleteStreamError:
        """The error for a connection that failed mid-stream (a read timeout is a stall)."""
        if isinstance(exc, httpx.TimeoutException):
            return self.incomplete(f"the stream stalled: nothing arrived in time ({exc!r})",
                                   StreamTimeoutError)  # fmt: skip
        return self.incomplete(
            f"the connection was cut mid-stream ({exc!r})", StreamConnectionError
        )

    def incomplete(
        self, why: str, cls: type[IncompleteStreamError] = IncompleteStreamError
    ) -> IncompleteStreamError:
        """A stream-cut-short error carrying the count and the last chunks received."""
        return cls(
            f"{why}, after {self.received} chunks",
            chunks=list(self.tail),
            received=self.received,
            request=self._response.request,
        )

    def _invalid(self, message: str, raw: bytes) -> APIResponseValidationError:
        return APIResponseValidationError(
            message,
            body=raw,
            status_code=self._response.status_code,
            headers=self._response.headers,
            request=self._response.request,
        )


class SyncChunkIterator(Generic[T]):
    """One generator behind ``for``/``next()``, stopped by ``close()``; leaving a ``with``
    block closes. Subclasses write `_iterate` and `_release` (free the connection)."""

    def _iterate(self) -> Generator[T, None, None]:
        raise NotImplementedError

    def _release(self) -> None:
        raise NotImplementedError

    @cached_property
    def _iterator(self) -> Generator[T, None, None]:
        return self._iterate()

    def __iter__(self) -> Iterator[T]:
        return self._iterator

    def __next__(self) -> T:
        return next(self._iterator)

    def close(self) -> None:
        """Stop the iteration and release the connection (idempotent)."""
        close_generator(self._iterator)
        self._release()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncChunkIterator(Generic[T]):
    """`SyncChunkIterator` for ``async for``: ``close()`` is shielded, so it completes even
    when the task is being cancelled."""

    def _iterate(self) -> AsyncGenerator[T, None]:
        raise NotImplementedError

    async def _release(self) -> None:
        raise NotImplementedError

    @cached_property
    def _iterator(self) -> AsyncGenerator[T, None]:
        return self._iterate()

    def __aiter__(self) -> AsyncIterator[T]:
        return self._iterator

    async def __anext__(self) -> T:
        return await self._iterator.__anext__()

    async def close(self) -> None:
        """Stop the iteration and release the connection (idempotent, shielded)."""
        with anyio.CancelScope(shield=True):
            await aclose_generator(self._iterator)
            await self._release()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


def chunk_decoder(
    parse: Callable[[bytes], T], response: httpx.Response, options: Mapping[str, Any] | None
) -> ChunkDecoder[T]:
    """A decoder with the idle timeout and deadline the call's options ask for."""
    idle_timeout, deadline = stream_settings(options or {})
    timer = None
    if idle_timeout is not None or deadline is not None:
        timer = StreamTimer(idle_timeout, deadline)
    return ChunkDecoder(parse, response, timer=timer)


class _StreamBase(Generic[T]):
    def __init__(
        self,
        response: httpx.Response,
        parse: Callable[[bytes], T],
        *,
        on_chunk: Callable[[httpx.Response, object], None] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        self.response = response
        self._decoder = chunk_decoder(parse, response, options)
        self._on_chunk = on_chunk

    @property
    def received(self) -> int:
        """How many chunks have arrived so far."""
        return self._decoder.received

    def _observe(self, chunks: list[T]) -> None:
        if self._on_chunk is not None:
            self._on_chunk(self.response, chunks[-1])


def _drain(raw: Iterator[bytes]) -> None:
    """Read what follows ``[DONE]`` so the connection can go back to the pool (up to
    `_DRAIN_LIMIT` bytes; past that the connection is closed instead)."""
    drained = 0
    for data in raw:
        drained += len(data)
        if drained > _DRAIN_LIMIT:
            return


async def _adrain(raw: AsyncIterator[bytes]) -> None:
    """`_drain` for an async body."""
    drained = 0
    async for data in raw:
        drained += len(data)
        if drained > _DRAIN_LIMIT:
            return


class Stream(_StreamBase[T], SyncChunkIterator[T]):
    """A streamed reply, chunk by chunk. Use it in a ``with`` block, or iterate it to the end.

    Iterating again continues where the last loop stopped.
    """

    def _iterate(self) -> Generator[T, None, None]:
        decoder = self._decoder
        raw = self.response.iter_raw()
        try:
            for data in raw:
                chunks = decoder.feed(data)
                if chunks:
                    self._observe(chunks)
                    yield from chunks
                if decoder.done:
                    _drain(raw)
                    return
            decoder.end()
        except httpx.TransportError as exc:
            raise decoder.transport_failure(exc) from exc
        finally:
            self.response.close()

    def _release(self) -> None:
        self.response.close()


class AsyncStream(_StreamBase[T], AsyncChunkIterator[T]):
    """A streamed reply, chunk by chunk, for ``async for``; also an async context manager.

    Use ``async with``: it closes the connection at once on ``break``, on an exception and
    when the task is cancelled (the close is shielded, so it completes).
    """

    async def _iterate(self) -> AsyncGenerator[T, None]:
        decoder = self._decoder
        raw = self.response.aiter_raw()
        try:
            async for data in raw:
                chunks = decoder.feed(data)
                if chunks:
                    self._observe(chunks)
                    for chunk in chunks:
                        yield chunk
                if decoder.done:
                    await _adrain(raw)
                    return
            decoder.end()
        except httpx.TransportError as exc:
            raise decoder.transport_failure(exc) from exc
        finally:
            with anyio.CancelScope(shield=True):
                await aclose_generator(raw)  # left open, trio warns when it is collected
                await self.response.aclose()

    async def _release(self) -> None:
        await self.response.aclose()


__all__ = [
    "DEFAULT_STREAM_IDLE_TIMEOUT",
    "AsyncChunkIterator",
    "AsyncStream",
    "ChunkDecoder",
    "Stream",
    "StreamTimer",
    "SyncChunkIterator",
    "chunk_decoder",
    "error_from_object",
    "stream_read_timeout",
    "stream_settings",
]
