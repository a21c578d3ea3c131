"""Chat completions over the gateway's WebSocket endpoint, ``/v1/stream``: opening a socket.

Frames: the client sends one JSON message, the body of a chat completion request; the server
sends ``chat.completion.chunk`` objects, then ``{"object": "chat.completion.done"}`` or an
Error object, then closes.

Opening a socket is an exchange of the request path (`open_socket`, driven by the pipeline
like any call, in the commands every call uses): the client-side rate limit, a concurrency
slot, the handshake (`aigateway._streams.handshake`; logged like a reply, and a refusal with
a status is the same typed error as an HTTP reply, retried by the same rules), the request
frame, and the frames up to the first chunk; after that, `ChatSocket` / `AsyncChatSocket`
(`aigateway._streams.sockets`) read the rest.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Protocol

from aigateway._call.classify import status_error
from aigateway._call.commands import Close, Flow, Next, Slot, Write
from aigateway._optional import require
from aigateway._stacks import DEFAULT_STACK, get, stack_of
from aigateway._streams.chunks import ChunkDecoder
from aigateway._streams.handshake import (
    Connect,
    connect_options,
    handshake,
    handshake_reply,
    refused_reply,
    require_asyncio,
    websocket_url,
)
from aigateway._streams.sockets import (
    AsyncChatSocket,
    AsyncSocketChunks,
    ChatSocket,
    SocketChunks,
    closed_errors,
)
from aigateway.errors import APIConnectionError, APIError, APITimeoutError

if TYPE_CHECKING:
    from collections.abc import Callable

    from aigateway._call.call import APICall
    from aigateway._call.timeouts import Deadline, StreamTimeouts
    from aigateway._stacks import Request, Response
    from aigateway.types.chat import ChatCompletionChunk

__all__ = ["RequestPath", "open_socket"]


class _Clock(Protocol):
    @property
    def monotonic(self) -> Callable[[], float]: ...


class _Credits(Protocol):
    def observe(self, response: Response, parsed: object) -> None: ...


class RequestPath(Protocol):
    """What opening a socket asks of the request path (`aigateway._pipeline.flow.Pipeline`):
    its settings, book-keeping and logging, named here so that this layer imports none of it."""

    @property
    def asynchronous(self) -> bool: ...
    @property
    def transport(self) -> Any: ...
    @property
    def retry(self) -> _Clock: ...
    @property
    def state(self) -> _Credits: ...

    def stream_timeouts(self, call: APICall[Any]) -> StreamTimeouts: ...

    def received(self, request: Request, response: Response, attempts: int) -> Any: ...

    def failed(self, request: Request, exc: Exception, attempts: int) -> APIError: ...


def open_socket(
    pipeline: RequestPath,
    call: APICall[Any],
    request: Request,
    attempts: int,
    slot: Slot,
    deadline: Deadline | None,
) -> Flow[Any]:
    """The exchange of a WebSocket call: handshake, send the request, read up to the first
    chunk; a refusal or a failure before that chunk is an error the retry policy judges."""
    url = websocket_url(request.url)
    subprotocols, headers = handshake(request)
    stack = stack_of(request) or get(DEFAULT_STACK)
    socket_request = stack.Request("GET", url, headers=request.headers)
    timer = pipeline.stream_timeouts(call).timer(pipeline.retry.monotonic, deadline)
    in_process = getattr(pipeline.transport, "websocket_connect", None)
    options: dict[str, Any] = {}
    if in_process is None:
        require("websockets.exceptions", "ws", "WebSocket streaming")
        if pipeline.asynchronous:
            require_asyncio(socket_request)
        options = connect_options(request, subprotocols, headers)
    try:
        connection = yield Connect(url, headers, subprotocols, options, in_process)
    except ImportError:
        raise
    except Exception as exc:
        raise _open_error(pipeline, exc, socket_request, attempts) from exc
    reply = handshake_reply(connection, socket_request)
    pipeline.received(socket_request, reply, attempts)
    decoder: ChunkDecoder[ChatCompletionChunk] = ChunkDecoder(call.parse, reply, timer=timer)
    chunks = (AsyncSocketChunks if pipeline.asynchronous else SocketChunks)(connection, decoder)
    try:
        # a close here is not the end: the frames the server sent before closing say why
        with contextlib.suppress(*closed_errors()):
            yield Write(chunks, request.content)
        while chunks.ahead is None and not decoder.done:
            chunks.ahead = yield Next(chunks)  # a failure is ours already (`SocketChunks`)
    except BaseException:
        yield Close(connection)
        raise
    if isinstance(chunks, AsyncSocketChunks):
        return AsyncChatSocket(chunks, pipeline.state.observe, slot.take())
    return ChatSocket(chunks, pipeline.state.observe, slot.take())


def _open_error(pipeline: RequestPath, exc: Exception, request: Request, attempts: int) -> APIError:
    """The error (and the log line) for a handshake that failed: the status error when the
    server answered, else a connection error."""
    reply = refused_reply(exc, request)
    if reply is not None:
        pipeline.received(request, reply, attempts)
        return status_error(reply, attempts)
    cls = APITimeoutError if isinstance(exc, TimeoutError) else APIConnectionError
    error = cls(f"could not open the WebSocket {request.url}: {exc!r}", request=request)
    error.__cause__ = exc
    return pipeline.failed(request, error, attempts)
