"""The mock's in-process transport, sync and async, for httpx and httpx2 clients: one core.

``httpx.Client(transport=gateway.transport(), base_url=gateway.base_url)``, the same with
``httpx.AsyncClient``, and ``httpx2.Client(transport=gateway.transport("httpx2"))`` (what the
official ``openai`` SDK 3.x uses) talk to the gateway without a socket. Whole replies become
ordinary responses; streamed replies become streamed responses whose body is read event by
event, so ``client.stream(...)`` and ``response.iter_lines()`` behave as over the network.
Waits (injected latency, stream pacing) move the gateway's clock and end in the library's
``ReadTimeout`` past the request's read timeout (see `aigateway.testing._serving.delivery`).

`InProcessTransport` is the whole of it, for both libraries: it takes the HTTP stack from each
request (`aigateway._stacks`), so replies, their bodies and the errors of delivery faults are
always of the library of the client that sent it. `MockTransport` (httpx, in
``transport.py``) and `Httpx2MockTransport` (httpx2, in ``transport_httpx2.py``, imported only
when asked) are that core with the base classes their library's clients and type checkers
expect.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from aigateway._stacks import DEFAULT_STACK, Stack, get, stack_of
from aigateway.testing._core.pacing import AsyncBody
from aigateway.testing._core.wire import MockRequest, MockResponse, close_body
from aigateway.testing._serving.delivery import deliver
from aigateway.testing._serving.websocket_inprocess import AsyncInProcessSocket, InProcessSocket

if TYPE_CHECKING:
    from aigateway._stacks import Request, Response
    from aigateway.testing._core.state import GatewayState

__all__ = ["InProcessTransport", "to_mock_request", "to_response"]


class _SyncStream:
    """A streamed reply's body for a sync client (made a subclass of its stack's
    ``SyncByteStream``, which the client checks)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        yield from self._chunks

    def close(self) -> None:
        close_body(self._chunks)


class _AsyncStream:
    """A streamed reply's body for an async client (made a subclass of its stack's
    ``AsyncByteStream``)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks

    def __aiter__(self) -> AsyncIterator[bytes]:
        return AsyncBody(self._chunks)

    async def aclose(self) -> None:
        close_body(self._chunks)


def to_mock_request(request: Request, body: bytes) -> MockRequest:
    """A request of either stack as the gateway's `MockRequest` (path kept percent-encoded)."""
    path, _, query = request.url.raw_path.decode("ascii").partition("?")
    headers = {name.lower(): value for name, value in request.headers.items()}
    return MockRequest(request.method, path, headers, body, query)


def to_response(
    stack: Stack, response: MockResponse, request: Request, *, asynchronous: bool
) -> Response:
    """The gateway's reply as a response of ``stack`` (streamed when its body is an iterator)."""
    headers = list(response.headers.items())
    build = stack.module.Response
    if isinstance(response.body, bytes):
        whole: Response = build(
            response.status, headers=headers, content=response.body, request=request
        )
        return whole
    body_type: type[_SyncStream | _AsyncStream] = (
        stack.subclass(_AsyncStream, "AsyncByteStream")
        if asynchronous
        else stack.subclass(_SyncStream, "SyncByteStream")
    )
    streamed: Response = build(
        response.status, headers=headers, stream=body_type(response.body), request=request
    )
    return streamed


class InProcessTransport:
    """Sends requests to a mock gateway in this process, for sync and async clients of httpx
    or httpx2: what `MockTransport` and `Httpx2MockTransport` share (all of their work)."""

    def __init__(self, state: GatewayState) -> None:
        self.state = state

    def handle_request(self, request: Request) -> Any:
        return self._answer(request, request.read(), asynchronous=False)

    async def handle_async_request(self, request: Request) -> Any:
        return self._answer(request, await request.aread(), asynchronous=True)

    def _answer(self, request: Request, body: bytes, *, asynchronous: bool) -> Response:
        stack = stack_of(request) or get(DEFAULT_STACK)  # a request of neither: as httpx's
        mock_request = to_mock_request(request, body)
        answer = deliver(lambda: self.state.handle(mock_request), stack, request, self.state.clock)
        return to_response(stack, answer, request, asynchronous=asynchronous)

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
        return f"{type(self).__name__}(base_url={self.state.base_url!r})"
