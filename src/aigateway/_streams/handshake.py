"""The opening handshake of the gateway's WebSocket endpoint, ``/v1/stream``.

What a socket is opened with, made from the HTTP request the request path built: the
``ws(s)://`` address, the subprotocols and headers, and the options of the ``websockets``
client; `Connect`, the command that opens it; and the reply that opened it, as an httpx
response the request path logs and classifies like any other.

The credential travels as the subprotocol pair (``Authorization``, key). A subprotocol may
hold only token characters (letters, digits and ``!#$%&'*+-.^_`|~``), so a key with others
(``/``, ``=``, ...) is sent as an ``Authorization: Bearer`` header instead. The ``websockets``
logger is handed a view that writes the key as ``<redacted>``. Needs the ``websockets``
package (the ``ws`` extra: ``python -m pip install -e '.[ws]'`` in a checkout), except on a
transport that serves the gateway in-process (the mock's); its async client runs on asyncio
only (`require_asyncio`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, MutableMapping
from typing import TYPE_CHECKING, Any, NamedTuple

from aigateway._call.settings import SecretText
from aigateway._optional import require
from aigateway._stacks import DEFAULT_STACK, Stack, get, stack_of
from aigateway.errors import APIError

if TYPE_CHECKING:
    from aigateway._stacks import URL, Request, Response

__all__ = [
    "AUTH_SUBPROTOCOL",
    "Connect",
    "connect_options",
    "handshake",
    "handshake_reply",
    "refused_reply",
    "require_asyncio",
    "websocket_url",
]

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


def websocket_url(url: URL) -> str:
    """``http(s)://host/.../v1/stream`` as ``ws(s)://host/.../v1/stream``."""
    scheme = "wss" if url.scheme == "https" else "ws"
    return str(url.copy_with(scheme=scheme))


def handshake(request: Request) -> tuple[list[str], dict[str, str]]:
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


def connect_options(
    request: Request, subprotocols: list[str], headers: dict[str, str]
) -> dict[str, Any]:
    """The ``websockets`` client's options for a socket opened for ``request``: its
    subprotocols and headers (`handshake`), user agent and connect timeout, the frame limit,
    and a logger that never writes the key."""
    authorization = SecretText(request.headers.get("authorization", ""))
    return {
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


class Connect(NamedTuple):
    """Open the socket: the one command of the request path the drivers do not perform
    themselves (they call `perform`, or await `aperform`), as the network they know is
    httpx's. ``in_process``: the ``websocket_connect`` of a transport that serves the gateway
    in-process (the mock's), used instead of the ``websockets`` library; the answer is the
    connection (``send``, ``recv``, ``close``)."""

    url: str
    headers: dict[str, str]
    subprotocols: list[str]
    options: dict[str, Any]
    in_process: Callable[..., Any] | None = None

    def perform(self) -> Any:
        if self.in_process is not None:
            return self.in_process(self.url, self.headers, self.subprotocols, asynchronous=False)
        client = require("websockets.sync.client", "ws", "WebSocket streaming")
        # entered by hand: the connection lives on in the socket, closed by its close()
        return client.connect(self.url, **self.options).__enter__()

    async def aperform(self) -> Any:
        if self.in_process is not None:
            return self.in_process(self.url, self.headers, self.subprotocols, asynchronous=True)
        client = require("websockets.asyncio.client", "ws", "WebSocket streaming")
        return await client.connect(self.url, **self.options)


def require_asyncio(request: Request) -> None:
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


def handshake_reply(connection: Any, request: Request) -> Response:
    """The reply that opened the socket, as a response of the request's HTTP stack (status
    and headers; the in-process socket has none: a bare 101)."""
    reply = _as_response(getattr(connection, "response", None), request)
    return _stack(request).Response(101, request=request) if reply is None else reply  # type: ignore[arg-type]


def refused_reply(exc: Exception, request: Request) -> Response | None:
    """The reply of a handshake the server refused with a status (``exc``: what opening the
    socket raised), as a response of the request's HTTP stack, with its body; None when no
    reply came."""
    response: Any = getattr(exc, "response", None)
    return _as_response(response, request, bytes(getattr(response, "body", b"") or b""))


def _as_response(response: Any, request: Request, content: bytes | None = None) -> Response | None:
    """A ``websockets`` handshake reply as a response of the request's HTTP stack; None for
    anything else."""
    status = getattr(response, "status_code", None)
    if not isinstance(status, int):
        return None
    headers = list(response.headers.raw_items())
    return _stack(request).Response(status, headers=headers, content=content, request=request)  # type: ignore[arg-type]


def _stack(request: Request) -> Stack:
    return stack_of(request) or get(DEFAULT_STACK)
