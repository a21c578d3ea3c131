"""The mock gateway as an ASGI application, for uvicorn or any ASGI server.

It wraps the same sans-io `GatewayState.handle` as the in-process transport, so a gateway
served over a socket has exactly the state and behaviour of the in-process one, and acts its
delivery faults out for real: an injected latency and the stream pacing are waited with
``anyio.sleep``, a dropped connection is closed without a reply (or in the middle of one), and
``/v1/stream`` is the WebSocket endpoint (see `aigateway.testing._serving.websocket`).
``handle`` runs in a worker thread, so a slow handler never blocks the server's event loop.

What a connection may hold is bounded (`aigateway.testing._serving.connections`): a body must
arrive within ``limits.request_body`` seconds (else a 408 and the connection is closed), a body over
``limits.free_body_bytes`` is read only within the `BodyBudget` and holds its share until the
gateway has answered, and a WebSocket client must send its message within
``limits.websocket_idle`` seconds (else the server closes it, code 1008).

Closing a connection is not part of ASGI: the server passes a callable that does it as the
scope extension ``aigateway.cut`` (`aigateway.testing._serving.server` adds it to uvicorn).
Without it a drop is left to the server: `ConnectionDropped` is raised to it.

A client that leaves (a stream it stopped reading, a timeout) is noticed at once: the reply
stops, its body is closed (so it stops counting as in flight for the rate limits) and nothing
more is written to the dead socket.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import anyio.to_thread

from aigateway.testing._core.faults import ConnectionDropped, FaultyResponse
from aigateway.testing._core.pacing import PacedBody, held_pacing
from aigateway.testing._core.wire import (
    MockRequest,
    MockResponse,
    bearer_key,
    close_body,
    declared_length,
    error_response,
)
from aigateway.testing._serving.connections import BodyBudget, ConnectionLimits, Reservation
from aigateway.testing._serving.websocket import (
    POLICY_VIOLATION,
    WebSocketSession,
    error_frame,
    event_frame,
)

if TYPE_CHECKING:
    from aigateway.testing._core.state import GatewayState

__all__ = ["CUT_EXTENSION", "MockASGIApp"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
WEBSOCKET_PATH = "/v1/stream"
CUT_EXTENSION = "aigateway.cut"
"""The scope extension under which a server passes a callable that closes the connection."""
_DROPPED_CLOSE = 1011
"""The WebSocket close code for a dropped connection (RFC 6455: the server hit a problem)."""
_CUT_GRACE = 1.0
"""Seconds to wait for the server to notice a connection it was asked to close."""
_PIECE_BYTES = 64 * 1024
"""A whole body larger than this is sent in pieces of this size."""


def _headers(scope: Scope) -> dict[str, str]:
    return {name.decode("latin-1").lower(): value.decode("latin-1")
            for name, value in scope.get("headers", [])}  # fmt: skip


def _mock_request(scope: Scope, headers: dict[str, str], body: bytes) -> MockRequest:
    raw_path = scope.get("raw_path")
    path = raw_path.decode("ascii") if raw_path else scope["path"]
    query = scope.get("query_string", b"").decode("latin-1")
    return MockRequest(scope["method"], path.partition("?")[0], headers, body, query)


class _Reply:
    """A reply as the server delivers it: the response, and the paced body whose waits this
    layer acts out (pacing is held while handling, as in the in-process transport)."""

    def __init__(self, response: MockResponse, paced: PacedBody | None) -> None:
        self.response = response
        self._paced = paced
        faulty = response if isinstance(response, FaultyResponse) else None
        self.dropped = faulty is not None and faulty.drop
        self._latency = faulty.latency if faulty is not None else 0.0
        self._chunk_latency = faulty.chunk_latency if faulty is not None else 0.0

    @property
    def is_plain(self) -> bool:
        """A small whole body, delivered at once: no fault, no wait, no stream."""
        body = self.response.body
        return (
            not (self.dropped or self._latency)
            and isinstance(body, bytes)
            and len(body) <= _PIECE_BYTES
        )

    async def wait_latency(self) -> None:
        """The injected delay before the reply, if any."""
        if self._latency:
            await anyio.sleep(self._latency)

    async def send_events(self, emit: Callable[[bytes], Awaitable[None]]) -> None:
        """Emit a streamed body's events, each after its waits; a cut raises
        `ConnectionDropped`. Each event is followed by a checkpoint, so a client that left is
        noticed before the next write."""
        body = self.response.body
        assert not isinstance(body, bytes)
        while True:
            if self._chunk_latency:
                await anyio.sleep(self._chunk_latency)
            delay = self._paced.next_delay if self._paced is not None else 0.0
            if delay and self._paced is not None:
                await self._paced.pacing.async_sleep(delay)
            try:
                event = next(body)
            except StopIteration:
                return
            await emit(event)
            await anyio.lowlevel.checkpoint()

    def close(self) -> None:
        close_body(self.response.body)


class MockASGIApp:
    """An ASGI app serving a mock gateway's state (HTTP and the ``/v1/stream`` WebSocket),
    within ``limits``."""

    def __init__(self, state: GatewayState, limits: ConnectionLimits | None = None) -> None:
        self.state = state
        self.limits = limits if limits is not None else ConnectionLimits()
        self.bodies = BodyBudget(self.limits.body_bytes_in_flight, self.limits.free_body_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
        elif scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})

    async def _handle(self, request: MockRequest) -> _Reply:
        with held_pacing() as held:  # the worker thread runs in a copy of this context
            response = await anyio.to_thread.run_sync(self.state.handle, request)
        return _Reply(response, held[-1] if held else None)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = _headers(scope)
        reservation = self.bodies.reservation(bearer_key(headers))
        try:
            try:
                with anyio.fail_after(self.limits.request_body):
                    body = await _read_body(
                        headers, receive, self.state.guard.max_body_bytes, reservation
                    )
            except TimeoutError:
                await _send_http(_Reply(self._late_body(), None), send)
                return
            if body is None:
                return
            reply = await self._handle(_mock_request(scope, headers, body))
            del body  # the request's bytes go when the gateway is done with them
        finally:
            reservation.release()
        await self._send_reply(scope, receive, send, reply)

    async def _send_reply(self, scope: Scope, receive: Receive, send: Send, reply: _Reply) -> None:
        if reply.is_plain:  # two sends that never wait: nothing to watch for a disconnect
            await _send_http(reply, send)
            return
        cut: Callable[[], None] | None = scope.get("extensions", {}).get(CUT_EXTENSION)

        async def deliver() -> None:
            try:
                await _send_http(reply, send)
            except ConnectionDropped:
                if cut is None:
                    raise
                cut()
                with anyio.move_on_after(_CUT_GRACE):
                    await anyio.sleep_forever()  # until the server has seen it closed

        await _until_disconnect(receive, "http.disconnect", reply, deliver)

    def _late_body(self) -> MockResponse:
        seconds = self.limits.request_body
        return error_response(
            408,
            f"the request body did not arrive within {seconds:g} s",
            "invalid_request_error",
            "request_timeout",
            headers={"connection": "close"},
        )

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (await receive())["type"] != "websocket.connect":
            return
        if scope["path"] != WEBSOCKET_PATH:
            await send({"type": "websocket.close", "code": 1008, "reason": "no such endpoint"})
            return
        session = WebSocketSession(self.state, _headers(scope), scope.get("subprotocols", []))
        await send({"type": "websocket.accept", "subprotocol": session.subprotocol})
        refusal = session.refusal()
        if refusal is not None:
            frame, reason = refusal
            await send({"type": "websocket.send", "text": frame})
            await send({"type": "websocket.close", "code": POLICY_VIOLATION, "reason": reason})
            return
        message: Message | None = None
        with anyio.move_on_after(self.limits.websocket_idle):
            message = await receive()
        if message is None:
            seconds = self.limits.websocket_idle
            reason = f"no message within {seconds:g} s of the handshake"
            await send({"type": "websocket.close", "code": POLICY_VIOLATION, "reason": reason})
            return
        if message["type"] != "websocket.receive":
            return
        reply = await self._handle(session.request(message.get("text") or message["bytes"]))

        async def deliver() -> None:
            try:
                await _send_websocket(reply, send)
                await send({"type": "websocket.close", "code": 1000})
            except ConnectionDropped:
                reason = "connection dropped (injected fault)"
                await send({"type": "websocket.close", "code": _DROPPED_CLOSE, "reason": reason})

        # a client that leaves early is seen at once, and its close handshake answered
        await _until_disconnect(receive, "websocket.disconnect", reply, deliver)


async def _read_body(
    headers: dict[str, str], receive: Receive, limit: int, reservation: Reservation
) -> bytes | None:
    """The request's body, or None when the client left. Reading stops past ``limit`` bytes,
    and does not start when ``Content-Length`` declares more: the gateway answers 413. A body
    is covered by ``reservation`` before it is read: its declared length, or the limit once a
    body without one outgrows what the budget lets go free."""
    declared = declared_length(headers)
    if declared > limit:
        return b""
    await reservation.cover(declared)
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        body += message.get("body", b"")
        if not declared:
            await reservation.cover_growing(len(body), limit)
        if len(body) > limit or not message.get("more_body"):
            return bytes(body)


async def _send_http(reply: _Reply, send: Send) -> None:
    if reply.dropped:
        raise ConnectionDropped("connection dropped before the reply (injected fault)")
    await reply.wait_latency()
    response = reply.response
    headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in response.headers.items()]
    if isinstance(response.body, bytes):
        headers.append((b"content-length", str(len(response.body)).encode()))
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    if isinstance(response.body, bytes):
        # a large body in pieces: each waits for the client to take the last, so a client
        # that reads nothing holds a piece in the server's memory, not the whole reply
        whole = memoryview(response.body)
        for start in range(0, len(whole), _PIECE_BYTES):
            piece = bytes(whole[start : start + _PIECE_BYTES])
            more = start + _PIECE_BYTES < len(whole)
            await send({"type": "http.response.body", "body": piece, "more_body": more})
        if not whole:
            await send({"type": "http.response.body", "body": b""})
        return

    async def emit(event: bytes) -> None:
        await send({"type": "http.response.body", "body": event, "more_body": True})

    await reply.send_events(emit)
    await send({"type": "http.response.body", "body": b""})


async def _send_websocket(reply: _Reply, send: Send) -> None:
    if reply.dropped:
        raise ConnectionDropped("connection dropped before the reply (injected fault)")
    await reply.wait_latency()
    if isinstance(reply.response.body, bytes):
        await send({"type": "websocket.send", "text": error_frame(reply.response)})
        return

    async def emit(event: bytes) -> None:
        await send({"type": "websocket.send", "text": event_frame(event)})

    await reply.send_events(emit)


async def _until_disconnect(
    receive: Receive, disconnect: str, reply: _Reply, deliver: Callable[[], Awaitable[None]]
) -> None:
    """Run ``deliver`` (which sends ``reply``) until it ends or the client leaves (its
    ``disconnect`` message arrives), then close the reply."""
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_stop_on_disconnect, receive, disconnect, tasks.cancel_scope)
            await deliver()
            tasks.cancel_scope.cancel()
    finally:
        reply.close()


async def _stop_on_disconnect(receive: Receive, disconnect: str, scope: anyio.CancelScope) -> None:
    while (await receive())["type"] != disconnect:
        pass
    scope.cancel()
