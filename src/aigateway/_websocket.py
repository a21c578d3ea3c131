"""Chat completions over the gateway's WebSocket endpoint, ``/v1/stream`` (spec section 4).

Frames (design section 2): the client sends one JSON message, the body of a chat completion
request; the server sends ``chat.completion.chunk`` objects, then ``{"object":
"chat.completion.done"}`` or an Error object, then closes. The frames go through the same
sans-io `ChunkDecoder` as server-sent events, so chunks, errors, the idle timeout and the
deadline behave alike on both transports.

The credential travels as the subprotocol pair (``Authorization``, key). A subprotocol may
hold only token characters (RFC 6455, RFC 2616: letters, digits and ``!#$%&'*+-.^_`|~``), so
a key with others (``/``, ``=``, ...) is sent as an ``Authorization: Bearer`` header instead.
The request is built by the pipeline's pure `BasePipeline.build_request` (headers, options,
``extra_body``), so a socket carries what an HTTP call would. Needs the ``websockets``
package (``pip install 'aigateway[ws]'``); the async socket runs on asyncio.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncGenerator, Generator, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import anyio
import httpx

from ._http import APICall, BasePipeline, make_status_error
from ._optional import require
from ._streaming import AsyncChunkIterator, ChunkDecoder, SyncChunkIterator, chunk_decoder
from .errors import APIConnectionError, APIError, IncompleteStreamError

if TYPE_CHECKING:
    from .types.chat import ChatCompletionChunk

__all__ = ["AsyncChatSocket", "ChatSocket", "handshake", "websocket_url"]

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
    authorization = request.headers.get("authorization", "")
    scheme, _, key = authorization.partition(" ")
    if scheme.lower() == "bearer" and _TOKEN.fullmatch(key):
        return [AUTH_SUBPROTOCOL, key], headers
    headers["Authorization"] = authorization
    return [], headers


class _SocketBase:
    """What both sockets share: the request, the frame decoder, translating failures."""

    _closed_type: type[Exception]

    def __init__(self, pipeline: BasePipeline, call: APICall[Any]) -> None:
        request = pipeline.build_request(replace(call, method="GET", path="stream"))
        self.url = websocket_url(request.url)
        self.request = httpx.Request("GET", self.url, headers=request.headers)
        self._message = request.content.decode("utf-8")
        self._subprotocols, self._headers = handshake(request)
        self._user_agent = request.headers.get("user-agent")
        timeout = request.extensions.get("timeout", {})
        self._open_timeout: float | None = timeout.get("connect")
        response = httpx.Response(101, request=self.request)
        self._decoder: ChunkDecoder[ChatCompletionChunk] = chunk_decoder(
            call.parse, response, call.options
        )
        self._observe = pipeline.state.observe
        self._response = response

    @property
    def received(self) -> int:
        """How many chunks have arrived so far."""
        return self._decoder.received

    def _connect_options(self) -> dict[str, Any]:
        return {
            "subprotocols": self._subprotocols or None,
            "additional_headers": self._headers,
            "user_agent_header": self._user_agent,
            "open_timeout": self._open_timeout,
            "max_size": _MAX_FRAME,
            # no flow control: with a full queue websockets stops reading, and a socket left
            # early would then wait 10 s for a close frame stuck behind unread chunks
            "max_queue": None,
        }

    def _open_error(self, exc: Exception) -> APIError:
        """The error for a handshake that failed: a status error when the server answered."""
        response: Any = getattr(exc, "response", None)
        status = getattr(response, "status_code", None)
        if isinstance(status, int):
            reply = httpx.Response(
                status,
                headers=list(response.headers.raw_items()),
                content=bytes(getattr(response, "body", b"") or b""),
                request=self.request,
            )
            reply.read()
            return make_status_error(reply)
        error = APIConnectionError(
            f"could not open the WebSocket {self.url}: {exc!r}", request=self.request
        )
        error.__cause__ = exc
        return error

    def _closed_early(self, exc: Exception) -> IncompleteStreamError:
        """The error for a connection closed before the done frame."""
        frame = getattr(exc, "rcvd", None)
        why = (
            f"the server closed the WebSocket ({frame.code} {frame.reason!r}) before the done frame"
            if frame is not None
            else f"the WebSocket was cut before the done frame ({exc!r})"
        )
        error = self._decoder.incomplete(why)
        error.__cause__ = exc
        return error

    @contextlib.contextmanager
    def _receiving(self) -> Iterator[None]:
        """Around a wait for a frame: a timeout is a stall, a close before the done frame a cut."""
        try:
            yield
        except TimeoutError as exc:
            raise self._decoder.stalled() from exc
        except self._closed_type as exc:
            raise self._closed_early(exc) from exc

    def _take(self, message: str | bytes) -> ChatCompletionChunk | None:
        chunk = self._decoder.feed_frame(message)
        if chunk is not None and chunk.remaining_credits is not None:
            self._observe(self._response, chunk)
        return chunk


class ChatSocket(_SocketBase, SyncChunkIterator["ChatCompletionChunk"]):
    """A chat completion streamed over the WebSocket: iterate it for the chunks; use it in a
    ``with`` block, which closes the connection."""

    def __init__(self, pipeline: BasePipeline, call: APICall[Any]) -> None:
        super().__init__(pipeline, call)
        client = require("websockets.sync.client", "ws", "WebSocket streaming")
        exceptions = require("websockets.exceptions", "ws", "WebSocket streaming")
        self._closed_type = exceptions.ConnectionClosed
        try:
            # entered by hand: the connection lives on in this object, closed by close()
            self._connection = client.connect(self.url, **self._connect_options()).__enter__()
        except (OSError, TimeoutError, exceptions.WebSocketException) as exc:
            raise self._open_error(exc) from exc
        with contextlib.suppress(exceptions.ConnectionClosed):  # its frames say why: read them
            self._connection.send(self._message)

    def _iterate(self) -> Generator[ChatCompletionChunk, None, None]:
        decoder = self._decoder
        try:
            while not decoder.done:
                with self._receiving():
                    message = self._connection.recv(timeout=decoder.next_wait())
                chunk = self._take(message)
                if chunk is not None:
                    yield chunk
        finally:
            self._connection.close()

    def _release(self) -> None:
        self._connection.close()


class AsyncChatSocket(_SocketBase, AsyncChunkIterator["ChatCompletionChunk"]):
    """`ChatSocket` for async code (asyncio): ``async for`` and ``async with``."""

    _connection: Any

    @classmethod
    async def open(cls, pipeline: BasePipeline, call: APICall[Any]) -> AsyncChatSocket:
        """Connect and send the request."""
        socket = cls(pipeline, call)
        client = require("websockets.asyncio.client", "ws", "WebSocket streaming")
        exceptions = require("websockets.exceptions", "ws", "WebSocket streaming")
        socket._closed_type = exceptions.ConnectionClosed
        try:
            socket._connection = await client.connect(socket.url, **socket._connect_options())
        except (OSError, TimeoutError, exceptions.WebSocketException) as exc:
            raise socket._open_error(exc) from exc
        with contextlib.suppress(exceptions.ConnectionClosed):  # its frames say why: read them
            await socket._connection.send(socket._message)
        return socket

    async def _iterate(self) -> AsyncGenerator[ChatCompletionChunk, None]:
        decoder = self._decoder
        try:
            while not decoder.done:
                with self._receiving(), anyio.fail_after(decoder.next_wait()):
                    message = await self._connection.recv()
                chunk = self._take(message)
                if chunk is not None:
                    yield chunk
        finally:
            with anyio.CancelScope(shield=True):
                await self._connection.close()

    async def _release(self) -> None:
        await self._connection.close()
