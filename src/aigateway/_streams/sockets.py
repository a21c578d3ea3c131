"""Chat sockets: a chat completion streamed over the gateway's WebSocket, read frame by frame.

The server answers the request frame with ``chat.completion.chunk`` objects, then
``{"object": "chat.completion.done"}`` or an Error object, then closes. Each frame goes
through the socket's sans-io `ChunkDecoder` (`aigateway._streams.chunks`), the one server-sent
events go through, so chunks, errors, the timeouts and the deadline behave alike on both.

`SocketChunks` / `AsyncSocketChunks` are an open socket's I/O: they write the request frame
and read the chunks, waiting for each frame at most as long as the stream's timers allow. The
request path uses them through its own commands while it opens the socket (`Write` the
request, `Next` up to the first chunk, `aigateway._streams.websocket`), so a failure before any
data reaches the caller is a failed attempt like any other; `ChatSocket` / `AsyncChatSocket`,
what the caller gets, read the rest from them and close the connection at the end.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Generator
from typing import TYPE_CHECKING, Any, NoReturn

import anyio

from aigateway._streams.chunks import ChunkDecoder
from aigateway._streams.streams import AsyncChunkIterator, SyncChunkIterator
from aigateway.errors import APIConnectionError, StreamConnectionError

if TYPE_CHECKING:
    from aigateway._stacks import Response
    from aigateway.types.chat import ChatCompletionChunk

__all__ = ["AsyncChatSocket", "AsyncSocketChunks", "ChatSocket", "SocketChunks", "closed_errors"]


def closed_errors() -> tuple[type[BaseException], ...]:
    """What a connection raises when the server closed it: ``websockets``' error (when the
    package is there) and `ConnectionError` (the in-process socket's)."""
    try:
        from websockets.exceptions import ConnectionClosed
    except ImportError:
        return (ConnectionError,)
    return (ConnectionClosed, ConnectionError)


def _closed_early(exc: BaseException) -> str:
    frame = getattr(exc, "rcvd", None)
    if frame is not None:
        return (
            f"the server closed the WebSocket ({frame.code} {frame.reason!r}) before the done frame"
        )
    return f"the WebSocket was cut before the done frame ({exc!r})"


class _SocketIO:
    """What both kinds of socket I/O share: the connection, its decoder, the chunk read ahead,
    and all that is not I/O: handing out a chunk, the end, the error for a failed read."""

    __slots__ = ("_closed", "ahead", "connection", "decoder", "observe")

    _stop: type[Exception]
    """What ends the iteration: `StopIteration`, or `StopAsyncIteration`."""

    def __init__(self, connection: Any, decoder: ChunkDecoder[ChatCompletionChunk]) -> None:
        self.connection = connection
        """The open connection (``send``, ``recv``, ``close``)."""
        self.decoder = decoder
        self.ahead: ChatCompletionChunk | None = None
        """The chunk read while the socket was being opened, not handed out yet."""
        self.observe: Callable[[Response, object], None] | None = None
        """Notes a chunk's credits (the client's), set once the socket is handed to the caller;
        None while it is being opened."""
        self._closed = closed_errors()

    def _ready(self) -> ChatCompletionChunk | None:
        """The chunk read ahead, if any; None when the next one must be read. Stops at the end."""
        chunk = self.ahead
        if chunk is not None:
            self.ahead = None
            return self._handed(chunk)
        if self.decoder.done:
            raise self._stop
        return None

    def _chunk_of(self, message: str | bytes) -> ChatCompletionChunk:
        """The chunk of a frame; the done frame stops the iteration."""
        chunk = self.decoder.feed_frame(message)
        if chunk is None:
            raise self._stop
        return self._handed(chunk)

    def _handed(self, chunk: ChatCompletionChunk) -> ChatCompletionChunk:
        """A chunk handed to the caller: its credits noted (once the socket is handed over)."""
        observe = self.observe
        if observe is not None and chunk.remaining_credits is not None:
            observe(self.decoder.response, chunk)
        return chunk

    def _fail(self, exc: Exception) -> NoReturn:
        """Raise our error for a wait for a frame that failed: a stall, or a close before the
        done frame (while opening, a failed attempt for the retry policy to judge; after, a
        stream cut short, with the chunks received); anything else as it is."""
        decoder = self.decoder
        if isinstance(exc, TimeoutError):
            raise decoder.stalled() from exc
        if isinstance(exc, (*self._closed, OSError)):
            why = _closed_early(exc)
            if self.observe is None:  # still opening: nothing reached the caller
                raise APIConnectionError(why, request=decoder.response.request) from exc
            raise decoder.incomplete(why, StreamConnectionError) from exc
        raise exc


class SocketChunks(_SocketIO):
    """A blocking socket's I/O: `write` the request frame, iterate for the chunks."""

    __slots__ = ()
    _stop = StopIteration

    def write(self, data: bytes) -> None:
        self.connection.send(data.decode("utf-8"))

    def __iter__(self) -> SocketChunks:
        return self

    def __next__(self) -> ChatCompletionChunk:
        chunk = self._ready()
        if chunk is None:
            try:
                message = self.connection.recv(timeout=self.decoder.next_wait())
            except Exception as exc:
                self._fail(exc)
            chunk = self._chunk_of(message)
        return chunk


class AsyncSocketChunks(_SocketIO):
    """`SocketChunks` for an async socket: ``await write()``, ``async for``."""

    __slots__ = ()
    _stop = StopAsyncIteration

    async def write(self, data: bytes) -> None:
        await self.connection.send(data.decode("utf-8"))

    def __aiter__(self) -> AsyncSocketChunks:
        return self

    async def __anext__(self) -> ChatCompletionChunk:
        chunk = self._ready()
        if chunk is None:
            try:
                with anyio.fail_after(self.decoder.next_wait()):
                    message = await self.connection.recv()
            except Exception as exc:
                self._fail(exc)
            chunk = self._chunk_of(message)
        return chunk


class _SocketBase:
    """What both sockets share: the connection's I/O and decoder, the release of its slot."""

    def __init__(
        self,
        chunks: SocketChunks | AsyncSocketChunks,
        observe: Callable[[Response, object], None],
        on_close: Callable[[], object] | None,
    ) -> None:
        """``chunks``: the socket's I/O, opened by the request path; ``observe``: notes the
        credits of the chunks handed out; ``on_close``: run once, when the socket is closed."""
        chunks.observe = observe
        self._chunks = chunks
        self._connection = chunks.connection
        self._decoder = chunks.decoder
        self._on_close = on_close
        self.request = chunks.decoder.response.request
        self.url = str(self.request.url)

    @property
    def received(self) -> int:
        """How many chunks have arrived so far."""
        return self._decoder.received

    def _closed(self) -> None:
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close()


class ChatSocket(_SocketBase, SyncChunkIterator["ChatCompletionChunk"]):
    """A chat completion streamed over the WebSocket: iterate it for the chunks; use it in a
    ``with`` block, which closes the connection."""

    _chunks: SocketChunks

    def _iterate(self) -> Generator[ChatCompletionChunk, None, None]:
        try:
            yield from self._chunks
        finally:
            self._release()

    def _release(self) -> None:
        try:
            self._connection.close()
        finally:
            self._closed()


class AsyncChatSocket(_SocketBase, AsyncChunkIterator["ChatCompletionChunk"]):
    """`ChatSocket` for async code (asyncio): ``async for`` and ``async with``."""

    _chunks: AsyncSocketChunks

    async def _iterate(self) -> AsyncGenerator[ChatCompletionChunk, None]:
        try:
            async for chunk in self._chunks:
                yield chunk
        finally:
            with anyio.CancelScope(shield=True):
                await self._release()

    async def _release(self) -> None:
        try:
            await self._connection.close()
        finally:
            self._closed()
