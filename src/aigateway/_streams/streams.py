"""Typed streams of a streamed reply: `Stream` (sync) and `AsyncStream` (async).

The pipeline opens a stream: it sends the request, reads up to the first event through a
`ChunkDecoder` (so a failure before any data reaches the caller is retried like any other) and
hands the decoder, the body iterator and the chunks read so far to a `Stream`. From there the
two classes differ only in how they read: both feed the bytes into the same sans-io decoder
(SSE events in, typed chunks out, ``[DONE]``, error events, the timers). A stream is iterable
and a context manager; leaving the ``with`` block, breaking out of the loop, an exception or a
cancelled task all release the connection. After ``data: [DONE]`` the rest of the body is
read, so the connection goes back to the pool.

A stream keeps no more than the last few chunks (`TAIL`): memory stays flat however long the
stream is. Timing (`StreamTimer`): the first-event timeout counts from the request, the idle
timeout from the last event (keep-alive comments are not events), the deadline from the
request; they are checked whenever bytes arrive, before an event that arrives late is counted,
and the read timeout of a stream request is lowered so that a server sending nothing at all is
caught by httpx's read timeout.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    Iterator,
)
from functools import cached_property
from typing import Any, Generic, TypeVar

import anyio
import httpx

from aigateway._call.classify import error_event, read_json, request_failed
from aigateway._call.timeouts import DEFAULT_STREAM_IDLE_TIMEOUT, StreamTimer
from aigateway._closing import AsyncClosing, Closing
from aigateway._display import first_choice_text, guarded, stream_html, stream_repr
from aigateway._http.body import adecoded_body, decoded_body
from aigateway._http.leases import AsyncLease, OpenLeases, SyncLease
from aigateway._streams.sse import (
    DEFAULT_MAX_EVENT_SIZE,
    ServerSentEvent,
    SSEDecodeError,
    SSEDecoder,
    SSEEventTooLargeError,
)
from aigateway.errors import (
    APIError,
    APIResponseValidationError,
    IncompleteStreamError,
    ResponseTooLargeError,
    StreamConnectionError,
    StreamTimeoutError,
)

T = TypeVar("T")

DONE = "[DONE]"
_DONE_BYTES = DONE.encode()
DONE_OBJECT = "chat.completion.done"
"""The ``object`` of the WebSocket frame that ends a stream."""
TAIL = 16
"""How many of the last chunks a stream keeps, for the error of a stream cut short."""
_DRAIN_LIMIT = 65_536
"""Bytes read after ``[DONE]`` to free the connection; past this it is closed instead."""


def _object_of(text: str) -> object:
    body = read_json(text)
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
        self.response = response
        self._sse = SSEDecoder()
        self._timer = timer
        self.done = False
        self.received = 0
        self.size = 0
        """Bytes fed so far (decompressed): what a stream over its event limit had received."""
        self.tail: deque[T] = deque(maxlen=TAIL)
        self.on_last: Callable[[httpx.Response, object], None] | None = None
        """Called with the last chunk `next_chunk` gives of the events fed so far (the stream
        notes the reply's credits with it)."""
        self.waiting: deque[ServerSentEvent | bytes] = deque()
        """Events fed whose chunks `next_chunk` has not given yet (of a data-only one, its data)."""

    def feed(self, data: bytes) -> bool:
        """Take the next bytes of the body; true when events are waiting for `next_chunk`.

        A chunk is parsed when it is asked for, not when its bytes arrive: one read can bring
        hundreds of events, and chunks parsed ahead would wait in memory (and each collection
        of the garbage collector would go through them) while the reader works through them."""
        self.size += len(data)
        try:
            simple = self._sse.feed_data_only(data)
            events = self._sse.feed(data) if simple is None else []
        except SSEDecodeError as exc:
            raise self._undecodable(exc, data) from exc
        if simple is not None:  # the common case: events of one data line each
            if self._timer is not None:
                self._check_time(True)
            if not self.done:
                if _DONE_BYTES in simple:
                    del simple[simple.index(_DONE_BYTES) :]
                    self.done = True
                self.waiting.extend(simple)
            return bool(self.waiting)
        if self._timer is not None:
            self._check_time(bool(events))  # before counting them: a late event trips the limit
        waiting = self.waiting
        for event in events:
            if event.data == DONE or self.done:
                self.done = True
                break
            waiting.append(event)
        return bool(waiting)

    def next_chunk(self) -> T | None:
        """The chunk of the next event fed, None when none is waiting. An error event raises
        its API error here, after the chunks before it."""
        waiting = self.waiting
        if not waiting:
            return None
        event = waiting.popleft()
        # The data of a data-only event, not decoded (`feed`), is parsed here as it came: the
        # hot path. Not `in`: bytes in bytes first tries its operand as an int, which raises
        # (and clears) a TypeError, as costly as the rest of this check.
        if isinstance(event, bytes):
            if event.find(b'"error"', 0, 32) >= 0:  # maybe an error object: the general path
                chunk = self._chunk_of(event.decode("utf-8", "replace"))
            else:
                try:
                    chunk = self._parse(event)
                except ValueError:  # invalid UTF-8 (replaced, as in any event) or not a chunk
                    chunk = self._chunk_of(event.decode("utf-8", "replace"))
                else:
                    self.received += 1
                    self.tail.append(chunk)
        else:
            chunk = self._chunk_of(event.data, error=event.event == "error")
        if not waiting and self.on_last is not None:
            self.on_last(self.response, chunk)
        return chunk

    def feed_frame(self, message: str | bytes) -> T | None:
        """The chunk of one WebSocket frame; None for the done frame."""
        text = message.decode("utf-8", "replace") if isinstance(message, bytes) else message
        if DONE_OBJECT in text[:64] and _object_of(text) == DONE_OBJECT:
            self.done = True
            return None
        self._check_time(True)
        return self._chunk_of(text)

    def _chunk_of(self, data: str, *, error: bool = False) -> T:
        """The typed chunk of one event's (or frame's) data, counted and kept in the tail; an
        error object (or an ``event: error``) raises its API error instead."""
        if error or '"error"' in data[:32]:
            self._raise_error_object(data)
        try:
            # model_validate_json takes str too: the text is not encoded again
            chunk = self._parse(data)  # type: ignore[arg-type]
        except ValueError as exc:
            raise self._not_a_chunk(data, exc) from exc
        self.received += 1
        self.tail.append(chunk)
        return chunk

    def _raise_error_object(self, text: str) -> None:
        """Raise the API error an ``{"error": {...}}`` event stands for (if it is one)."""
        error = error_event(text, self.response.request, self.response.headers)
        if error is not None:
            raise error

    def _not_a_chunk(self, text: str, exc: ValueError) -> APIResponseValidationError:
        return self._invalid(f"a stream chunk is not of the expected shape ({exc})", text.encode())

    def _check_time(self, progressed: bool) -> None:
        if self._timer is not None and not self.done:
            overdue = self._timer.overdue(progressed)
            if overdue is not None:
                raise self._timed_out(overdue, self._timer.passed)

    def next_wait(self) -> float | None:
        """How long the next wait for an event may last (None: no limit)."""
        return None if self._timer is None else self._timer.next_wait()

    def stalled(self, exc: BaseException | None = None) -> StreamTimeoutError:
        """The error for a wait that brought nothing (``exc``: the read timeout that ended it):
        the limit passed by now, else a stall."""
        timer = self._timer
        why = timer.overdue(False) if timer is not None else None
        if timer is not None and why is not None:
            return self._timed_out(why, timer.passed)
        detail = "" if exc is None else f": nothing arrived in time ({exc!r})"
        return self._timed_out(f"the stream stalled{detail}", None)

    def _timed_out(self, why: str, passed: tuple[str, float] | None) -> StreamTimeoutError:
        """A `StreamTimeoutError` naming the limit ``passed`` (its name and seconds; None: a
        read timeout)."""
        error = self.incomplete(why, StreamTimeoutError)
        assert isinstance(error, StreamTimeoutError)
        if passed is not None:
            error.limit_name, error.limit = passed
        return error

    def end(self) -> None:
        """The body ended: raise unless ``[DONE]`` was seen, also as the body's last line
        without the blank line after it (servers may end the body right after that line)."""
        if self.done:
            return
        cut = " in the middle of an event" if self._sse.pending else ""
        try:
            last = self._sse.close(dispatch_unfinished=True)
        except SSEDecodeError as exc:
            raise self._undecodable(exc, b"") from exc
        # only [DONE] is taken from an event cut short: any other may have lost its end
        if any(event.data == DONE for event in last):
            self.done = True
            return
        raise self.incomplete(f"the stream ended{cut} before data: [DONE]")

    def transport_failure(self, exc: Exception) -> APIError:
        """The error for a read that failed mid-stream: a read timeout is a stall, a lost
        connection a cut, a body that cannot be decoded a reply of the wrong shape."""
        if isinstance(exc, httpx.TimeoutException | TimeoutError):
            error: APIError = self.stalled(exc)
        elif isinstance(exc, httpx.TransportError | OSError):
            why = f"the connection was cut mid-stream ({exc!r})"
            error = self.incomplete(why, StreamConnectionError)
        else:
            error = request_failed(exc, self.response.request)
        error.__cause__ = exc
        return error

    def incomplete(
        self, why: str, cls: type[IncompleteStreamError] = IncompleteStreamError
    ) -> IncompleteStreamError:
        """A stream-cut-short error carrying the count and the last chunks received."""
        return cls(
            f"{why}, after {self.received} chunks",
            chunks=list(self.tail),
            received=self.received,
            request=self.response.request,
        )

    def _undecodable(self, exc: SSEDecodeError, raw: bytes) -> APIError:
        """The error for bytes the event decoder refused: an event over its size limit (the
        bound on a stream's memory, also against a compressed "bomb"), or malformed bytes."""
        if not isinstance(exc, SSEEventTooLargeError):
            return self._invalid(str(exc), raw)
        request = self.response.request
        return ResponseTooLargeError(
            f"an event of the stream in reply to {request.method} {request.url.path} is "
            f"larger than max_event_size={DEFAULT_MAX_EVENT_SIZE} bytes, counted after "
            f"decompression, after {self.received} chunks and {self.size} bytes; the "
            "connection was closed",
            limit=DEFAULT_MAX_EVENT_SIZE,
            limit_name="max_event_size",
            received=self.size,
            status_code=self.response.status_code,
            headers=self.response.headers,
            request=request,
        )

    def _invalid(self, message: str, raw: bytes) -> APIResponseValidationError:
        return APIResponseValidationError(
            message,
            body=raw,
            status_code=self.response.status_code,
            headers=self.response.headers,
            request=self.response.request,
        )


class SyncChunkIterator(Closing, Generic[T]):
    """One generator behind ``for``/``next()``, stopped by ``close()``; leaving a ``with``
    block closes. Subclasses write `_iterate` and `_release` (free the connection).

    The object is its own iterator, so a loop over it keeps it alive (``for chunk in
    client...create(stream=True)`` holds no other reference). The generator `_iterate` gives
    is kept on the object, so it should not hold the object (a generator method does): an
    object in a reference cycle outlives its last use, and its generator's ``finally`` then
    runs inside the garbage collector."""

    def _iterate(self) -> Generator[T, None, None]:
        raise NotImplementedError

    def _release(self) -> None:
        raise NotImplementedError

    @cached_property
    def _iterator(self) -> Generator[T, None, None]:
        return self._iterate()

    def __iter__(self) -> Iterator[T]:
        return self

    def __next__(self) -> T:
        return next(self._iterator)

    def close(self) -> None:
        """Stop the iteration and release the connection (idempotent)."""
        close_generator(self._iterator)
        self._release()


class AsyncChunkIterator(AsyncClosing, Generic[T]):
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
        return self

    def __anext__(self) -> Awaitable[T]:
        return self._iterator.__anext__()  # the generator's awaitable itself: no coroutine more

    async def close(self) -> None:
        """Stop the iteration and release the connection (idempotent, shielded)."""
        with anyio.CancelScope(shield=True):
            await aclose_generator(self._iterator)
            await self._release()


class _StreamBase(Generic[T]):
    """What both streams share: the reply, its decoder and the stream's lease (the connection,
    the body and the generator of chunks, `aigateway._http.leases`).

    The lease is kept apart so that the stream is in no reference cycle: dropped unclosed, it
    dies at once and hands its lease back, which releases the connection then, or as soon as
    that is safe (`aigateway._http.leases`)."""

    _lease: SyncLease | AsyncLease

    def __init__(
        self,
        response: httpx.Response,
        decoder: ChunkDecoder[T],
        body: Any = None,
        head: list[T] | None = None,
        *,
        on_chunk: Callable[[httpx.Response, object], None] | None = None,
        on_close: Callable[[], object] | None = None,
        leases: OpenLeases | None = None,
    ) -> None:
        """``body``: the body's byte iterator, already started by the pipeline (None: not
        started); ``head``: the chunks it read before handing the stream over; ``leases``:
        the client's open leases, which hold this stream's until it is released."""
        self.response = response
        self._decoder = decoder
        decoder.on_last = on_chunk
        lease = self._lease = self._lease_type(response, leases, on_close, body)
        lease.chunks = self._chunks_of(lease, decoder, head or [])

    _lease_type: type[SyncLease] | type[AsyncLease]
    _chunks_of: Callable[..., Any]
    """The generator function of the chunks (`_chunks`, `_achunks`): it holds the lease only."""

    def __del__(self) -> None:
        lease = self.__dict__.get("_lease")  # None if __init__ failed
        if lease is not None:
            lease.abandon()

    @property
    def received(self) -> int:
        """How many chunks have arrived so far."""
        return self._decoder.received

    @property
    def state(self) -> str:
        """``open``, ``finished`` (every chunk arrived) or ``closed`` (before the end)."""
        if self._decoder.done:
            return "finished"
        return "closed" if self.response.is_closed else "open"

    def _recent_text(self) -> str:
        """The text of the last chunks kept (a stream keeps no more, so memory stays flat)."""
        return "".join(first_choice_text(chunk) for chunk in self._decoder.tail)

    @guarded
    def __repr__(self) -> str:
        kept = len(self._decoder.tail)
        return stream_repr(self, self.state, self.received, self._recent_text(), kept)

    @guarded
    def _repr_html_(self) -> str:
        kept = len(self._decoder.tail)
        return stream_html(self, self.state, self.received, self._recent_text(), kept)


def _head_and_waiting(
    response: httpx.Response, decoder: ChunkDecoder[T], head: list[T]
) -> Iterator[T]:
    """The chunks the pipeline read ahead (handed out once), then those of the events it fed
    besides, each parsed as it is asked for (the decoder notes the credits at the last)."""
    if head:
        ahead = head[:]
        head.clear()
        on_last = decoder.on_last
        if not decoder.waiting and on_last is not None:
            on_last(response, ahead[-1])
        yield from ahead
    next_chunk = decoder.next_chunk
    while (chunk := next_chunk()) is not None:
        yield chunk


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


_READ_FAILURES = (httpx.HTTPError, httpx.StreamError, OSError)
"""What reading a body may raise besides our own errors (a cut, a stall, a bad encoding)."""


def _chunks(lease: SyncLease, decoder: ChunkDecoder[T], head: list[T]) -> Generator[T, None, None]:
    """A sync stream's chunks; the lease is released however the generator ends. It holds
    the lease, never the stream."""
    if lease.body is None:
        lease.body = decoded_body(lease.response)
    raw = lease.body
    try:
        yield from _head_and_waiting(lease.response, decoder, head)
        if not decoder.done:
            feed, next_chunk = decoder.feed, decoder.next_chunk
            for data in raw:
                if feed(data):
                    while (chunk := next_chunk()) is not None:
                        yield chunk
                if decoder.done:
                    break
            else:
                decoder.end()
        with contextlib.suppress(*_READ_FAILURES):  # all chunks are in: a failure is moot
            _drain(raw)
    except _READ_FAILURES as exc:
        raise decoder.transport_failure(exc) from exc
    finally:
        lease.release()


async def _achunks(
    lease: AsyncLease, decoder: ChunkDecoder[T], head: list[T]
) -> AsyncGenerator[T, None]:
    """`_chunks` for an async stream (the release is shielded from cancellation)."""
    lease.reading = True
    if lease.body is None:
        lease.body = adecoded_body(lease.response)
    raw = lease.body
    try:
        for early in _head_and_waiting(lease.response, decoder, head):
            yield early
        if not decoder.done:
            feed, next_chunk = decoder.feed, decoder.next_chunk
            async for data in raw:
                if feed(data):
                    while (chunk := next_chunk()) is not None:
                        yield chunk
                if decoder.done:
                    break
            else:
                decoder.end()
        with contextlib.suppress(*_READ_FAILURES):  # all chunks are in: a failure is moot
            await _adrain(raw)
    except _READ_FAILURES as exc:
        raise decoder.transport_failure(exc) from exc
    finally:
        await lease.release()


class Stream(_StreamBase[T], SyncChunkIterator[T]):
    """A streamed reply, chunk by chunk. Use it in a ``with`` block, or iterate it to the end.

    Iterating again continues where the last loop stopped. Dropped unclosed, it releases its
    connection (at once, or at the client's next request if the garbage collector dropped it).
    """

    _lease: SyncLease
    _lease_type = SyncLease
    _chunks_of = staticmethod(_chunks)

    def _iterate(self) -> Generator[T, None, None]:
        chunks: Generator[T, None, None] = self._lease.chunks
        return chunks

    def _release(self) -> None:
        self._lease.release()

    def close(self) -> None:
        """Stop the iteration and release the connection (idempotent)."""
        self._lease.close()


class AsyncStream(_StreamBase[T], AsyncChunkIterator[T]):
    """A streamed reply, chunk by chunk, for ``async for``; also an async context manager.

    Use ``async with``: it closes the connection at once on ``break``, on an exception and
    when the task is cancelled (the close is shielded, so it completes). Dropped unclosed, its
    connection is released by a task of its event loop (or by the loop's end).
    """

    _lease: AsyncLease
    _lease_type = AsyncLease
    _chunks_of = staticmethod(_achunks)

    def _iterate(self) -> AsyncGenerator[T, None]:
        chunks: AsyncGenerator[T, None] = self._lease.chunks
        return chunks

    async def _release(self) -> None:
        await self._lease.release()

    async def close(self) -> None:
        """Stop the iteration and release the connection (idempotent, shielded)."""
        await self._lease.close()


__all__ = [
    "DEFAULT_STREAM_IDLE_TIMEOUT",
    "AsyncChunkIterator",
    "AsyncStream",
    "ChunkDecoder",
    "Stream",
    "StreamTimer",
    "SyncChunkIterator",
]
