"""The mock's WebSocket endpoint ``/v1/stream``, without I/O.

The credential arrives as the subprotocol pair (``Authorization``, key), or, for a key that
is not a valid subprotocol token, as an ``Authorization: Bearer`` header; the server echoes
the ``Authorization`` subprotocol. The client sends one JSON message ``{model, messages, ...}``
(the body of ``POST /chat/completions``); the server answers with the same
``chat.completion.chunk`` objects as the event stream, then ``{"object":
"chat.completion.done"}``, then closes. A request the HTTP endpoint would refuse gets its
Error object instead, with the HTTP status it would have had added as ``error.status``; a
wrong key gets that Error frame and a close with code 1008 and the reason.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from aigateway.testing._core.wire import (
    JSON_CONTENT_TYPE,
    SSE_DONE,
    MockRequest,
    MockResponse,
    json_loads_bounded,
)

if TYPE_CHECKING:
    from aigateway.testing._core.state import GatewayState

__all__ = ["AUTH_SUBPROTOCOL", "DONE_FRAME", "POLICY_VIOLATION", "WebSocketSession"]

AUTH_SUBPROTOCOL = "Authorization"
DONE_FRAME = '{"object":"chat.completion.done"}'
POLICY_VIOLATION = 1008
"""The close code for a refused credential (RFC 6455: policy violation)."""
_DATA_PREFIX = b"data: "


class WebSocketSession:
    """One WebSocket connection to the mock: where its key came from, and its frames."""

    def __init__(
        self, state: GatewayState, headers: Mapping[str, str], subprotocols: Sequence[str]
    ) -> None:
        self._state = state
        self.subprotocol = AUTH_SUBPROTOCOL if AUTH_SUBPROTOCOL in subprotocols else None
        """The subprotocol the server selects (echoes), if the client offered it."""
        authorization = {k.lower(): v for k, v in headers.items()}.get("authorization", "")
        if self.subprotocol is not None:
            position = list(subprotocols).index(AUTH_SUBPROTOCOL)
            if position + 1 < len(subprotocols):
                authorization = f"Bearer {subprotocols[position + 1]}"
        self._headers = {"authorization": authorization, "content-type": JSON_CONTENT_TYPE}

    def refusal(self) -> tuple[str, str] | None:
        """``(Error frame, close reason)`` when the key is missing or wrong, else None."""
        problem = self._state.authenticate(MockRequest("GET", "/v1/stream", self._headers))
        if not isinstance(problem, MockResponse):
            return None
        frame = error_frame(problem)
        return frame, json.loads(frame)["error"]["message"][:120]

    def request(self, message: str | bytes) -> MockRequest:
        """The HTTP request a client message stands for: a streamed chat completion."""
        body = message.encode() if isinstance(message, str) else message
        try:
            fields = json_loads_bounded(body)
        except ValueError:
            fields = None  # passed on as it is: the gateway answers 400 invalid_json
        if isinstance(fields, dict):
            fields["stream"] = True
            body = json.dumps(fields).encode()
        return MockRequest("POST", "/v1/chat/completions", self._headers, body)


def error_frame(response: MockResponse) -> str:
    """The Error frame for a refused request: its Error body, plus ``error.status``."""
    body = response.json()
    body["error"]["status"] = response.status
    return json.dumps(body, separators=(",", ":"))


def event_frame(event: bytes) -> str:
    """The frame for one server-sent event of the mock (``data: <json>``, then a blank line)."""
    if event == SSE_DONE:
        return DONE_FRAME
    return event[len(_DATA_PREFIX) :].strip().decode("utf-8")
