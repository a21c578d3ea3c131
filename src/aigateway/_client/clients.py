"""`Client` and `AsyncClient`: configuration, resources, and closing.

The two differ only in the pipeline driver and httpx client they hold and in ``close``;
everything else (settings, what the client remembers, repr, ``with_options``) lives in
`BaseClient` (``_base_client``). Resources hold the client's pipeline, not the client; each is imported and
built on first use (which keeps ``import aigateway`` cheap) and kept in the client's
``__dict__``, so a ``with_options`` copy, a new object, starts with none.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

import httpx

from aigateway._call.settings import (
    DEFAULT,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    TimeoutTypes,
)
from aigateway._call.timeouts import DEFAULT_STREAM_IDLE_TIMEOUT
from aigateway._client.base import BaseClient, LazyResource
from aigateway._closing import AsyncClosing, Closing
from aigateway._http.clients import AsyncHTTPClient, HTTPClient
from aigateway._pipeline.drivers import AsyncPipeline, SyncPipeline
from aigateway._pipeline.limits import LoopSlots
from aigateway._pipeline.retry import RetryPolicy

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

    from aigateway._pipeline.limits import RateLimit
    from aigateway.integrations.redis.state import RedisState
    from aigateway.resources.chat import AsyncChat, Chat
    from aigateway.resources.data import (
        AsyncDatabases,
        AsyncDocuments,
        AsyncStorage,
        Databases,
        Documents,
        Storage,
    )
    from aigateway.resources.discovery import AsyncDiscovery, Discovery
    from aigateway.resources.media import (
        AsyncAudio,
        AsyncImages,
        AsyncVideos,
        Audio,
        Images,
        Videos,
    )
    from aigateway.resources.messaging import (
        AsyncEmail,
        AsyncPayments,
        AsyncSms,
        Email,
        Payments,
        Sms,
    )
    from aigateway.resources.models import AsyncModels, Models
    from aigateway.resources.run import AsyncRun, Run
    from aigateway.resources.web import AsyncSocial, AsyncWeb, Social, Web

__all__ = ["AsyncClient", "Client"]


class Client(BaseClient[SyncPipeline], Closing):
    """The synchronous client: ``Client(api_key=..., base_url=...)``, then
    ``client.chat.completions.create(...)``. Use it in a ``with`` block or call ``close()``.

    ``api_key`` and ``base_url`` fall back to ``AIGATEWAY_API_KEY`` and ``AIGATEWAY_BASE_URL``;
    ``base_url`` ends in ``/v1``. Pass ``http_client`` to use your own `httpx.Client`
    (you then close it yourself), or ``transport`` to route requests elsewhere (a mock, a proxy).

    Reliability (see the Reliability page of the docs): ``max_retries`` and ``retry_policy``
    (what is retried, the waits, the cap); ``auto_idempotency_keys=True`` gives every POST a
    generated ``Idempotency-Key``, so even calls that act on the world are retried safely;
    ``wait_for_rate_limit=True`` waits for a spent rate-limit window to reset instead of
    getting a 429; ``max_concurrency`` bounds the requests in flight; ``max_credits`` refuses
    calls once that many credits are spent (``client.usage`` says what was).

    Timeouts: ``timeout`` (seconds, or an `httpx.Timeout` for connect, read, write and pool)
    for every request; ``deadline`` for a whole call, its retries and waits included (600 s
    for a plain call; none for a stream unless set, for the whole stream); for streams and
    sockets also ``stream_first_event_timeout`` (from the request to the first chunk; a
    timeout there is retried) and ``stream_idle_timeout`` (between chunks, 300 s). Every call
    takes the same keywords to override them.

    Args:
        api_key: The gateway key; ``AIGATEWAY_API_KEY`` when not given. Sent only to the
            gateway's own host.
        base_url: The gateway's URL, ending in ``/v1``; ``AIGATEWAY_BASE_URL`` when not given.
        timeout: Seconds, or an `httpx.Timeout` (connect, read, write, pool), for every request.
        deadline: Seconds a whole call may take: connecting, every attempt, every wait between
            attempts and, for a stream, its whole life. By default 600 for a plain call and
            none for a stream (its idle timeout applies); None for none at all.
        max_retries: Retries after a failed attempt (connection errors, 408, 409, 429, 5xx).
        default_headers: Headers sent with every request.
        http_client: Your own `httpx.Client` (you close it); its settings are used as they are.
        transport: An `httpx.BaseTransport` to route requests elsewhere (a mock, a proxy).
        retry_policy: What is retried, the waits between attempts and their cap.
        auto_idempotency_keys: True: every POST gets a generated ``Idempotency-Key``, so calls
            that act on the world are retried safely too.
        wait_for_rate_limit: True: wait for a spent rate-limit window to reset instead of
            getting a `RateLimitError`.
        max_concurrency: The most requests in flight at once (a stream counts until closed).
        max_response_bytes: The most bytes a reply read into memory may hold, counted after
            decompression (64 MiB by default); past it the connection is closed and
            `ResponseTooLargeError` raised. Streams hold each event to 1 MiB instead.
        stream_first_event_timeout: Seconds from a stream's request to its first event (a
            timeout there is retried); the idle timeout when not given.
        stream_idle_timeout: Seconds allowed between a stream's events; None for no limit.
        stream_deadline: Deprecated (removed in the next release): ``deadline`` for streams
            only.
        max_credits: Refuse calls (`BudgetExceededError`, nothing sent) once this many credits
            are spent; ``client.usage`` says what was.
        tracing: True: an OpenTelemetry span per call from the global tracer provider; or
            the `TracerProvider` to use. Off by default (needs the ``otel`` extra).
        shared_state: An `aigateway.shared.RedisState`: the rate limit, credit budget, usage
            and idempotency keys of actions are shared by every process on the key.
        rate_limit: A `RateLimit` to keep to (with ``shared_state``) instead of learning it
            from the gateway's replies; implies ``wait_for_rate_limit``.
    """

    _slots_type = threading.BoundedSemaphore

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | httpx.URL | None = None,
        timeout: TimeoutTypes = DEFAULT_TIMEOUT,
        deadline: float | None = DEFAULT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        default_headers: Mapping[str, str] | None = None,
        http_client: httpx.Client | None = None,
        transport: httpx.BaseTransport | None = None,
        retry_policy: RetryPolicy | None = None,
        auto_idempotency_keys: bool = False,
        wait_for_rate_limit: bool = False,
        max_concurrency: int | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        stream_first_event_timeout: float | None = None,
        stream_idle_timeout: float | None = DEFAULT_STREAM_IDLE_TIMEOUT,
        stream_deadline: float | None = DEFAULT,
        max_credits: float | None = None,
        tracing: bool | TracerProvider = False,
        shared_state: RedisState | None = None,
        rate_limit: RateLimit | None = None,
    ) -> None:
        self._setup(
            SyncPipeline,
            httpx.Client,
            own_http_client_type=HTTPClient,
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            deadline=deadline,
            max_retries=max_retries,
            default_headers=default_headers,
            http_client=http_client,
            transport=transport,
            retry_policy=retry_policy,
            auto_idempotency_keys=auto_idempotency_keys,
            wait_for_rate_limit=wait_for_rate_limit,
            max_concurrency=max_concurrency,
            max_response_bytes=max_response_bytes,
            stream_first_event_timeout=stream_first_event_timeout,
            stream_idle_timeout=stream_idle_timeout,
            stream_deadline=stream_deadline,
            max_credits=max_credits,
            tracing=tracing,
            shared_state=shared_state,
            rate_limit=rate_limit,
        )

    chat: LazyResource[Chat] = LazyResource(
        "chat", "Chat", "Chat completions: ``client.chat.completions.create(...)``."
    )
    models: LazyResource[Models] = LazyResource(
        "models", "Models", "The model catalogue: ``client.models.list()``, ``.retrieve(id)``."
    )

    run: LazyResource[Run] = LazyResource(
        "run",
        "Run",
        "Any service on ``POST /run``: ``client.run(model, inputs)`` returns a `RunResult`.",
    )
    images: LazyResource[Images] = LazyResource(
        "media",
        "Images",
        "Image generation: ``client.images.generate(model=..., prompt=..., size=...)``.",
    )
    videos: LazyResource[Videos] = LazyResource(
        "media",
        "Videos",
        "Video generation: ``client.videos.generate(model=..., prompt=..., duration=...)``.",
    )
    audio: LazyResource[Audio] = LazyResource(
        "media",
        "Audio",
        "Speech: ``audio.speech(model=..., text=...)``, ``audio.transcribe(model=..., audio=...)``.",
    )
    web: LazyResource[Web] = LazyResource(
        "web",
        "Web",
        "The web: ``web.scrape(model=..., url=...)``, ``web.search(model=..., query=...)``.",
    )
    social: LazyResource[Social] = LazyResource(
        "web", "Social", "Social data: ``social.profile(model=..., handle=...)``."
    )
    email: LazyResource[Email] = LazyResource(
        "messaging", "Email", "Email: ``email.send(model=..., to=..., subject=..., text=...)``."
    )
    sms: LazyResource[Sms] = LazyResource(
        "messaging", "Sms", "SMS: ``sms.send(model=..., to='+14155550123', text=...)``."
    )
    payments: LazyResource[Payments] = LazyResource(
        "messaging",
        "Payments",
        "Payments: ``payments.create(model=..., amount=..., currency=...)``.",
    )
    documents: LazyResource[Documents] = LazyResource(
        "data", "Documents", "Document parsing: ``documents.parse(model=..., file=...)``."
    )
    storage: LazyResource[Storage] = LazyResource(
        "data", "Storage", "Object storage: ``storage.put/get/list/delete(model=..., ...)``."
    )
    databases: LazyResource[Databases] = LazyResource(
        "data",
        "Databases",
        "SQL: ``databases.query(model=..., sql=...)``, ``databases.execute(...)``.",
    )

    discovery: LazyResource[Discovery] = LazyResource(
        "discovery",
        "Discovery",
        "The site-root files: ``discovery.llms_txt()``, ``.agent_card()``, ``.mcp_server_card()``.",
    )

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


class AsyncClient(BaseClient[AsyncPipeline], AsyncClosing):
    """The asynchronous client: ``AsyncClient(api_key=..., base_url=...)``, then
    ``await client.chat.completions.create(...)``. Use it in ``async with`` or ``await close()``.

    One client serves many concurrent calls over one connection pool; keep it for the life of
    the application. Settings are those of `Client`; ``http_client`` is an `httpx.AsyncClient`.
    ``max_concurrency`` bounds the requests in flight across all tasks (the plans cap
    concurrent requests; a stream is in flight until it is closed). Its own pool is aiohttp's
    on asyncio (much faster under many concurrent requests) and httpx's on trio.

    Args:
        api_key: The gateway key; ``AIGATEWAY_API_KEY`` when not given. Sent only to the
            gateway's own host.
        base_url: The gateway's URL, ending in ``/v1``; ``AIGATEWAY_BASE_URL`` when not given.
        timeout: Seconds, or an `httpx.Timeout` (connect, read, write, pool), for every request.
        deadline: Seconds a whole call may take: connecting, every attempt, every wait between
            attempts and, for a stream, its whole life. By default 600 for a plain call and
            none for a stream (its idle timeout applies); None for none at all.
        max_retries: Retries after a failed attempt (connection errors, 408, 409, 429, 5xx).
        default_headers: Headers sent with every request.
        http_client: Your own `httpx.AsyncClient` (you close it); its settings are used as they are.
        transport: An `httpx.AsyncBaseTransport` to route requests elsewhere (a mock, a proxy).
        retry_policy: What is retried, the waits between attempts and their cap.
        auto_idempotency_keys: True: every POST gets a generated ``Idempotency-Key``, so calls
            that act on the world are retried safely too.
        wait_for_rate_limit: True: wait for a spent rate-limit window to reset instead of
            getting a `RateLimitError`.
        max_concurrency: The most requests in flight at once (a stream counts until closed).
        max_response_bytes: The most bytes a reply read into memory may hold, counted after
            decompression (64 MiB by default); past it the connection is closed and
            `ResponseTooLargeError` raised. Streams hold each event to 1 MiB instead.
        stream_first_event_timeout: Seconds from a stream's request to its first event (a
            timeout there is retried); the idle timeout when not given.
        stream_idle_timeout: Seconds allowed between a stream's events; None for no limit.
        stream_deadline: Deprecated (removed in the next release): ``deadline`` for streams
            only.
        max_credits: Refuse calls (`BudgetExceededError`, nothing sent) once this many credits
            are spent; ``client.usage`` says what was.
        tracing: True: an OpenTelemetry span per call from the global tracer provider; or
            the `TracerProvider` to use. Off by default (needs the ``otel`` extra).
        shared_state: An `aigateway.shared.RedisState`: the rate limit, credit budget, usage
            and idempotency keys of actions are shared by every process on the key.
        rate_limit: A `RateLimit` to keep to (with ``shared_state``) instead of learning it
            from the gateway's replies; implies ``wait_for_rate_limit``.
    """

    _slots_type = LoopSlots

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | httpx.URL | None = None,
        timeout: TimeoutTypes = DEFAULT_TIMEOUT,
        deadline: float | None = DEFAULT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        default_headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        retry_policy: RetryPolicy | None = None,
        auto_idempotency_keys: bool = False,
        wait_for_rate_limit: bool = False,
        max_concurrency: int | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        stream_first_event_timeout: float | None = None,
        stream_idle_timeout: float | None = DEFAULT_STREAM_IDLE_TIMEOUT,
        stream_deadline: float | None = DEFAULT,
        max_credits: float | None = None,
        tracing: bool | TracerProvider = False,
        shared_state: RedisState | None = None,
        rate_limit: RateLimit | None = None,
    ) -> None:
        self._setup(
            AsyncPipeline,
            httpx.AsyncClient,
            own_http_client_type=AsyncHTTPClient,
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            deadline=deadline,
            max_retries=max_retries,
            default_headers=default_headers,
            http_client=http_client,
            transport=transport,
            retry_policy=retry_policy,
            auto_idempotency_keys=auto_idempotency_keys,
            wait_for_rate_limit=wait_for_rate_limit,
            max_concurrency=max_concurrency,
            max_response_bytes=max_response_bytes,
            stream_first_event_timeout=stream_first_event_timeout,
            stream_idle_timeout=stream_idle_timeout,
            stream_deadline=stream_deadline,
            max_credits=max_credits,
            tracing=tracing,
            shared_state=shared_state,
            rate_limit=rate_limit,
        )

    chat: LazyResource[AsyncChat] = LazyResource(
        "chat", "AsyncChat", "Chat completions: ``await client.chat.completions.create(...)``."
    )
    models: LazyResource[AsyncModels] = LazyResource(
        "models", "AsyncModels", "The model catalogue: ``await client.models.list()``."
    )

    run: LazyResource[AsyncRun] = LazyResource(
        "run",
        "AsyncRun",
        "Any service on ``POST /run``: ``await client.run(model, inputs)`` returns a `RunResult`.",
    )
    images: LazyResource[AsyncImages] = LazyResource(
        "media",
        "AsyncImages",
        "Image generation: ``await client.images.generate(model=..., prompt=..., size=...)``.",
    )
    videos: LazyResource[AsyncVideos] = LazyResource(
        "media",
        "AsyncVideos",
        "Video generation: ``await client.videos.generate(model=..., prompt=..., duration=...)``.",
    )
    audio: LazyResource[AsyncAudio] = LazyResource(
        "media",
        "AsyncAudio",
        "Speech: ``audio.speech(model=..., text=...)``, ``audio.transcribe(model=..., audio=...)``.",
    )
    web: LazyResource[AsyncWeb] = LazyResource(
        "web",
        "AsyncWeb",
        "The web: ``web.scrape(model=..., url=...)``, ``web.search(model=..., query=...)``.",
    )
    social: LazyResource[AsyncSocial] = LazyResource(
        "web", "AsyncSocial", "Social data: ``social.profile(model=..., handle=...)``."
    )
    email: LazyResource[AsyncEmail] = LazyResource(
        "messaging",
        "AsyncEmail",
        "Email: ``email.send(model=..., to=..., subject=..., text=...)``.",
    )
    sms: LazyResource[AsyncSms] = LazyResource(
        "messaging", "AsyncSms", "SMS: ``sms.send(model=..., to='+14155550123', text=...)``."
    )
    payments: LazyResource[AsyncPayments] = LazyResource(
        "messaging",
        "AsyncPayments",
        "Payments: ``payments.create(model=..., amount=..., currency=...)``.",
    )
    documents: LazyResource[AsyncDocuments] = LazyResource(
        "data", "AsyncDocuments", "Document parsing: ``documents.parse(model=..., file=...)``."
    )
    storage: LazyResource[AsyncStorage] = LazyResource(
        "data", "AsyncStorage", "Object storage: ``storage.put/get/list/delete(model=..., ...)``."
    )
    databases: LazyResource[AsyncDatabases] = LazyResource(
        "data",
        "AsyncDatabases",
        "SQL: ``databases.query(model=..., sql=...)``, ``databases.execute(...)``.",
    )

    discovery: LazyResource[AsyncDiscovery] = LazyResource(
        "discovery",
        "AsyncDiscovery",
        "The site-root files: ``await discovery.llms_txt()``, ``.agent_card()``, ...",
    )

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
