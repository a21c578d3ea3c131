"""Chat completions over the gateway's WebSocket endpoint, ``/v1/stream``.

Frames: the client sends one JSON message, the body of a chat completion request; the server
sends ``chat.completion.chunk`` objects, then ``{"object": "chat.completion.done"}`` or an
Error object, then closes. The frames go through the same sans-io `ChunkDecoder` as
server-sent events, so chunks, errors, the timeouts and the deadline behave alike on both.

Opening a socket is an exchange of the request path (`open_socket`, driven by the pipeline
like any call): the client-side rate limit, a concurrency slot, the handshake (logged like a
reply; a refusal with a status is the same typed error as an HTTP reply, retried by the same
rules), and the frames up to the first chunk; after that, `ChatSocket` / `AsyncChatSocket`
read the rest.

The credential travels as the subprotocol pair (``Authorization``, key). A subprotocol may
hold only token characters (letters, digits and ``!#$%&'*+-.^_`|~``), so a key with others
(``/``, ``=``, ...) is sent as an ``Authorization: Bearer`` header instead. The ``websockets``
logger is handed a view that writes the key as ``<redacted>``. Needs the ``websockets``
package (the ``ws`` extra: ``python -m pip install -e '.[ws]'`` in a checkout); the async
socket runs on asyncio (on another event loop it is refused before anything is sent), the
mock's in-process socket on any.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import AsyncGenerator, Callable, Generator, MutableMapping
from typing import TYPE_CHECKING, Any, NamedTuple

import anyio
import httpx

from aigateway._call.classify import status_error
from aigateway._call.commands import Close, Flow, Slot
from aigateway._call.settings import SecretText
from aigateway._optional import require
from aigateway._pipeline.flow import APICall, Pipeline
from aigateway._streams.streams import AsyncChunkIterator, ChunkDecoder, SyncChunkIterator
from aigateway.errors import APIConnectionError, APIError, APITimeoutError, StreamConnectionError

if TYPE_CHECKING:
    from aigateway._call.timeouts import Deadline
    from aigateway.types.chat import ChatCompletionChunk

__all__ = ["AsyncChatSocket", "ChatSocket", "handshake", "open_socket", "websocket_url"]

AUTH_SUBPROTOCOL = "Authorization"
_TOKEN = re.compile(r"[-!#$%&'*+.^_`|~0-9a-zA-Z]+")
_NOT_FORWARDED = {
    "accept",
    "accept-encoding",
    "authorization",
    "connection",
    "content-length",
    "content-type",
    "host",
    "transfer-encoding",
    "upgrade",
    "user-agent",
}
"""Headers of the HTTP request that do not belong in a WebSocket handshake."""
_MAX_FRAME = 1_048_576 + 1024
"""The largest frame accepted: one event of at most 1 MiB, as for server-sent events."""


def websocket_url(url: httpx.URL) -> str:
    """``http(s)://host/.../v1/stream`` as ``ws(s)://host/.../v1/stream``."""
    scheme = "wss" if url.scheme == "https" else "ws"
    return str(url.copy_with(scheme=scheme))


def handshake(request: httpx.Request) -> tuple[list[str], dict[str, str]]:
    """The subprotocols and headers of the opening handshake for a built request: the key as
    the subprotocol pair when it is a valid token, else as an ``Authorization`` header."""
    headers = {k: v for k, v in request.headers.items() if k.lower() not in _NOT_FORWARDED}
    authorization = SecretText(request.headers.get("authorization", ""))
    scheme, _, key = authorization.partition(" ")
    if scheme.lower() == "bearer" and _TOKEN.fullmatch(key):
        return [AUTH_SUBPROTOCOL, SecretText(key)], headers
    if authorization:
        headers["Authorization"] = authorization
    return [], headers


class _RedactingLogger(logging.LoggerAdapter):  # type: ignore[type-arg]
    """The ``websockets`` logger, with the key replaced by ``<redacted>`` in every line (its
    DEBUG lines show the handshake's headers)."""

    def __init__(self, secret: str) -> None:
        super().__init__(logging.getLogger("websockets.client"), {})
        self._secret = secret

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        if self.isEnabledFor(level):
            msg = self._redact(msg)
            super().log(level, msg, *(self._redact(arg) for arg in args), **kwargs)

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, Any]:
        return msg, kwargs

    def _redact(self, value: object) -> object:
        if not self._secret:
            return value
        text = value if isinstance(value, str) else str(value)
        return text.replace(self._secret, "<redacted>") if self._secret in text else value


# The socket's own I/O, performed by the pipeline's drivers (`perform` sync, `aperform` async).
class Connect(NamedTuple):
    url: str
    options: dict[str, Any]

    def perform(self) -> Any:
        client = require("websockets.sync.client", "ws", "WebSocket streaming")
        # entered by hand: the connection lives on in the socket, closed by its close()
        return client.connect(self.url, **self.options).__enter__()

    async def aperform(self) -> Any:
        client = require("websockets.asyncio.client", "ws", "WebSocket streaming")
        return await client.connect(self.url, **self.options)


class ConnectInProcess(NamedTuple):
    """Open a socket on a transport that serves the gateway in-process (the mock's), which
    offers ``websocket_connect``: no network, no ``websockets`` package needed."""

    connect: Callable[..., Any]
    url: str
    headers: dict[str, str]
    subprotocols: list[str]

    def perform(self) -> Any:
        return self.connect(self.url, self.headers, self.subprotocols, asynchronous=False)

    async def aperform(self) -> Any:
        return self.connect(self.url, self.headers, self.subprotocols, asynchronous=True)


def closed_errors() -> tuple[type[BaseException], ...]:
    """What a connection raises when the server closed it: ``websockets``' error (when the
    package is there) and `ConnectionError` (the in-process socket's)."""
    try:
        from websockets.exceptions import ConnectionClosed
    except ImportError:
        return (ConnectionError,)
    return (ConnectionClosed, ConnectionError)


class SendText(NamedTuple):
    connection: Any
    text: str

    def perform(self) -> None:
        self.connection.send(self.text)

    async def aperform(self) -> None:
        await self.connection.send(self.text)


class Receive(NamedTuple):
    """The next frame; `TimeoutError` after ``timeout`` seconds (None: no limit)."""

    connection: Any
    timeout: float | None

    def perform(self) -> str | bytes:
        message: str | bytes = self.connection.recv(timeout=self.timeout)
        return message

    async def aperform(self) -> str | bytes:
        with anyio.fail_after(self.timeout):
            message: str | bytes = await self.connection.recv()
        return message


def open_socket(
    pipeline: Pipeline,
    call: APICall[Any],
    request: httpx.Request,
    attempts: int,
    slot: Slot,
    deadline: Deadline | None,
) -> Flow[Any]:
    """The exchange of a WebSocket call: handshake, send the request, read up to the first
    chunk; a refusal or a failure before that chunk is an error the retry policy judges."""
    url = websocket_url(request.url)
    subprotocols, headers = handshake(request)
    authorization = SecretText(request.headers.get("authorization", ""))
    socket_request = httpx.Request("GET", url, headers=request.headers)
    options = {
        "subprotocols": subprotocols or None,
        "additional_headers": headers,
        "user_agent_header": request.headers.get("user-agent"),
        "open_timeout": request.extensions.get("timeout", {}).get("connect"),
        "max_size": _MAX_FRAME,
        # no flow control: with a full queue websockets stops reading, and a socket left
        # early would then wait 10 s for a close frame stuck behind unread chunks
        "max_queue": None,
        "logger": _RedactingLogger(authorization.partition(" ")[2]),
    }
    timer = pipeline.stream_timeouts(call).timer(pipeline.retry.monotonic, deadline)
    in_process = getattr(pipeline.transport, "websocket_connect", None)
    if in_process is not None:
        connect: Any = ConnectInProcess(in_process, url, headers, subprotocols)
    else:
        require("websockets.exceptions", "ws", "WebSocket streaming")
        if pipeline.asynchronous:
            _require_asyncio(socket_request)
        connect = Connect(url, options)
    closed = closed_errors()
    try:
        connection = yield connect
    except ImportError:
        raise
    except Exception as exc:
        raise _open_error(pipeline, exc, socket_request, attempts) from exc
    reply = _handshake_reply(connection, socket_request)
    pipeline.received(socket_request, reply, attempts)
    decoder: ChunkDecoder[ChatCompletionChunk] = ChunkDecoder(call.parse, reply, timer=timer)
    head: list[ChatCompletionChunk] = []
    try:
        # a close here is not the end: the frames the server sent before closing say why
        with contextlib.suppress(*closed):
            yield SendText(connection, request.content.decode("utf-8"))
        while not head and not decoder.done:
            try:
                message = yield Receive(connection, decoder.next_wait())
            except TimeoutError as exc:
                raise decoder.stalled() from exc
            except closed as exc:  # before any data: a failed attempt
                raise APIConnectionError(_closed_early(exc), request=socket_request) from exc
            frame_chunk = decoder.feed_frame(message)
            if frame_chunk is not None:
                head.append(frame_chunk)
    except BaseException:
        yield Close(connection)
        raise
    socket_type = AsyncChatSocket if pipeline.asynchronous else ChatSocket
    return socket_type(connection, decoder, head, pipeline.state.observe, slot.take())


def _require_asyncio(request: httpx.Request) -> None:
    """Refuse, before anything is sent, an async socket on an event loop other than asyncio:
    the ``websockets`` library's async client runs on asyncio only."""
    import sniffio

    library = sniffio.current_async_library()
    if library != "asyncio":
        raise APIError(
            f"AsyncClient.chat.completions.connect() needs asyncio (the websockets library's "
            f"async client runs on asyncio only), and this is {library}; nothing was sent. "
            "Use chat.completions.create(stream=True), whose server-sent events work on "
            f"{library} too, or a Client's connect() in a worker thread",
            request=request,
        )


def _handshake_reply(connection: Any, request: httpx.Request) -> httpx.Response:
    """The reply that opened the socket, as an httpx response (status and headers; the
    in-process socket has none: a bare 101)."""
    response: Any = getattr(connection, "response", None)
    status = getattr(response, "status_code", None)
    if response is None or not isinstance(status, int):
        return httpx.Response(101, request=request)
    return httpx.Response(status, headers=list(response.headers.raw_items()), request=request)


def _open_error(
    pipeline: Pipeline, exc: Exception, request: httpx.Request, attempts: int
) -> APIError:
    """The error (and the log line) for a handshake that failed: the status error when the
    server answered, else a connection error."""
    response: Any = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    if isinstance(status, int):
        reply = httpx.Response(
            status,
            headers=list(response.headers.raw_items()),
            content=bytes(getattr(response, "body", b"") or b""),
            request=request,
        )
        pipeline.received(request, reply, attempts)
        return status_error(reply, attempts)
    cls = APITimeoutError if isinstance(exc, TimeoutError) else APIConnectionError
    error = cls(f"could not open the WebSocket {request.url}: {exc!r}", request=request)
    error.__cause__ = exc
    return pipeline.failed(request, error, attempts)


def _closed_early(exc: BaseException) -> str:
    frame = getattr(exc, "rcvd", None)
    if frame is not None:
        return (
            f"the server closed the WebSocket ({frame.code} {frame.reason!r}) before the done frame"
        )
    return f"the WebSocket was cut before the done frame ({exc!r})"


class _SocketBase:
    """What both sockets share: the connection, the frame decoder, the chunks read ahead."""

    def __init__(
        self,
        connection: Any,
        decoder: ChunkDecoder[ChatCompletionChunk],
        head: list[ChatCompletionChunk],
        observe: Callable[[httpx.Response, object], None],
        on_close: Callable[[], object] | None,
    ) -> None:
        self._connection = connection
        self._decoder = decoder
        self._head = head
        self._observe = observe
        self._on_close = on_close
        self._closed_errors = closed_errors()
        self.request = decoder.response.request
        self.url = str(self.request.url)

    @property
    def received(self) -> int:
        """How many chunks have arrived so far."""
        return self._decoder.received

    def _take(self, message: str | bytes) -> ChatCompletionChunk | None:
        chunk = self._decoder.feed_frame(message)
        if chunk is not None and chunk.remaining_credits is not None:
            self._observe(self._decoder.response, chunk)
        return chunk

    def _read_ahead(self) -> list[ChatCompletionChunk]:
        head, self._head = self._head, []
        for chunk in head:
            if chunk.remaining_credits is not None:
                self._observe(self._decoder.response, chunk)
        return head

    def _failure(self, exc: BaseException) -> APIError | None:
        """Our error for a failed wait for a frame: a stall, or a close before the done frame."""
        if isinstance(exc, TimeoutError):
            return self._decoder.stalled()
        if isinstance(exc, (*self._closed_errors, OSError)):
            return self._decoder.incomplete(_closed_early(exc), StreamConnectionError)
        return None

    def _closed(self) -> None:
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close()


class ChatSocket(_SocketBase, SyncChunkIterator["ChatCompletionChunk"]):
    """A chat completion streamed over the WebSocket: iterate it for the chunks; use it in a
    ``with`` block, which closes the connection."""

    def _iterate(self) -> Generator[ChatCompletionChunk, None, None]:
        decoder = self._decoder
        try:
            yield from self._read_ahead()
            while not decoder.done:
                try:
                    message = self._connection.recv(timeout=decoder.next_wait())
                except Exception as exc:
                    error = self._failure(exc)
                    if error is None:
                        raise
                    raise error from exc
                chunk = self._take(message)
                if chunk is not None:
                    yield chunk
        finally:
            self._release()

    def _release(self) -> None:
        try:
            self._connection.close()
        finally:
            self._closed()


class AsyncChatSocket(_SocketBase, AsyncChunkIterator["ChatCompletionChunk"]):
    """`ChatSocket` for async code (asyncio): ``async for`` and ``async with``."""

    async def _iterate(self) -> AsyncGenerator[ChatCompletionChunk, None]:
        decoder = self._decoder
        try:
            for early in self._read_ahead():
                yield early
            while not decoder.done:
                try:
                    with anyio.fail_after(decoder.next_wait()):
                        message = await self._connection.recv()
                except Exception as exc:
                    error = self._failure(exc)
                    if error is None:
                        raise
                    raise error from exc
                chunk = self._take(message)
                if chunk is not None:
                    yield chunk
        finally:
            with anyio.CancelScope(shield=True):
                await self._release()

    async def _release(self) -> None:
        try:
            await self._connection.close()
        finally:
            self._closed()
