"""`MockGateway.serve`: the mock over real HTTP, with uvicorn in a background thread.

The socket is bound before the server starts, so a busy port or an unknown host is an
`OSError` naming them, raised by ``serve`` itself. While serving, the gateway's clock follows
the wall clock (``clock="wall"``, the default: rate-limit windows, ``Retry-After`` and
``X-RateLimit-Reset`` are real; ``clock_speed`` runs them faster) or is stopped
(``clock="manual"``: only the test moves it); it goes back to its former mode, without
jumping back in time, when the server stops.

uvicorn's h11 protocol is given the ``aigateway.cut`` scope extension, which closes the
connection, so dropped connections are acted out without an error in the server's log.
uvicorn's loggers are left to the application's logging configuration, less the keys: while
serving, its ``uvicorn.error`` logger writes the credential headers of WebSocket handshakes
(where clients send their key) as ``<redacted>``.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal

from aigateway._optional import require
from aigateway.testing._core.clock import MockClock
from aigateway.testing._serving.asgi import CUT_EXTENSION, MockASGIApp
from aigateway.testing._serving.connections import (
    ClientConnections,
    ConnectionLimits,
    GuardedConnection,
    MemoryGiver,
    return_large_blocks_to_the_os,
)

if TYPE_CHECKING:
    from aigateway.testing._core.state import GatewayState

__all__ = ["ClockMode", "is_loopback", "serve", "server_config"]

ClockMode = Literal["wall", "manual"]


_CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "sec-websocket-protocol"})
"""Headers that carry a key: ``Authorization``, or the subprotocol pair (``Authorization``, key)."""


class _CredentialFilter(logging.Filter):
    """Writes the value of a credential header as ``<redacted>`` in the ``websockets``
    library's handshake lines (``"< %s: %s"``, name and value), which uvicorn logs at DEBUG
    on its ``uvicorn.error`` logger."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if (
            isinstance(args, tuple)
            and len(args) == 2
            and isinstance(args[0], str)
            and args[0].lower() in _CREDENTIAL_HEADERS
        ):
            record.args = (args[0], "<redacted>")
        return True


class _ErrorsOnStderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes the mock's errors on stderr: a 500's traceback and request id."""


def _log_errors_on_stderr() -> Callable[[], None]:
    """Send the ``aigateway.testing`` logger's errors to stderr (once however many servers
    run); returns what undoes it."""
    logger = logging.getLogger("aigateway.testing")
    if any(isinstance(handler, _ErrorsOnStderr) for handler in logger.handlers):
        return lambda: None
    handler = _ErrorsOnStderr()
    handler.setLevel(logging.ERROR)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    logger.addHandler(handler)
    return lambda: logger.removeHandler(handler)


def _uvicorn() -> Any:
    return require("uvicorn", "server", "serving the mock gateway over HTTP")


def server_config(
    state: GatewayState, *, host: str, port: int, limits: ConnectionLimits | None = None
) -> Any:
    """The uvicorn configuration serving ``state`` (HTTP and WebSocket, quiet logs), its
    connections within ``limits``."""
    uvicorn = _uvicorn()
    require("websockets", "server", "the mock gateway's WebSocket endpoint")
    limits = limits if limits is not None else ConnectionLimits()
    return uvicorn.Config(
        MockASGIApp(state, limits),
        host=host,
        port=port,
        lifespan="off",
        log_level="warning",
        log_config=None,
        access_log=False,  # log_level="warning" silences it anyway; this skips building it
        http=_cuttable_h11_protocol(limits),
        timeout_keep_alive=limits.keep_alive,
        ws_max_size=limits.websocket_message_bytes,
        ws_ping_interval=limits.websocket_ping_interval,
        ws_ping_timeout=limits.websocket_ping_timeout,
        ws=_websocket_implementation(uvicorn.__version__),
        timeout_graceful_shutdown=2,
    )


def _websocket_implementation(uvicorn_version: str) -> str:
    """The ``ws`` implementation uvicorn serves the mock's WebSocket with: the sans-I/O one from
    uvicorn 0.50.1, its older one before (0.35 to 0.50.0 have the sans-I/O one but read the
    offered subprotocols as one, so a key sent as the second went unseen)."""
    release = tuple(int(part) for part in uvicorn_version.split(".")[:3] if part.isdigit())
    return "websockets-sansio" if release >= (0, 50, 1) else "websockets"


def _cuttable_h11_protocol(limits: ConnectionLimits) -> type:
    """uvicorn's h11 protocol, giving each request the ``aigateway.cut`` extension, its
    connections guarded (`GuardedConnection`: a cap per client address, a head deadline)."""
    h11_impl = require("uvicorn.protocols.http.h11_impl", "server", "serving the mock gateway")

    class CuttableH11Protocol(GuardedConnection, h11_impl.H11Protocol):  # type: ignore[misc,name-defined]
        app: Any

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            app = self.app

            async def with_cut(scope: Any, receive: Any, send: Any) -> None:
                scope.setdefault("extensions", {})[CUT_EXTENSION] = self.transport.close
                await app(scope, receive, send)

            self.app = with_cut

    CuttableH11Protocol.limits = limits
    CuttableH11Protocol.clients = ClientConnections(limits.per_client)  # one server's
    return CuttableH11Protocol


def is_loopback(host: str) -> bool:
    """True when ``host`` is reachable from this machine only: ``localhost`` (a final dot
    allowed), a loopback address (``127.x``, ``::1``, with or without a zone) or an IPv6 address
    mapping an IPv4 loopback one. The pytest plugin's network guard asks it too."""
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.partition("%")[0])
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def _bind(host: str, port: int) -> socket.socket:
    if not 0 <= port <= 65535:
        raise ValueError(f"a port is a number from 0 to 65535, got {port!r}")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        if os.name != "nt":  # elsewhere it would let two servers share the port
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        reason = exc.strerror or str(exc)
        error = OSError(f"cannot serve on {host}:{port}: {reason}")
        error.errno = exc.errno
        raise error from None
    return sock


@contextmanager
def serve(
    state: GatewayState,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    clock: ClockMode = "wall",
    clock_speed: float = 1.0,
    limits: ConnectionLimits | None = None,
) -> Iterator[str]:
    """Serve the gateway whose state is ``state`` on ``host:port`` until the block ends; yield
    its base URL. While it runs, the gateway's errors (a 500's traceback and request id) are
    written on stderr and the memory it frees goes back to the OS (with glibc: large blocks at
    once, from its start, the rest every few seconds)."""
    if clock not in ("wall", "manual"):
        raise ValueError(f"clock is 'wall' or 'manual', got {clock!r}")
    MockClock(wall=lambda: 0.0).follow_wall_clock(clock_speed)  # the same check, before binding
    if clock == "manual" and clock_speed != 1.0:
        raise ValueError(
            f"clock_speed paces the wall clock; a manual clock moves only when the test moves "
            f"it, so clock='manual' takes no clock_speed (got {clock_speed!r})"
        )
    uvicorn = _uvicorn()
    config = server_config(state, host=host, port=port, limits=limits)
    started = threading.Event()

    class _Server(uvicorn.Server):  # type: ignore[misc,name-defined]
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            started.set()

    sock = _bind(host, port)
    gateway_clock = state.clock
    was_manual, was_speed = gateway_clock.manual, gateway_clock.speed
    if clock == "wall":
        gateway_clock.follow_wall_clock(clock_speed)
    else:
        gateway_clock.freeze()
    server = _Server(config)
    credentials = _CredentialFilter()
    server_log = logging.getLogger("uvicorn.error")
    server_log.addFilter(credentials)
    stop_logging_errors = _log_errors_on_stderr()
    return_large_blocks_to_the_os()
    memory = MemoryGiver().start()
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="aigateway-mock-server", daemon=True
    )
    try:
        thread.start()
        while not started.wait(0.05):
            if not thread.is_alive():
                raise RuntimeError(f"the mock gateway could not start on {host}:{port}")
        bound_host = f"[{host}]" if ":" in host else host
        yield f"http://{bound_host}:{sock.getsockname()[1]}/v1"
    finally:
        server.should_exit = True
        if thread.is_alive():
            thread.join()
        server_log.removeFilter(credentials)
        stop_logging_errors()
        memory.stop()
        sock.close()
        if was_manual:
            gateway_clock.freeze()
        else:
            gateway_clock.follow_wall_clock(was_speed)
