"""The mock's WebSocket endpoint without a network: `MockTransport.websocket_connect` gives
our client's ``chat.completions.connect()`` a connection object that talks to the gateway in
the same process (sync or async), through the same `WebSocketSession` as the served endpoint.

Frames are what a served mock sends: the chunks, then the done frame, or an Error frame (and,
for a refused key, the end of the connection). A stream the gateway cuts raises
`ConnectionResetError`, as a closed connection would. Delivery faults (latency, drops) are
acted out only over real HTTP and the served WebSocket.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from aigateway.testing._core.faults import ConnectionDropped
from aigateway.testing._core.pacing import AsyncBody
from aigateway.testing._core.wire import close_body
from aigateway.testing._serving.websocket import WebSocketSession, error_frame, event_frame

if TYPE_CHECKING:
    from aigateway.testing._core.state import GatewayState

__all__ = ["AsyncInProcessSocket", "InProcessSocket"]


class _Connection:
    """The state both variants share: frames ready to read, and the reply's events."""

    def __init__(
        self, state: GatewayState, headers: Mapping[str, str], subprotocols: Sequence[str]
    ) -> None:
        self._state = state
        self._session = WebSocketSession(state, headers, subprotocols)
        self._frames: deque[str] = deque()
        self._events: Any = None
        self._answered = False
        refusal = self._session.refusal()
        if refusal is not None:
            self._frames.append(refusal[0])
            self._answered = True

    def _answer(self, message: str | bytes) -> None:
        if self._answered:
            return
        self._answered = True
        response = self._state.handle(self._session.request(message))
        if isinstance(response.body, bytes):
            self._frames.append(error_frame(response))
        else:
            self._events = response.body

    @staticmethod
    def _closed(why: str = "the mock gateway closed the WebSocket") -> ConnectionResetError:
        return ConnectionResetError(why)

    def _close_events(self) -> None:
        close_body(self._events)
        self._events = None


class InProcessSocket(_Connection):
    """A blocking in-process WebSocket: ``send``, ``recv(timeout)``, ``close``."""

    def send(self, message: str | bytes) -> None:
        self._answer(message)

    def recv(self, timeout: float | None = None) -> str:
        if self._frames:
            return self._frames.popleft()
        events: Iterator[bytes] | None = self._events
        if events is None:
            raise self._closed()
        try:
            return event_frame(next(events))
        except StopIteration:
            raise self._closed() from None
        except ConnectionDropped as exc:
            raise self._closed(f"the mock gateway cut the stream ({exc})") from None

    def close(self) -> None:
        self._close_events()


class AsyncInProcessSocket(_Connection):
    """An async in-process WebSocket (paced replies wait without blocking the event loop)."""

    _stream: AsyncIterator[bytes] | None = None

    async def send(self, message: str | bytes) -> None:
        self._answer(message)

    async def recv(self) -> str:
        if self._frames:
            return self._frames.popleft()
        if self._events is None:
            raise self._closed()
        if self._stream is None:
            self._stream = AsyncBody(self._events)
        try:
            return event_frame(await self._stream.__anext__())
        except StopAsyncIteration:
            raise self._closed() from None
        except ConnectionDropped as exc:
            raise self._closed(f"the mock gateway cut the stream ({exc})") from None

    async def close(self) -> None:
        stream, self._stream = self._stream, None
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()
        self._close_events()
