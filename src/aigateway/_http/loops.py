"""Which event loop is running, and closing what belongs to a loop when that loop ends.

An async client may be used from one event loop after another: successive ``asyncio.run``
calls, a notebook's loop and a script's, one trio run after another. A connection belongs to
the loop that opened it: used from another loop it fails ("Event loop is closed"), and left
open when its loop ends it is an unclosed socket. Both asyncio (``asyncio.run``, whose end
calls ``loop.shutdown_asyncgens()``) and trio close the async generators still suspended when
a loop ends, inside the loop; `close_at_loop_end` is such a generator, so a pool is closed
gracefully by the loop that owns it, however the code that used it ended.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Generic, TypeVar

import anyio

__all__ = [
    "FirstLoop",
    "PerLoop",
    "close_at_loop_end",
    "current_loop",
    "is_asyncio",
    "loop_ended",
    "run_soon",
    "start",
]

T = TypeVar("T")


def current_loop() -> object:
    """The running asyncio event loop, or the token of the running trio run."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        pass
    try:
        import trio

        return trio.lowlevel.current_trio_token()
    except (ImportError, RuntimeError):
        raise RuntimeError(
            "aigateway's async client runs inside an asyncio event loop or a trio run"
        ) from None


def is_asyncio(loop: object) -> bool:
    """Whether ``loop`` (from `current_loop`) is an asyncio event loop (else a trio run)."""
    return isinstance(loop, asyncio.AbstractEventLoop)


def loop_ended(loop: object) -> bool:
    """Whether ``loop`` (from `current_loop`) has ended: an asyncio loop closed, a trio run
    over."""
    if is_asyncio(loop):
        return loop.is_closed()  # type: ignore[attr-defined,no-any-return]
    try:
        loop.run_sync_soon(_nothing)  # type: ignore[attr-defined]  # trio's token refuses once over
    except Exception:
        return True
    return False


def _nothing() -> None:
    pass


def run_soon(loop: object, async_fn: Callable[[], Awaitable[object]]) -> None:
    """Run ``async_fn()`` as a task of ``loop`` (from `current_loop`) soon: from any thread,
    and from a finalizer, even one the garbage collector runs (as asyncio and trio finalize
    their own async generators). `RuntimeError` if the loop has ended."""
    if is_asyncio(loop):
        loop.call_soon_threadsafe(_start_task, loop, async_fn)  # type: ignore[attr-defined]
        return
    import trio

    try:
        loop.run_sync_soon(trio.lowlevel.spawn_system_task, async_fn)  # type: ignore[attr-defined]
    except trio.RunFinishedError:
        raise RuntimeError("the trio run has ended") from None


_tasks: set[asyncio.Task[object]] = set()
"""Tasks `run_soon` started: asyncio keeps only weak references to its tasks."""


def _start_task(loop: asyncio.AbstractEventLoop, async_fn: Callable[[], Awaitable[object]]) -> None:
    task: asyncio.Task[object] = loop.create_task(async_fn())  # type: ignore[arg-type]
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)


class FirstLoop:
    """The event loop an ``http_client=`` given to an `AsyncClient` is first used in (by the
    client and its copies): its connections belong to that loop, and a client given cannot
    be remade for another, so a request from another loop is refused before it is sent."""

    __slots__ = ("loop",)

    def __init__(self) -> None:
        self.loop: object | None = None

    def other(self) -> object | None:
        """None when the running loop is the first one (remembered at the first call), else
        that first loop."""
        loop = current_loop()
        first = self.loop
        if first is None:
            self.loop = loop
            return None
        return None if first is loop else first


class PerLoop(Generic[T]):
    """One object per event loop, made by ``make(loop)`` at the loop's first use. Getting it
    costs one identity check while the running loop is the last one used; objects of loops
    that ended are forgotten when another is made."""

    def __init__(self, make: Callable[[object], T]) -> None:
        self._make = make
        self._last: tuple[object, T | None] = (None, None)
        """The loop last used and its object (one tuple: threads read both in one step)."""
        self._by_loop: dict[object, T] = {}

    @property
    def last(self) -> T | None:
        """The object of the loop last used (None before any use)."""
        return self._last[1]

    def get(self) -> T:
        """The running loop's object."""
        loop = current_loop()
        last_loop, value = self._last
        if loop is not last_loop or value is None:
            value = self._by_loop.get(loop)
            if value is None:
                for other in list(self._by_loop):  # a copy: another thread may add one
                    if loop_ended(other):
                        self._by_loop.pop(other, None)
                value = self._by_loop[loop] = self._make(loop)
            self._last = (loop, value)
        return value

    def pop(self, loop: object, value: T | None = None) -> T | None:
        """Forget the object of ``loop`` (only if it is ``value``, when given) and return it."""
        current = self._by_loop.get(loop)
        if current is None or (value is not None and current is not value):
            return None
        self._by_loop.pop(loop, None)
        if self._last[0] is loop:
            self._last = (None, None)
        return current


async def close_at_loop_end(close: Callable[[], Awaitable[object]]) -> AsyncGenerator[None, None]:
    """A generator that runs ``close`` when it is closed: by the end of the event loop it was
    started in (asyncio and trio close the async generators left suspended, inside the loop),
    or earlier by its owner (``aclose()``).

    Start it in the loop (`start`) and keep a reference to it: the loop holds it only weakly.
    Dropped unclosed, asyncio schedules the close on its loop."""
    try:
        yield
    finally:
        with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
            await close()


def start(keeper: AsyncGenerator[None, None]) -> None:
    """Run ``keeper`` (a `close_at_loop_end` generator) to its ``yield`` without awaiting:
    its first step awaits nothing, and beginning it here, in the loop's thread, registers it
    with the running loop."""
    try:
        keeper.asend(None).send(None)
    except StopIteration:
        return
    raise RuntimeError("a keeper generator awaited before its yield")  # pragma: no cover
