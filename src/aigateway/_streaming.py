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
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Iterator
from functools import cached_property
from typing import Any, Generic, TypeVar

import anyio
import httpx

from ._classify import error_event, read_json, request_failed
from ._closing import AsyncClosing, Closing
from ._display import first_choice_text, guarded, stream_html, stream_repr
from ._sse import ServerSentEvent, SSEDecodeError, SSEDecoder
from ._timeouts import DEFAULT_STREAM_IDLE_TIMEOUT, StreamTimer
from .errors import (
    APIError,
    APIResponseValidationError,
    IncompleteStreamError,
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
        try:
            simple = self._sse.feed_data_only(data)
            events = self._sse.feed(data) if simple is None else []
        except SSEDecodeError as exc:
            raise self._invalid(str(exc), data) from exc
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
        """The body ended: raise unless ``[DONE]`` was seen, also as the body's last line
        without the blank line after it (servers may end the body right after that line)."""
        if self.done:
            return
        cut = " in the middle of an event" if self._sse.pending else ""
        try:
            last = self._sse.close(dispatch_unfinished=True)
        except SSEDecodeError as exc:
            raise self._invalid(str(exc), b"") from exc
        # only [DONE] is taken from an event cut short: any other may have lost its end
        if any(event.data == DONE for event in last):
            self.done = True
            return
        raise self.incomplete(f"the stream ended{cut} before data: [DONE]")

    def transport_failure(self, exc: Exception) -> APIError:
        """The error for a read that failed mid-stream: a read timeout is a stall, a lost
        connection a cut, a body that cannot be decoded a reply of the wrong shape."""
        if isinstance(exc, httpx.TimeoutException | TimeoutError):
            why = f"the stream stalled: nothing arrived in time ({exc!r})"
            error: APIError = self.incomplete(why, StreamTimeoutError)
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
        return self._iterator

    async def __anext__(self) -> T:
        return await self._iterator.__anext__()

    async def close(self) -> None:
        """Stop the iteration and release the connection (idempotent, shielded)."""
        with anyio.CancelScope(shield=True):
            await aclose_generator(self._iterator)
            await self._release()


class _StreamBase(Generic[T]):
    """What both streams share: the reply, its decoder, the chunks read ahead, the release."""

    def __init__(
        self,
        response: httpx.Response,
        decoder: ChunkDecoder[T],
        body: Any = None,
        head: list[T] | None = None,
        *,
        on_chunk: Callable[[httpx.Response, object], None] | None = None,
        on_close: Callable[[], object] | None = None,
    ) -> None:
        self.response = response
        self._decoder = decoder
        self._body = body
        """The body's byte iterator, already started by the pipeline (None: not started)."""
        self._head = head or []
        """Chunks the pipeline read before handing the stream over (up to the first one)."""
        self._on_close = on_close
        decoder.on_last = on_chunk

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
        return stream_repr(self, self.state, self.received, self._recent_text())

    @guarded
    def _repr_html_(self) -> str:
        return stream_html(self, self.state, self.received, self._recent_text())

    def _head_and_waiting(self) -> Iterator[T]:
        """The chunk the pipeline read ahead, then those of the events it fed besides, each
        parsed as it is asked for (the decoder notes the credits at the last of them)."""
        if self._head:
            head, self._head = self._head, []
            on_last = self._decoder.on_last
            if not self._decoder.waiting and on_last is not None:
                on_last(self.response, head[-1])
            yield from head
        next_chunk = self._decoder.next_chunk
        while (chunk := next_chunk()) is not None:
            yield chunk

    def _closed(self) -> None:
        """Give back what the stream held besides the connection (a concurrency slot), once."""
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close()


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


class Stream(_StreamBase[T], SyncChunkIterator[T]):
    """A streamed reply, chunk by chunk. Use it in a ``with`` block, or iterate it to the end.

    Iterating again continues where the last loop stopped.
    """

    def _iterate(self) -> Generator[T, None, None]:
        decoder = self._decoder
        if self._body is None:
            self._body = self.response.iter_bytes()
        raw = self._body
        try:
            yield from self._head_and_waiting()
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
            self._release()

    def _release(self) -> None:
        try:
            close = getattr(self._body, "close", None)
            if close is not None and not getattr(self._body, "gi_running", False):
                close()
            self.response.close()
        finally:
            self._closed()


class AsyncStream(_StreamBase[T], AsyncChunkIterator[T]):
    """A streamed reply, chunk by chunk, for ``async for``; also an async context manager.

    Use ``async with``: it closes the connection at once on ``break``, on an exception and
    when the task is cancelled (the close is shielded, so it completes).
    """

    async def _iterate(self) -> AsyncGenerator[T, None]:
        decoder = self._decoder
        if self._body is None:
            self._body = self.response.aiter_bytes()
        raw = self._body
        try:
            for head in self._head_and_waiting():
                yield head
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
            with anyio.CancelScope(shield=True):
                await self._release()

    async def _release(self) -> None:
        try:
            await aclose_generator(self._body)  # left open, trio warns when it is collected
            await self.response.aclose()
        finally:
            self._closed()


__all__ = [
    "DEFAULT_STREAM_IDLE_TIMEOUT",
    "AsyncChunkIterator",
    "AsyncStream",
    "ChunkDecoder",
    "Stream",
    "StreamTimer",
    "SyncChunkIterator",
]
