"""`Client` and `AsyncClient`: the driver, the http client and the transport each takes (of
httpx or httpx2), and closing.

Everything else (the constructor and its settings, what the client remembers, repr,
``with_options``, the resources) is `BaseClient`'s (``aigateway._client.base``), written once.
Resources hold the client's pipeline, not the client; each is imported and built on first use
(which keeps ``import aigateway`` cheap) and kept in the client's ``__dict__``, so a
``with_options`` copy, a new object, starts with none.
"""

from __future__ import annotations

import threading

from aigateway._client.base import BaseClient
from aigateway._closing import AsyncClosing, Closing
from aigateway._pipeline.drivers import AsyncPipeline, SyncPipeline
from aigateway._pipeline.limits import LoopSlots
from aigateway._stacks import AsyncHTTPClient, AsyncTransport, SyncHTTPClient, SyncTransport

__all__ = ["AsyncClient", "Client"]


class Client(BaseClient[SyncPipeline, SyncHTTPClient, SyncTransport], Closing):
    """The synchronous client: ``Client(api_key=..., base_url=...)``, then
    ``client.chat.completions.create(...)``. Use it in a ``with`` block or call ``close()``.

    ``api_key`` and ``base_url`` fall back to ``AIGATEWAY_API_KEY`` and ``AIGATEWAY_BASE_URL``;
    ``base_url`` ends in ``/v1``. Pass ``http_client`` to use your own ``httpx.Client`` or
    ``httpx2.Client`` (you then close it yourself), or ``transport`` to route requests
    elsewhere (a mock, a proxy).

    Reliability (see the Reliability page of the docs): ``max_retries`` and ``retry_policy``
    (what is retried, the waits, the cap); ``auto_idempotency_keys=True`` gives every POST a
    generated ``Idempotency-Key``, so even calls that act on the world are retried safely;
    ``wait_for_rate_limit=True`` waits for a spent rate-limit window to reset instead of
    getting a 429; ``max_concurrency`` bounds the requests in flight; ``max_credits`` refuses
    calls once that many credits are spent (``client.usage`` says what was).

    Timeouts: ``timeout`` (seconds, or an ``httpx.Timeout`` or ``httpx2.Timeout`` for connect,
    read, write and pool)
    for every request; ``deadline`` for a whole call, its retries and waits included (600 s
    for a plain call; none for a stream unless set, for the whole stream); for streams and
    sockets also ``stream_first_event_timeout`` (from the request to the first chunk; a
    timeout there is retried) and ``stream_idle_timeout`` (between chunks, 300 s). Every call
    takes the same keywords to override them.
    """

    _pipeline_type = SyncPipeline
    _slots_type = threading.BoundedSemaphore

    def download(self, url: str) -> bytes:
        """The bytes at ``url``, a file the gateway returned (``result.bind(client.download)``
        lets a result you built yourself ``read()`` it), with this client's retries and
        timeouts; the key goes only to the gateway's own host."""
        return self._pipeline.fetch(url)

    def close(self) -> None:
        """Close the connection pool (unless it was passed in as ``http_client``)."""
        self._pipeline.state.leases.release_abandoned()
        if not self._closed and self._owns_http_client:
            self._pipeline.http_client.close()
        self._closed = True


class AsyncClient(BaseClient[AsyncPipeline, AsyncHTTPClient, AsyncTransport], AsyncClosing):
    """The asynchronous client: ``AsyncClient(api_key=..., base_url=...)``, then
    ``await client.chat.completions.create(...)``. Use it in ``async with`` or ``await close()``.

    One client serves many concurrent calls over one connection pool; keep it for the life of
    the application. Settings are those of `Client`; ``http_client`` is an
    ``httpx.AsyncClient`` or an ``httpx2.AsyncClient``, made in the event loop that uses it.
    ``max_concurrency`` bounds the requests in flight across all tasks (the plans cap
    concurrent requests; a stream is in flight until it is closed). Its own pool is aiohttp's
    on asyncio (much faster under many concurrent requests) and httpx's on trio.
    """

    _pipeline_type = AsyncPipeline
    _slots_type = LoopSlots

    async def download(self, url: str) -> bytes:
        """The bytes at ``url``, a file the gateway returned (``result.bind(client.download)``
        lets a result you built yourself ``await aread()`` it), with this client's retries and
        timeouts; the key goes only to the gateway's own host."""
        return await self._pipeline.fetch(url)

    async def close(self) -> None:
        """Close the connection pool (unless it was passed in as ``http_client``)."""
        await self._pipeline.state.leases.aclose()
        if not self._closed and self._owns_http_client:
            await self._pipeline.http_client.aclose()
            shared = self._pipeline.state.shared
            if shared is not None:
                await shared.aclose()
        self._closed = True
