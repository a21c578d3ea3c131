"""The mock gateway as an ASGI application, for uvicorn or any ASGI server.

It wraps the same sans-io `MockGateway.handle` as the in-process transport, so a gateway
served over a socket has exactly the state and behaviour of the in-process one: whole replies
are sent at once, streamed replies event by event (paced ones wait with ``anyio.sleep``), and
``/v1/stream`` is the WebSocket endpoint (see `aigateway.testing._ws`). ``handle`` runs in a
worker thread, so a slow handler never blocks the server's event loop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from ._pacing import aiter_body
from ._wire import MockRequest, MockResponse, declared_length
from ._ws import POLICY_VIOLATION, WebSocketSession, error_frame, event_frame

if TYPE_CHECKING:
    from ._gateway import MockGateway

__all__ = ["MockASGIApp"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
WEBSOCKET_PATH = "/v1/stream"


def _headers(scope: Scope) -> dict[str, str]:
    return {name.decode("latin-1").lower(): value.decode("latin-1")
            for name, value in scope.get("headers", [])}  # fmt: skip


def _mock_request(scope: Scope, body: bytes) -> MockRequest:
    raw_path = scope.get("raw_path")
    path = raw_path.decode("ascii") if raw_path else scope["path"]
    query = scope.get("query_string", b"").decode("latin-1")
    return MockRequest(scope["method"], path.partition("?")[0], _headers(scope), body, query)


class MockASGIApp:
    """An ASGI app serving a `MockGateway` (HTTP and the ``/v1/stream`` WebSocket)."""

    def __init__(self, gateway: MockGateway) -> None:
        self.gateway = gateway

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
        elif scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})

    async def _handle(self, request: MockRequest) -> MockResponse:
        return await anyio.to_thread.run_sync(self.gateway.handle, request)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = await _read_body(scope, receive, self.gateway.max_body_bytes)
        if body is None:
            return
        response = await self._handle(_mock_request(scope, body))
        headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in response.headers.items()]
        if isinstance(response.body, bytes):
            headers.append((b"content-length", str(len(response.body)).encode()))
        await send({"type": "http.response.start", "status": response.status, "headers": headers})
        if isinstance(response.body, bytes):
            await send({"type": "http.response.body", "body": response.body})
            return
        async for event in aiter_body(response.body):
            await send({"type": "http.response.body", "body": event, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (await receive())["type"] != "websocket.connect":
            return
        if scope["path"] != WEBSOCKET_PATH:
            await send({"type": "websocket.close", "code": 1008, "reason": "no such endpoint"})
            return
        session = WebSocketSession(self.gateway, _headers(scope), scope.get("subprotocols", []))
        await send({"type": "websocket.accept", "subprotocol": session.subprotocol})
        refusal = session.refusal()
        if refusal is not None:
            frame, reason = refusal
            await send({"type": "websocket.send", "text": frame})
            await send({"type": "websocket.close", "code": POLICY_VIOLATION, "reason": reason})
            return
        message = await receive()
        if message["type"] != "websocket.receive":
            return
        response = await self._handle(session.request(message.get("text") or message["bytes"]))
        async with anyio.create_task_group() as tasks:
            # a client that leaves early is seen at once, and its close handshake answered
            tasks.start_soon(_stop_on_disconnect, receive, tasks.cancel_scope)
            if isinstance(response.body, bytes):
                await send({"type": "websocket.send", "text": error_frame(response)})
            else:
                async for event in aiter_body(response.body):
                    await send({"type": "websocket.send", "text": event_frame(event)})
            await send({"type": "websocket.close", "code": 1000})
            tasks.cancel_scope.cancel()


async def _read_body(scope: Scope, receive: Receive, limit: int) -> bytes | None:
    """The request's body, or None when the client left. Reading stops past ``limit`` bytes,
    and does not start when ``Content-Length`` declares more: the gateway answers 413."""
    if declared_length(_headers(scope)) > limit:
        return b""
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        body += message.get("body", b"")
        if len(body) > limit or not message.get("more_body"):
            return bytes(body)


async def _stop_on_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    while (await receive())["type"] != "websocket.disconnect":
        pass
    scope.cancel()
