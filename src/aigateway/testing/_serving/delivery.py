"""Delivery faults and stream pacing acted out for httpx and httpx2 clients by the in-process
transport.

The gateway's core stays sans-io: a fault is data on the reply (`FaultyResponse`) or a
`ConnectionDropped` raised by a body iterator. Here they become what the client's library
(the request's stack: httpx or httpx2) raises over a real network: ``RemoteProtocolError`` for
a connection closed before any reply, ``ReadError`` for one cut in a body, and ``ReadTimeout``
when a wait is longer than the request's read timeout.

Every wait before the reply or before a body chunk goes through `_silence`: an injected
latency, a chunk latency, and the pacing's time to first token and token delay (the paced body
is made in `held_pacing`, so it leaves its waits to this layer). A wait moves the mock clock;
the pacing's share of it is also slept with the pacing's ``sleep`` (``async_sleep`` on the
async transport), so paced demos still look paced. Past the read timeout, only the read timeout
is waited, then ``ReadTimeout`` is raised and the body closed, as a socket would.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aigateway.testing._core.clock import MockClock
from aigateway.testing._core.faults import ConnectionDropped, FaultyResponse
from aigateway.testing._core.pacing import PacedBody, StreamPacing, held_pacing
from aigateway.testing._core.wire import MockResponse, close_body

if TYPE_CHECKING:
    from aigateway._stacks import Request, Stack

__all__ = ["deliver"]


def deliver(
    handle: Callable[[], MockResponse], stack: Stack, request: Request, clock: MockClock
) -> MockResponse:
    """The reply ``handle`` gives, to hand to the client, or the error of ``stack`` (the
    request's) its delivery amounts to; a paced stream's waits are held for this layer to act
    out."""
    with held_pacing() as held:
        response = handle()
    paced = held[-1] if held else None
    chunk_latency = 0.0
    if isinstance(response, FaultyResponse):
        if response.drop:
            raise stack.module.RemoteProtocolError(
                "Server disconnected without sending a response (injected fault).",
                request=request,
            )
        if response.latency:
            try:
                _silence(stack, request, response.latency).pass_by(clock)
            except stack.module.ReadTimeout:
                close_body(response.body)
                raise
        chunk_latency = response.chunk_latency
    if not isinstance(response.body, bytes):
        response.body = _Delivered(response.body, stack, request, clock, chunk_latency, paced)
    return response


@dataclass(frozen=True)
class _Silence:
    """A wait as a socket would see it: ``seconds`` pass on the mock clock, ``paced`` of them
    are slept with the pacing's sleep, then ``timeout`` is raised if the read timed out."""

    seconds: float
    paced: float = 0.0
    timeout: Exception | None = None

    def pass_by(self, clock: MockClock, pacing: StreamPacing | None = None) -> None:
        if self.paced and pacing is not None:
            pacing.sleep(self.paced)
        self._end(clock)

    async def apass_by(self, clock: MockClock, pacing: StreamPacing | None) -> None:
        if self.paced and pacing is not None:
            await pacing.async_sleep(self.paced)
        self._end(clock)

    def _end(self, clock: MockClock) -> None:
        if self.seconds:
            clock.advance(self.seconds)
        if self.timeout is not None:
            raise self.timeout


def _silence(stack: Stack, request: Request, latency: float, paced: float = 0.0) -> _Silence:
    """The wait for ``latency`` (injected, mock time only) plus ``paced`` seconds (pacing):
    all of it, or only the request's read timeout when it is shorter."""
    seconds = latency + paced
    read_timeout = request.extensions.get("timeout", {}).get("read")
    if read_timeout is None or seconds <= read_timeout:
        return _Silence(seconds, paced)
    timeout = stack.module.ReadTimeout(
        f"no data for {read_timeout} s (the mock gateway waits {seconds} s here)", request=request
    )
    return _Silence(read_timeout, min(paced, read_timeout), timeout)


class _Delivered:
    """A streamed body with its waits acted out and its connection cuts turned into the
    errors of the request's stack. Both transports read the body with ``next``: its pacing is held, so reading it
    never waits, and only the waits here (``async_sleep`` on the async side) take time."""

    def __init__(
        self,
        body: Iterator[bytes],
        stack: Stack,
        request: Request,
        clock: MockClock,
        latency: float,
        paced: PacedBody | None,
    ) -> None:
        self._body = body
        self._stack = stack
        self._request = request
        self._clock = clock
        self._latency = latency
        self._paced = paced
        self._pacing = paced.pacing if paced is not None else None

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        try:
            self._silence_before_chunk().pass_by(self._clock, self._pacing)
            return next(self._body)
        except (ConnectionDropped, self._stack.module.ReadTimeout) as exc:
            raise self._failed(exc) from exc

    def __aiter__(self) -> _Delivered:
        return self

    async def __anext__(self) -> bytes:
        try:
            await self._silence_before_chunk().apass_by(self._clock, self._pacing)
            return next(self._body)
        except StopIteration:
            raise StopAsyncIteration from None
        except (ConnectionDropped, self._stack.module.ReadTimeout) as exc:
            raise self._failed(exc) from exc

    def _silence_before_chunk(self) -> _Silence:
        paced = self._paced.next_delay if self._paced is not None else 0.0
        return _silence(self._stack, self._request, self._latency, paced)

    def _failed(self, exc: Exception) -> Exception:
        """What the reader sees: a dropped connection is the stack's ``ReadError``; the body is
        closed."""
        self.close()
        if isinstance(exc, ConnectionDropped):
            error: Exception = self._stack.module.ReadError(str(exc), request=self._request)
            return error
        return exc

    def close(self) -> None:
        close_body(self._body)
