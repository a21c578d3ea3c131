"""Delivery faults acted out for httpx clients by the in-process transport.

The gateway's core stays sans-io: a fault is data on the reply (`FaultyResponse`) or a
`ConnectionDropped` raised by a body iterator. Here they become what httpx raises over a real
network: `httpx.RemoteProtocolError` for a connection closed before any reply,
`httpx.ReadError` for one cut in a body, and `httpx.ReadTimeout` when a simulated delay is
longer than the request's read timeout. Delays move the mock clock; nothing sleeps.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING

import httpx

from ._clock import MockClock
from ._faults import ConnectionDropped, FaultyResponse
from ._pacing import aiter_body
from ._wire import MockResponse

if TYPE_CHECKING:
    from .._retry import RetryPolicy

__all__ = ["deliver", "mock_time_retry_policy"]


def deliver(response: MockResponse, request: httpx.Request, clock: MockClock) -> MockResponse:
    """The reply to hand to httpx, or the httpx error its delivery faults amount to."""
    chunk_latency = 0.0
    if isinstance(response, FaultyResponse):
        if response.drop:
            raise httpx.RemoteProtocolError(
                "Server disconnected without sending a response (injected fault).",
                request=request,
            )
        if response.latency:
            try:
                _wait(clock, response.latency, request)
            except httpx.ReadTimeout:
                _close(response.body)
                raise
        chunk_latency = response.chunk_latency
    if not isinstance(response.body, bytes):
        response.body = _Delivered(response.body, request, clock, chunk_latency)
    return response


def _wait(clock: MockClock, seconds: float, request: httpx.Request) -> None:
    read_timeout = request.extensions.get("timeout", {}).get("read")
    if read_timeout is not None and seconds > read_timeout:
        clock.advance(read_timeout)
        raise httpx.ReadTimeout(
            f"no data for {read_timeout} s (injected latency of {seconds} s)", request=request
        )
    clock.advance(seconds)


def _close(body: object) -> None:
    close = getattr(body, "close", None)
    if callable(close):
        close()


class _Delivered:
    """A streamed body with its delays and connection cuts turned into httpx errors."""

    def __init__(
        self, body: Iterator[bytes], request: httpx.Request, clock: MockClock, latency: float
    ) -> None:
        self._body = body
        self._request = request
        self._clock = clock
        self._latency = latency

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        try:
            self._wait_before_chunk()
            return next(self._body)
        except (ConnectionDropped, httpx.ReadTimeout) as exc:
            raise self._failed(exc) from exc

    async def __aiter__(self) -> AsyncIterator[bytes]:
        events = aiter_body(self._body).__aiter__()
        while True:
            try:
                self._wait_before_chunk()
                chunk = await events.__anext__()
            except StopAsyncIteration:
                return
            except (ConnectionDropped, httpx.ReadTimeout) as exc:
                raise self._failed(exc) from exc
            yield chunk

    def _wait_before_chunk(self) -> None:
        if self._latency:
            _wait(self._clock, self._latency, self._request)

    def _failed(self, exc: Exception) -> Exception:
        """What the reader sees: a dropped connection is httpx's ReadError; the body is closed."""
        self.close()
        if isinstance(exc, ConnectionDropped):
            return httpx.ReadError(str(exc), request=self._request)
        return exc

    def close(self) -> None:
        _close(self._body)


def mock_time_retry_policy(clock: MockClock) -> RetryPolicy:
    """A retry policy whose waits move the mock clock instead of sleeping, and whose ``now``
    is the mock clock, so ``Retry-After`` and ``X-RateLimit-Reset`` line up with the mock's
    rate-limit windows. `MockGateway.client` uses it unless given a ``retry_policy``."""
    from .._retry import RetryPolicy

    def sleep(seconds: float) -> None:
        clock.advance(seconds)

    async def async_sleep(seconds: float) -> None:
        clock.advance(seconds)

    return RetryPolicy(sleep=sleep, async_sleep=async_sleep, now=clock.now)
