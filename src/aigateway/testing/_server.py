"""`MockGateway.serve`: the mock over real HTTP, with uvicorn in a background thread."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .._optional import require
from ._asgi import MockASGIApp

if TYPE_CHECKING:
    from ._gateway import MockGateway

__all__ = ["serve", "server_config"]


def server_config(gateway: MockGateway, *, host: str, port: int) -> Any:
    """The uvicorn configuration serving ``gateway`` (HTTP and WebSocket, quiet logs)."""
    uvicorn = require("uvicorn", "server", "serving the mock gateway over HTTP")
    require("websockets", "ws", "the mock gateway's WebSocket endpoint")
    return uvicorn.Config(
        MockASGIApp(gateway),
        host=host,
        port=port,
        lifespan="off",
        log_level="warning",
        ws="websockets-sansio",
        timeout_graceful_shutdown=2,
    )


@contextmanager
def serve(gateway: MockGateway, *, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Run ``gateway`` on ``host:port`` until the block ends; yield its base URL."""
    uvicorn = require("uvicorn", "server", "serving the mock gateway over HTTP")
    started = threading.Event()

    class _Server(uvicorn.Server):  # type: ignore[misc,name-defined]
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            started.set()

    server = _Server(server_config(gateway, host=host, port=port))
    thread = threading.Thread(target=server.run, name="aigateway-mock-server", daemon=True)
    thread.start()
    while not started.wait(0.05):
        if not thread.is_alive():
            raise RuntimeError(
                f"the mock gateway could not start on {host}:{port} (see uvicorn's log above)"
            )
    try:
        bound_port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://{host}:{bound_port}/v1"
    finally:
        server.should_exit = True
        thread.join()
