"""The I/O a request flow asks its driver for, as small commands.

A flow (`aigateway._pipeline.flow.Pipeline.flow`) yields one of these wherever it needs the network, a
wait or a lock, and is sent back the outcome (or has the exception thrown in). The sync and
async drivers (`aigateway._pipeline.drivers`) perform them; nothing here does I/O itself.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

if TYPE_CHECKING:
    from aigateway._stacks import Request

T = TypeVar("T")

__all__ = [
    "NO_SLOT",
    "Acquire",
    "Close",
    "Flow",
    "Next",
    "Send",
    "Sleep",
    "Slot",
    "Write",
]

Flow = Generator[Any, Any, T]
"""A flow: yields commands, is sent their outcomes, returns the call's result."""


class Send(NamedTuple):
    """Send ``request``; answer the response, its body unread (the flow reads it, in
    bounded pieces, or hands it to a stream). With a ``timeout`` (the call's time left), the
    reply's head must come within it: an async driver gives up with `TimeoutError`, a sync
    one's own transport times out its reads and writes (`aigateway._http.sync_transport`)."""

    request: Request
    timeout: float | None = None


class Sleep(NamedTuple):
    seconds: float


class Acquire(NamedTuple):
    """Take a concurrency slot (a semaphore); give up after ``timeout`` seconds with
    `TimeoutError`."""

    slots: Any
    timeout: float | None = None


class Next(NamedTuple):
    """The next item of a (async) iterator, or None at its end; an async driver gives up
    after ``timeout`` seconds with `TimeoutError` (a sync one relies on the socket's)."""

    iterator: Any
    timeout: float | None = None


class Write(NamedTuple):
    """Write ``data`` to a file download's open file, or a socket's request frame to the
    socket (`aigateway._streams.sockets.SocketChunks`); an async one for the async driver.
    ``restart``: truncate the file first, as an earlier attempt may have written part of it."""

    file: Any
    data: bytes
    restart: bool = False


class Close(NamedTuple):
    """Close a reply or a socket (shielded from cancellation); with ``body``, the iterator
    reading the reply's body too (`aigateway._http.leases.close_reply`)."""

    target: Any
    body: Any = None


class Slot:
    """A taken concurrency slot: given back once, by the call, or by the stream it was
    handed to (`take`)."""

    __slots__ = ("_release",)

    def __init__(self, release: Callable[[], object] | None) -> None:
        self._release = release

    def take(self) -> Callable[[], object] | None:
        """The release, for a stream that keeps the slot until it closes."""
        release, self._release = self._release, None
        return release

    def release(self) -> None:
        release, self._release = self._release, None
        if release is not None:
            release()


NO_SLOT = Slot(None)
