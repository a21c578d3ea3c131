"""What the served mock allows a socket: time, connections per client, body bytes in flight.

The sans-io gateway bounds what a request may ask; this module bounds what a connection may
hold, so that no client, however slow or many-socketed, delays another's request:

* `ConnectionLimits`: the deadlines (an idle keep-alive connection, a request's head, its
  body, a client that stopped taking its reply, a WebSocket's first message and its pings),
  the open connections per client address, the size of a WebSocket message and the body bytes
  read and handled at once;
* `ClientConnections`: the open connections of each client address; at the cap, the oldest
  idle one is closed to make room, and with none idle the new one is refused (a 503);
* `GuardedConnection`: mixed into uvicorn's h11 protocol, it registers each connection,
  closes one whose request head does not arrive in time (uvicorn closes an idle keep-alive
  connection, but not one that trickles a head in, nor one that never sends a byte) and cuts
  off one whose client stopped reading its reply;
* `BodyBudget`: request bodies over `ConnectionLimits.free_body_bytes` are read only within a
  byte budget, half of it at most for one key, and held until the gateway has answered: one
  key sending the largest bodies it may waits for itself, not others for it.
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import threading
from dataclasses import dataclass, field
from typing import Any

import anyio

from aigateway.testing._core.wire import dumps, error_body

__all__ = [
    "BodyBudget",
    "ClientConnections",
    "ConnectionLimits",
    "GuardedConnection",
    "MemoryGiver",
    "return_large_blocks_to_the_os",
]

_MIB = 1024 * 1024


@dataclass(frozen=True)
class ConnectionLimits:
    """The limits of a served mock's connections (seconds, counts, bytes)."""

    keep_alive: float = 5.0
    """An idle keep-alive connection is closed after this long."""
    request_head: float = 10.0
    """A request's head must arrive within this long of the connection (or the last reply)."""
    request_body: float = 60.0
    """A request's body must arrive within this long of its head (else a 408)."""
    websocket_idle: float = 30.0
    """A WebSocket client must send its message within this long of the handshake."""
    websocket_ping_interval: float = 20.0
    """How often the server pings a WebSocket client."""
    websocket_ping_timeout: float = 20.0
    """How long a ping may wait for its pong before the connection is closed."""
    response_stall: float = 30.0
    """A client that takes none of a reply for this long (its reads stopped) is cut off."""
    websocket_message_bytes: int = 1 * _MIB
    """The largest WebSocket message (a larger one closes the connection, code 1009)."""
    per_client: int = 256
    """Open connections per client address."""
    body_bytes_in_flight: int = 64 * _MIB
    """Bytes of request bodies being read and handled at once (half at most for one key)."""
    free_body_bytes: int = 64 * 1024
    """Bodies up to this size are read without counting against ``body_bytes_in_flight``."""

    def __post_init__(self) -> None:
        for name in ("per_client", "websocket_message_bytes", "body_bytes_in_flight"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)!r}")
        for name in (
            "keep_alive",
            "request_head",
            "request_body",
            "response_stall",
            "websocket_idle",
        ):
            if not getattr(self, name) > 0:
                raise ValueError(
                    f"{name} must be a number of seconds > 0, got {getattr(self, name)!r}"
                )


_TOO_MANY_BODY = dumps(
    error_body(
        "too many open connections from this address; close idle ones and retry",
        "rate_limit_error",
        "too_many_connections",
    )
)
TOO_MANY_CONNECTIONS = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
    b"retry-after: 1\r\nconnection: close\r\ncontent-length: %d\r\n\r\n"
    % len(_TOO_MANY_BODY)
    + _TOO_MANY_BODY
)
"""What a connection over the cap gets before it is closed."""


class ClientConnections:
    """The open connections of each client address, at most ``limit`` each; used from the
    event loop only. A connection is any object with ``transport``, ``idle`` and
    ``close()``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._open: dict[str, list[Any]] = {}

    def opened(self, address: str, connection: Any) -> bool:
        """Count a new connection of ``address``; False when it must be refused. At the cap,
        the oldest idle connection of the address is closed to make room."""
        alive = [c for c in self._open.get(address, ()) if not c.transport.is_closing()]
        if len(alive) >= self.limit:
            idle = next((c for c in alive if c.idle), None)
            if idle is None:
                self._open[address] = alive
                return False
            idle.close()
            alive.remove(idle)
        alive.append(connection)
        self._open[address] = alive
        return True

    def closed(self, address: str, connection: Any) -> None:
        """Forget a closed connection."""
        alive = self._open.get(address)
        if alive is not None and connection in alive:
            alive.remove(connection)
            if not alive:
                del self._open[address]

    def count(self, address: str) -> int:
        """The open connections of ``address``."""
        return sum(1 for c in self._open.get(address, ()) if not c.transport.is_closing())


class GuardedConnection:
    """Mixed in before uvicorn's ``H11Protocol``: counts the connection against its
    address's cap, closes it when no request head arrives within ``limits.request_head`` of
    the connection or of the last reply, and cuts it off when its client takes none of a
    reply for ``limits.response_stall`` (what was left unsent is dropped)."""

    limits: ConnectionLimits
    clients: ClientConnections
    transport: Any
    client: Any
    cycle: Any
    loop: Any
    _head_timer: asyncio.TimerHandle | None = None
    _stall_timer: asyncio.TimerHandle | None = None
    _refused = False

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        if not self.clients.opened(self._address, self):
            self._refused = True
            transport.write(TOO_MANY_CONNECTIONS)
            transport.close()
            return
        self._wait_for_head()

    def data_received(self, data: bytes) -> None:
        if not self._refused:
            super().data_received(data)  # type: ignore[misc]

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in (self._head_timer, self._stall_timer):
            if timer is not None:
                timer.cancel()
        self.clients.closed(self._address, self)
        super().connection_lost(exc)  # type: ignore[misc]

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        self._wait_for_head()

    def pause_writing(self) -> None:
        super().pause_writing()  # type: ignore[misc]
        if self._stall_timer is None:
            self._stall_timer = self.loop.call_later(self.limits.response_stall, self._cut_off)

    def resume_writing(self) -> None:
        super().resume_writing()  # type: ignore[misc]
        if self._stall_timer is not None:
            self._stall_timer.cancel()
            self._stall_timer = None

    @property
    def idle(self) -> bool:
        """No request in progress (and still an HTTP connection, not a WebSocket)."""
        return (
            (self.cycle is None or self.cycle.response_complete)
            and self.transport.get_protocol() is self
            and not self.transport.is_closing()
        )

    @property
    def _address(self) -> str:
        return str(self.client[0]) if self.client else ""

    def _wait_for_head(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
        self._head_timer = self.loop.call_later(self.limits.request_head, self._head_is_late)

    def _head_is_late(self) -> None:
        self._head_timer = None
        if self.idle:
            self.close()

    def _cut_off(self) -> None:
        self._stall_timer = None
        self.transport.abort()

    def close(self) -> None:
        """Close the connection; a reply its client never took is dropped, not kept to send."""
        if self.transport.get_write_buffer_size():
            self.transport.abort()
        else:
            self.transport.close()


@dataclass
class BodyBudget:
    """Bytes of request bodies in flight, in all and per key; used from the event loop only."""

    total: int
    free: int
    _used: int = 0
    _by_key: dict[str, int] = field(default_factory=dict)
    _changed: anyio.Event | None = None

    def reservation(self, key: str) -> Reservation:
        """An empty reservation for a body of ``key``."""
        return Reservation(self, key)

    async def take(self, key: str, size: int) -> None:
        """Wait until ``size`` bytes (at most half the budget) fit, then hold them."""
        per_key = max(1, self.total // 2)
        size = min(size, per_key)
        while self._used + size > self.total or self._by_key.get(key, 0) + size > per_key:
            if self._changed is None:
                self._changed = anyio.Event()
            await self._changed.wait()
        self._used += size
        self._by_key[key] = self._by_key.get(key, 0) + size

    def give_back(self, key: str, size: int) -> None:
        """Return what `take` held, waking those waiting."""
        size = min(size, max(1, self.total // 2))
        self._used -= size
        left = self._by_key.pop(key) - size
        if left:
            self._by_key[key] = left
        changed, self._changed = self._changed, None
        if changed is not None:
            changed.set()


class Reservation:
    """The budget one request's body holds: `cover` a size before reading that much,
    `release` once the gateway has answered."""

    def __init__(self, budget: BodyBudget, key: str) -> None:
        self._budget = budget
        self._key = key
        self._held = 0

    async def cover(self, size: int) -> None:
        """Wait until ``size`` bytes are reserved (nothing for a body the budget lets go
        free; a reservation is taken once, so two bodies never wait for each other)."""
        if size > self._budget.free and not self._held:
            await self._budget.take(self._key, size)
            self._held = size

    async def cover_growing(self, read: int, limit: int) -> None:
        """For a body of unknown length, ``read`` bytes of it so far: once it outgrows what
        the budget lets go free, wait until ``limit`` (the most it can be) is reserved."""
        if read > self._budget.free:
            await self.cover(limit)

    def release(self) -> None:
        if self._held:
            self._budget.give_back(self._key, self._held)
            self._held = 0


# -- memory given back to the system -------------------------------------------------------

_MMAP_THRESHOLD = -3
"""glibc's ``M_MMAP_THRESHOLD`` (``mallopt``)."""


@functools.cache
def _libc() -> Any:
    """The C library, or None where it cannot be loaded by name (Windows)."""
    try:
        return ctypes.CDLL(None)
    except (OSError, TypeError):
        return None


def return_large_blocks_to_the_os(threshold: int = 1024 * 1024) -> None:
    """Have glibc serve blocks from ``threshold`` bytes up with their own mappings, given
    back to the OS when freed. Left to itself, glibc raises that threshold to the largest
    block freed so far (up to 32 MiB), so after one large body the next ones come from its
    heaps and their memory stays with the process. (Not lower than 1 MiB: asyncio reads into
    256 KiB buffers, which would each become a mapping.) Nothing happens without glibc."""
    mallopt = getattr(_libc(), "mallopt", None)
    if mallopt is not None:
        mallopt(_MMAP_THRESHOLD, threshold)


class MemoryGiver:
    """While it runs, gives the free memory of glibc's heaps back to the OS every
    ``interval`` seconds (``malloc_trim``, from a thread of its own): what a burst of
    requests freed does not stay with the process. Nothing happens without glibc."""

    def __init__(self, interval: float = 5.0) -> None:
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> MemoryGiver:
        trim = getattr(_libc(), "malloc_trim", None)
        if trim is not None:
            self._thread = threading.Thread(
                target=self._run, args=(trim,), name="aigateway-mock-memory", daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self, trim: Any) -> None:
        while not self._stop.wait(self.interval):
            trim(0)
