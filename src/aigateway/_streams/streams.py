"""Typed streams of a streamed reply: `Stream` (sync) and `AsyncStream` (async).

The pipeline opens a stream: it sends the request, reads up to the first event through a
`ChunkDecoder` (`aigateway._streams.chunks`; so a failure before any data reaches the caller is
retried like any other) and hands the decoder, the body iterator and the chunks read so far to
a `Stream`. From there the two classes differ only in how they read: both feed the bytes into
that same sans-io decoder (SSE events in, typed chunks out, ``[DONE]``, error events, the
timers). A stream is iterable and a context manager; leaving the ``with`` block, breaking out
of the loop, an exception or a cancelled task all release the connection. After
``data: [DONE]`` the rest of the body is read, so the connection goes back to the pool.

A stream keeps no more than the last few chunks (`TAIL`): memory stays flat however long the
stream is. Timing (`StreamTimer`): the first-event timeout counts from the request, the idle
timeout from the last event (keep-alive comments are not events), the deadline from the
request; they are checked whenever bytes arrive, before an event that arrives late is counted,
and the read timeout of a stream request is lowered so that a server sending nothing at all is
caught by httpx's read timeout.
"""

from __future__ import annotations

import contextlib
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    Iterator,
)
from functools import cached_property
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import anyio

from aigateway._closing import AsyncClosing, Closing
from aigateway._display import first_choice_text, guarded, stream_html, stream_repr
from aigateway._http.body import adecoded_body, decoded_body
from aigateway._http.leases import AsyncLease, OpenLeases, SyncLease
from aigateway._stacks import read_failures
from aigateway._streams.chunks import ChunkDecoder

if TYPE_CHECKING:
    from aigateway._stacks import Response

__all__ = [
    "AsyncChunkIterator",
    "AsyncStream",
    "Stream",
    "SyncChunkIterator",
    "aclose_generator",
    "close_generator",
]

T = TypeVar("T")

_DRAIN_LIMIT = 65_536
"""Bytes read after ``[DONE]`` to free the connection; past this it is closed instead."""


def close_generator(generator: Generator[Any, None, None]) -> None:
    """Close a generator, unless it is the one running (a close from inside its own loop)."""
    if not getattr(generator, "gi_running", False):
        generator.close()


async def aclose_generator(generator: AsyncIterator[Any]) -> None:
    """Close an async generator, unless it is the one running (other iterators are left be)."""
    aclose = getattr(generator, "aclose", None)
    if aclose is not None and not getattr(generator, "ag_running", False):
        await aclose()


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


class _ChunkStream(Generic[T]):
    """A stream of typed chunks over one reply, what `Stream` and `AsyncStream` share: the
    reply, its decoder and the stream's lease (the connection, the body and the generator of
    chunks, `aigateway._http.leases`).

    The lease is kept apart so that the stream is in no reference cycle: dropped unclosed, it
    dies at once and hands its lease back, which releases the connection then, or as soon as
    that is safe (`aigateway._http.leases`)."""

    _lease: SyncLease | AsyncLease

    def __init__(
        self,
        response: Response,
        decoder: ChunkDecoder[T],
        body: Any = None,
        head: list[T] | None = None,
        *,
        on_chunk: Callable[[Response, object], None] | None = None,
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


def _head_and_waiting(response: Response, decoder: ChunkDecoder[T], head: list[T]) -> Iterator[T]:
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
        with contextlib.suppress(*read_failures()):  # all chunks are in: a failure is moot
            _drain(raw)
    except read_failures() as exc:
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
        with contextlib.suppress(*read_failures()):  # all chunks are in: a failure is moot
            await _adrain(raw)
    except read_failures() as exc:
        raise decoder.transport_failure(exc) from exc
    finally:
        await lease.release()


class Stream(_ChunkStream[T], SyncChunkIterator[T]):
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


class AsyncStream(_ChunkStream[T], AsyncChunkIterator[T]):
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
