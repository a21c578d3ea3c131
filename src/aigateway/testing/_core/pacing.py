"""Pacing of the mock's streamed replies: a time to first token and a delay per token.

Off by default, so tests stay instant; demos turn it on to make streams look like a real
model's (``MockGateway(time_to_first_token=0.4, token_delay=0.03)``). A paced body is an
iterator of SSE events that waits before each one: with ``time.sleep`` when iterated
synchronously, with ``anyio.sleep`` when iterated with ``async for`` (the ASGI server), so an
event loop is never blocked. Both sleeps can be replaced, to record the waits in tests instead
of waiting.

A body made inside `held_pacing` (the in-process transport does this) does not wait itself:
its deliverer reads `PacedBody.next_delay` and acts the wait out, on the mock clock and within
the request's read timeout, as a socket would.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import anyio

from aigateway.testing._core.wire import MockResponse, close_body

__all__ = ["AsyncBody", "PacedBody", "StreamPacing", "held_pacing", "paced"]


@dataclass(frozen=True)
class StreamPacing:
    """How fast the mock streams: ``time_to_first_token`` seconds before the first event,
    ``token_delay`` seconds before each later one (each content chunk is about a token)."""

    time_to_first_token: float = 0.0
    token_delay: float = 0.0
    sleep: Callable[[float], None] = time.sleep
    async_sleep: Callable[[float], Awaitable[None]] = anyio.sleep

    def __post_init__(self) -> None:
        for name in ("time_to_first_token", "token_delay"):
            value = getattr(self, name)
            if not value >= 0:
                raise ValueError(f"{name} must be a number of seconds >= 0, got {value!r}")

    @property
    def enabled(self) -> bool:
        return self.time_to_first_token > 0 or self.token_delay > 0

    def delay_before(self, index: int) -> float:
        """Seconds to wait before event ``index`` (0 is the first)."""
        return self.time_to_first_token if index == 0 else self.token_delay


_held: ContextVar[list[PacedBody] | None] = ContextVar("aigateway_mock_held_pacing", default=None)


@contextmanager
def held_pacing() -> Iterator[list[PacedBody]]:
    """Paced bodies made in this block leave their waits to whoever delivers them: they do not
    wait themselves, and are listed in the list this yields."""
    held: list[PacedBody] = []
    token = _held.set(held)
    try:
        yield held
    finally:
        _held.reset(token)


class PacedBody(Iterator[bytes]):
    """The events of a streamed reply, released at the pace of a `StreamPacing` (or, when made
    in `held_pacing`, at once: the deliverer waits `next_delay` before asking for each)."""

    def __init__(self, events: Sequence[bytes], pacing: StreamPacing) -> None:
        self._events = list(events)
        self.pacing = pacing
        self._next = 0
        held = _held.get()
        self._waits = held is None
        if held is not None:
            held.append(self)

    @property
    def next_delay(self) -> float:
        """Seconds to wait before the next event (0 when none is left)."""
        if self._next >= len(self._events):
            return 0.0
        return self.pacing.delay_before(self._next)

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        delay = self._own_delay()
        if delay:
            self.pacing.sleep(delay)
        return self._events[self._take()]

    def __aiter__(self) -> PacedBody:
        return self

    async def __anext__(self) -> bytes:
        if self._next >= len(self._events):
            raise StopAsyncIteration
        delay = self._own_delay()
        if delay:
            await self.pacing.async_sleep(delay)
        return self._events[self._take()]

    def _own_delay(self) -> float:
        return self.next_delay if self._waits else 0.0

    def _take(self) -> int:
        index = self._next
        if index >= len(self._events):
            raise StopIteration
        self._next += 1
        return index


def paced(response: MockResponse, pacing: StreamPacing) -> MockResponse:
    """A streamed reply whose events come at ``pacing``'s pace (unchanged when it is off)."""
    if not pacing.enabled or isinstance(response.body, bytes):
        return response
    response.body = PacedBody(list(response.body), pacing)
    return response


class AsyncBody(AsyncIterator[bytes]):
    """The events of a streamed body for ``async for``: a body that can be iterated
    asynchronously (a `PacedBody`, or a wrapper around one) is, so that its waits never block
    an event loop; any other iterator is read as it is.

    An iterator object, not an async generator: a reader that stops early leaves nothing for
    the event loop to finalize (trio warns about every unfinished generator it collects), and
    ``aclose`` closes the body."""

    def __init__(self, body: Iterator[bytes]) -> None:
        self._body = body
        self._events: AsyncIterator[bytes] | None = (
            body.__aiter__() if hasattr(body, "__aiter__") else None
        )

    def __aiter__(self) -> AsyncBody:
        return self

    async def __anext__(self) -> bytes:
        if self._events is not None:
            return await self._events.__anext__()
        try:
            return next(self._body)
        except StopIteration:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        aclose = getattr(self._events, "aclose", None)
        if aclose is not None:
            await aclose()
        close_body(self._body)
