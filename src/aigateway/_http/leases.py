"""The connection a stream or an unread reply holds, and how it is given back however the
caller ends with it: closed, read to the end, or dropped unclosed.

The object the caller gets (`Stream`, `StreamedResponse`, ...) keeps a `Lease`: the reply, its
body iterator and the generator of chunks over it, and what to do at the end (give back a
concurrency slot, count the usage). That object is in no reference cycle, so dropped unclosed
it dies at once, and its finalizer hands the lease back (`abandon`).

The client holds every open lease too (`OpenLeases`), so an open lease is never garbage. If it
were, the garbage collector would run the finalizers of httpx's and httpcore's body
generators, and those close the connection under the pool's lock; a collection runs in
whichever thread happens to allocate, and that thread may be inside the pool, holding that
lock: a deadlock. A sync lease is therefore released at once only when that is safe (dropped
outside a collection); otherwise it is queued, and released by the client's next request or
its close, outside any lock. A finalizer cannot await: an async lease dropped unclosed is
released by a task its event loop runs soon (as asyncio and trio finalize their own async
generators). The async leases of a loop still open when it ends are released by its end,
inside it (`aigateway._http.loops.close_at_loop_end`): a connection must not outlive its loop.
"""

from __future__ import annotations

import contextlib
import gc
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from types import AsyncGeneratorType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aigateway._http.loops import PerLoop
    from aigateway._stacks import Response

__all__ = [
    "AsyncLease",
    "Lease",
    "OpenLeases",
    "SyncLease",
    "aclose_reply",
    "close_reply",
    "finish",
]


_collecting = False
"""Whether the garbage collector is running: what runs meanwhile are its finalizers (or, in
another thread, code that then errs on the safe side)."""


def _note_collection(phase: str, info: dict[str, int]) -> None:
    global _collecting
    _collecting = phase == "start"


gc.callbacks.append(_note_collection)


class OpenLeases:
    """The leases of a client (and its copies) not released yet, and the sync ones dropped
    unclosed by a garbage collection, whose release waits for the client's next request or
    its close."""

    __slots__ = ("_loop_ends", "_open", "abandoned")

    def __init__(self) -> None:
        self._open: set[Lease] = set()
        self.abandoned: deque[SyncLease] = deque()
        """Dropped unclosed by a collection; the driver releases them before its next request."""
        self._loop_ends: PerLoop[tuple[object, AsyncGenerator[None, None]]] | None = None
        """Per event loop with async leases: the loop and the generator its end closes, which
        releases them (`aigateway._http.loops.close_at_loop_end`)."""

    def __len__(self) -> int:
        return len(self._open)

    def add(self, lease: Lease) -> None:
        self._open.add(lease)

    def discard(self, lease: Lease) -> None:
        self._open.discard(lease)

    def release_abandoned(self) -> None:
        """Release the sync leases a collection dropped (before a request, or at the close)."""
        abandoned = self.abandoned
        while abandoned:
            abandoned.popleft().close_quietly()

    def loop_for_lease(self) -> object:
        """The running event loop, for an async lease made now. The first in a loop arranges
        that the loop's end releases the leases of that loop still open: a connection must not
        outlive its loop."""
        loop_ends = self._loop_ends
        if loop_ends is None:
            from aigateway._http.loops import PerLoop

            loop_ends = self._loop_ends = PerLoop(self._watch)
        loop, _ = loop_ends.get()
        return loop

    def _watch(self, loop: object) -> tuple[object, AsyncGenerator[None, None]]:
        from aigateway._http.loops import close_at_loop_end, start

        async def release() -> None:
            if self._loop_ends is not None:
                self._loop_ends.pop(loop, watch)
            await self._release_loop(loop)

        watch = (loop, close_at_loop_end(release))
        start(watch[1])
        return watch

    async def _release_loop(self, loop: object) -> None:
        for lease in [lease for lease in self._open if isinstance(lease, AsyncLease)]:
            if lease.loop is loop:
                await lease.close_quietly()

    async def aclose(self) -> None:
        """The async client is closing: release every lease of the running loop still open."""
        if self._loop_ends is not None:
            watch = self._loop_ends.pop(_running_loop())
            if watch is not None:
                await watch[1].aclose()  # runs its release


class Lease:
    """What a stream or an unread reply holds: the reply, the iterator reading its body, the
    generator of chunks over that (a stream's), and ``on_close`` (run once, at the release).

    Registered with ``leases`` (the client's `OpenLeases`) from creation to release."""

    __slots__ = ("__weakref__", "_leases", "_on_close", "body", "chunks", "released", "response")

    def __init__(
        self,
        response: Response,
        leases: OpenLeases | None,
        on_close: Callable[[], object] | None = None,
        body: Any = None,
    ) -> None:
        self.response = response
        self.body = body
        """The iterator reading the body (None until one is asked for)."""
        self.chunks: Any = None
        """A stream's generator of chunks (it holds this lease, never the stream)."""
        self._on_close = on_close
        self._leases = leases
        self.released = False
        if leases is not None:
            leases.add(self)

    def _done(self) -> None:
        """Unregister and run ``on_close``, once (nothing here does I/O)."""
        on_close = self._unregister()
        if on_close is not None:
            on_close()

    def _unregister(self) -> Callable[[], object] | None:
        """Mark the lease released and drop it from the client's; return ``on_close`` (not run
        yet, and never to be run by anyone else)."""
        self.released = True
        if self._leases is not None:
            self._leases.discard(self)
        on_close, self._on_close = self._on_close, None
        return on_close


class SyncLease(Lease):
    __slots__ = ()

    def release(self) -> None:
        """Close the body iterator and the reply (the connection goes back to the pool, or is
        closed if the body was not read to its end), then run ``on_close``; idempotent."""
        if self.released:
            return
        try:
            close_reply(self.response, self.body)
        finally:
            self._done()

    def close(self) -> None:
        """Stop the chunks (if any) and release."""
        chunks = self.chunks
        if chunks is not None and not chunks.gi_running:
            chunks.close()  # runs the generator's own release
        self.release()

    def close_quietly(self) -> None:
        """`close` for a lease nobody waits on: a failure to close is nobody's to handle."""
        with contextlib.suppress(Exception):
            self.close()

    def abandon(self) -> None:
        """The caller's object was dropped unclosed: release now, unless this runs inside a
        garbage collection (the thread may hold the pool's lock): then at the next request."""
        if self.released:
            return
        if not _collecting:
            self.close_quietly()
        elif self._leases is not None:
            self._leases.abandoned.append(self)


class AsyncLease(Lease):
    __slots__ = ("loop", "reading")

    def __init__(
        self,
        response: Response,
        leases: OpenLeases | None,
        on_close: Callable[[], object] | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(response, leases, on_close, body)
        self.reading = False
        """Whether the chunks generator has begun (one not begun is left alone: closing it
        would register it with the loop, which warns once the loop is shutting down)."""
        self.loop = _running_loop() if leases is None else leases.loop_for_lease()
        """The event loop (or trio run) whose connection this is."""

    async def release(self) -> None:
        """Close the reply (its connection goes back to the pool, or is closed if the body was
        not read to its end), end the body iterator, then run ``on_close``; idempotent and
        shielded from cancellation."""
        if self.released:
            return
        try:
            await aclose_reply(self.response, self.body)
        finally:
            self._done()

    async def close(self) -> None:
        """Stop the chunks (if any) and release."""
        import anyio

        with anyio.CancelScope(shield=True):
            chunks = self.chunks
            if chunks is not None and self.reading and not chunks.ag_running:
                await chunks.aclose()  # runs the generator's own release
            await self.release()

    async def close_quietly(self) -> None:
        """`close` for a lease nobody waits on: a failure to close is nobody's to handle."""
        with contextlib.suppress(Exception):
            await self.close()

    def forget(self) -> None:
        """Let go of a lease whose event loop has ended: its connection ended with the loop,
        and nothing of that loop may be used again, ``on_close`` included (the concurrency
        slot it gives back belonged to that loop)."""
        self._unregister()

    def abandon(self) -> None:
        """The caller's object was dropped unclosed: a finalizer cannot await, so the release is
        a task of the lease's event loop, run soon (or forgotten, if that loop has ended)."""
        if self.released:
            return
        from aigateway._http.loops import run_soon

        try:
            run_soon(self.loop, self.close_quietly)
        except Exception:  # the loop has ended (or the interpreter is shutting down)
            self.forget()


def _running_loop() -> object:
    from aigateway._http.loops import current_loop  # asyncio is imported by async code only

    return current_loop()


def close_reply(response: Response, body: Any = None) -> None:
    """Close a reply and the iterator reading its body (its connection goes back to the pool,
    or is closed if the body was not read to its end)."""
    close = getattr(body, "close", None)
    if close is not None and not getattr(body, "gi_running", False):
        close()
    response.close()


async def aclose_reply(response: Response, body: Any = None) -> None:
    """`close_reply` for an async reply, shielded from cancellation: the reply first, then the
    body iterator ended (`finish`)."""
    import anyio

    with anyio.CancelScope(shield=True):
        await response.aclose()
        await finish(body)


async def finish(body: AsyncIterator[bytes] | None) -> None:
    """End a body iterator whose reply is closed.

    httpx reads a body through nested async generators that no caller can close; closing the
    outer one alone leaves the inner ones suspended for the garbage collector, and trio warns
    of each. With the connection closed, reading fails at once (after what was buffered) and
    ends them all, so a generator is read to its end; one that goes on regardless (a body
    made up in memory) no further than `FINISH_LIMIT` bytes, then closed. An iterator object
    is closed: its ``aclose`` ends what it reads (`aigateway._http.body.AsyncDecodedBody`)."""
    if body is None or getattr(body, "ag_running", False):
        return
    if isinstance(body, AsyncGeneratorType):
        read = 0
        with contextlib.suppress(Exception):
            async for data in body:
                read += len(data)
                if read > FINISH_LIMIT:
                    break
    aclose = getattr(body, "aclose", None)
    if aclose is not None:
        with contextlib.suppress(Exception):
            await aclose()


FINISH_LIMIT = 65_536
"""The most bytes `finish` reads from a closed reply's body (what httpcore may have buffered)."""
