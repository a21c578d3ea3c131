"""An httpx transport, sync and async, that hands requests to a mock gateway in-process.

``httpx.Client(transport=gateway.transport(), base_url=gateway.base_url)`` and the same with
``httpx.AsyncClient`` talk to the gateway without a socket. Whole replies become ordinary
responses; streamed replies become streamed responses whose body is read event by event, so
``client.stream(...)`` and ``response.iter_lines()`` behave as over the network. Waits (injected
latency, stream pacing) move the gateway's clock and end in `httpx.ReadTimeout` past the
request's read timeout (see `aigateway.testing._serving.delivery`). Any client built on httpx (ours,
the official ``openai`` SDK) accepts such a transport.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import httpx

from aigateway.testing._core.pacing import AsyncBody
from aigateway.testing._core.wire import MockRequest, MockResponse, close_body
from aigateway.testing._serving.delivery import deliver
from aigateway.testing._serving.websocket_inprocess import AsyncInProcessSocket, InProcessSocket

if TYPE_CHECKING:
    from aigateway.testing._core.state import GatewayState

__all__ = ["MockTransport"]


class _SyncStream(httpx.SyncByteStream):
    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        yield from self._chunks

    def close(self) -> None:
        close_body(self._chunks)


class _AsyncStream(httpx.AsyncByteStream):
    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks

    def __aiter__(self) -> AsyncIterator[bytes]:
        return AsyncBody(self._chunks)

    async def aclose(self) -> None:
        close_body(self._chunks)


def to_mock_request(request: httpx.Request, body: bytes) -> MockRequest:
    """An httpx request as the gateway's `MockRequest` (path kept percent-encoded)."""
    path, _, query = request.url.raw_path.decode("ascii").partition("?")
    headers = {name.lower(): value for name, value in request.headers.items()}
    return MockRequest(request.method, path, headers, body, query)


def to_httpx_response(
    response: MockResponse, request: httpx.Request, *, asynchronous: bool
) -> httpx.Response:
    """The gateway's reply as an httpx response (streamed when its body is an iterator)."""
    headers = list(response.headers.items())
    if isinstance(response.body, bytes):
        return httpx.Response(
            response.status, headers=headers, content=response.body, request=request
        )
    stream: httpx.SyncByteStream | httpx.AsyncByteStream = (
        _AsyncStream(response.body) if asynchronous else _SyncStream(response.body)
    )
    return httpx.Response(response.status, headers=headers, stream=stream, request=request)


class MockTransport(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """Sends httpx requests to a mock gateway (`MockGateway.transport` makes one); works for
    both `httpx.Client` and `httpx.AsyncClient`."""

    def __init__(self, state: GatewayState) -> None:
        self.state = state

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        mock_request = to_mock_request(request, request.read())
        response = deliver(lambda: self.state.handle(mock_request), request, self.state.clock)
        return to_httpx_response(response, request, asynchronous=False)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        mock_request = to_mock_request(request, await request.aread())
        response = deliver(lambda: self.state.handle(mock_request), request, self.state.clock)
        return to_httpx_response(response, request, asynchronous=True)

    def websocket_connect(
        self,
        url: str,
        headers: Mapping[str, str],
        subprotocols: Sequence[str],
        *,
        asynchronous: bool,
    ) -> InProcessSocket | AsyncInProcessSocket:
        """A WebSocket to the gateway's ``/v1/stream`` in this process (our client's
        ``chat.completions.connect()`` uses it when its transport is this one)."""
        socket_type = AsyncInProcessSocket if asynchronous else InProcessSocket
        return socket_type(self.state, headers, subprotocols)

    def __repr__(self) -> str:
        return f"MockTransport(base_url={self.state.base_url!r})"
