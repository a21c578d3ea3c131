"""`Client` and `AsyncClient`: configuration, resources, and closing.

The two differ only in the pipeline driver and httpx client they hold and in ``close``;
everything else (settings, what the client remembers, repr, ``with_options``) lives in
`_BaseClient`. Resources hold the client's pipeline, not the client; each is imported and
built on first use (which keeps ``import aigateway`` cheap) and kept in the client's
``__dict__``, so a ``with_options`` copy, a new object, starts with none.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

import httpx

from ._closing import AsyncClosing, Closing
from ._config import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    ClientConfig,
    TimeoutTypes,
    check_stream_timeouts,
    coerce_timeout,
)
from ._drivers import AsyncPipeline, SyncPipeline
from ._http import Pipeline
from ._ledger import CreditBudget, UsageLedger
from ._limits import RequestBudget
from ._logging import configure_from_env
from ._retry import RetryPolicy
from ._state import ClientState
from ._timeouts import DEFAULT_STREAM_IDLE_TIMEOUT, StreamTimeouts
from .errors import ConfigurationError, RateLimitInfo

if TYPE_CHECKING:
    import anyio
    from typing_extensions import Self

    from .resources.chat import AsyncChat, Chat
    from .resources.data import (
        AsyncDatabases,
        AsyncDocuments,
        AsyncStorage,
        Databases,
        Documents,
        Storage,
    )
    from .resources.discovery import AsyncDiscovery, Discovery
    from .resources.media import AsyncAudio, AsyncImages, AsyncVideos, Audio, Images, Videos
    from .resources.messaging import AsyncEmail, AsyncPayments, AsyncSms, Email, Payments, Sms
    from .resources.models import AsyncModels, Models
    from .resources.run import AsyncRun, Run
    from .resources.web import AsyncSocial, AsyncWeb, Social, Web

__all__ = ["AsyncClient", "Client"]

PipelineT = TypeVar("PipelineT", bound=Pipeline)
ResourceT = TypeVar("ResourceT")
_KEEP: Any = object()


class _LazyResource(Generic[ResourceT]):
    """A resource built on first access from ``aigateway.resources.<module>`` around the
    client's pipeline, then kept on the client like a ``cached_property``."""

    def __init__(self, module: str, class_name: str, doc: str) -> None:
        self._module = module
        self._class_name = class_name
        self.__doc__ = doc

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, client: None, owner: type) -> Self: ...
    @overload
    def __get__(self, client: object, owner: type) -> ResourceT: ...
    def __get__(self, client: object | None, owner: type) -> Self | ResourceT:
        if client is None:
            return self
        import importlib

        module = importlib.import_module(f".resources.{self._module}", __package__)
        pipeline = client._pipeline  # type: ignore[attr-defined]
        resource: ResourceT = getattr(module, self._class_name)(pipeline)
        client.__dict__[self._name] = resource
        return resource


class _BaseClient(Generic[PipelineT]):
    _slots_type: Callable[[int], threading.BoundedSemaphore | anyio.Semaphore]
    _pipeline: PipelineT
    _owns_http_client: bool
    _closed: bool = False

    def _setup(
        self,
        pipeline_type: type[PipelineT],
        http_client_type: type[httpx.Client] | type[httpx.AsyncClient],
        *,
        http_client: httpx.Client | httpx.AsyncClient | None,
        transport: httpx.BaseTransport | httpx.AsyncBaseTransport | None,
        retry_policy: RetryPolicy | None,
        stream_first_event_timeout: float | None,
        stream_idle_timeout: float | None,
        stream_deadline: float | None,
        max_credits: float | None = None,
        **settings: Any,
    ) -> None:
        config = ClientConfig.resolve(
            stream_timeouts=StreamTimeouts(
                stream_first_event_timeout, stream_idle_timeout, stream_deadline
            ),
            **settings,
        )
        ledger = UsageLedger()
        credit_budget = None if max_credits is None else CreditBudget(max_credits, ledger)
        if http_client is not None and not isinstance(http_client, http_client_type):
            raise ConfigurationError(
                f"http_client must be an {http_client_type.__module__}.{http_client_type.__name__} "
                f"for {type(self).__name__}, got {type(http_client).__name__}"
            )
        if http_client is not None and transport is not None:
            raise ConfigurationError("pass http_client or transport, not both")
        self._owns_http_client = http_client is None
        if http_client is None:
            http_client = http_client_type(timeout=config.timeout, transport=transport)  # type: ignore[arg-type]
        configure_from_env()
        state = ClientState(
            budget=RequestBudget() if config.wait_for_rate_limit else None, ledger=ledger
        )
        if config.max_concurrency is not None:
            state.slots = self._slots_type(config.max_concurrency)
        self._pipeline = pipeline_type(
            config, http_client, state, retry_policy or RetryPolicy(), transport
        )
        self._pipeline.credit_budget = credit_budget

    @property
    def config(self) -> ClientConfig:
        """The checked settings (the key is redacted in its repr)."""
        return self._pipeline.config

    @property
    def base_url(self) -> httpx.URL:
        return self.config.base_url

    @property
    def remaining_credits(self) -> float | None:
        """The credits left, as the last reply that said so reported (None until one did)."""
        return self._pipeline.state.remaining_credits

    @property
    def balance_warning(self) -> bool | None:
        """Whether the last reply that carried credits warned of a low balance (< 10)."""
        return self._pipeline.state.balance_warning

    @property
    def rate_limit(self) -> RateLimitInfo | None:
        """The ``X-RateLimit-*`` values of the last reply that carried them."""
        return self._pipeline.state.rate_limit

    @property
    def usage(self) -> UsageLedger:
        """What this client and its copies spent, per model and in total (``str()``: a table;
        ``as_dict()``)."""
        return self._pipeline.state.ledger

    def with_budget(self, *, max_credits: float) -> Self:
        """A client sharing this one's connections, memory and usage that refuses calls
        (`BudgetExceededError`, nothing sent) once it has spent ``max_credits`` from now."""
        twin = self._copy_with(self.config, None)
        twin._pipeline.credit_budget = CreditBudget(max_credits, self.usage)
        return twin

    @property
    def is_closed(self) -> bool:
        return self._closed

    def with_options(
        self,
        *,
        timeout: TimeoutTypes | object = _KEEP,
        max_retries: int | object = _KEEP,
        default_headers: Mapping[str, str] | object = _KEEP,
        retry_policy: RetryPolicy | None = None,
        auto_idempotency_keys: bool | object = _KEEP,
        stream_first_event_timeout: float | None = _KEEP,
        stream_idle_timeout: float | None = _KEEP,
        stream_deadline: float | None = _KEEP,
    ) -> Self:
        """A client with some settings changed, sharing this one's connections, memory and
        limits."""
        config = self._options_config(
            timeout=timeout, max_retries=max_retries, default_headers=default_headers
        )
        if auto_idempotency_keys is not _KEEP:
            config = config.with_changes(auto_idempotency_keys=bool(auto_idempotency_keys))
        streams = config.stream_timeouts
        config = config.with_changes(
            stream_timeouts=check_stream_timeouts(
                StreamTimeouts(
                    streams.first_event
                    if stream_first_event_timeout is _KEEP
                    else stream_first_event_timeout,
                    streams.idle if stream_idle_timeout is _KEEP else stream_idle_timeout,
                    streams.deadline if stream_deadline is _KEEP else stream_deadline,
                )
            )
        )
        return self._copy_with(config, retry_policy)

    def _options_config(
        self,
        *,
        timeout: TimeoutTypes | object,
        max_retries: int | object,
        default_headers: Mapping[str, str] | object,
    ) -> ClientConfig:
        config = self.config
        changes: dict[str, object] = {}
        if timeout is not _KEEP:
            changes["timeout"] = coerce_timeout(timeout)  # type: ignore[arg-type]
        if max_retries is not _KEEP:
            if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
                raise ConfigurationError(
                    f"max_retries must be an integer >= 0, got {max_retries!r}"
                )
            changes["max_retries"] = max_retries
        if default_headers is not _KEEP:
            changes["default_headers"] = {**config.default_headers, **default_headers}  # type: ignore[dict-item]
        return config.with_changes(**changes)

    def _copy_with(self, config: ClientConfig, retry: RetryPolicy | None) -> Self:
        """A client sharing this one's connection pool and memory, with other settings: a new
        object, so it builds its own resources around its own pipeline."""
        twin = object.__new__(type(self))
        pipeline = self._pipeline
        twin._pipeline = type(pipeline)(
            config,
            pipeline.http_client,
            pipeline.state,
            retry or pipeline.retry,
            pipeline.transport,
            pipeline.credit_budget,
        )
        twin._owns_http_client = False  # the original closes the shared pool
        return twin

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return (
            f"{type(self).__name__}(base_url={str(self.base_url)!r}, api_key=<redacted>, {state})"
        )

    def __del__(self) -> None:
        # Only a warning: closing here could run at any time on any thread, or need an event loop.
        if getattr(self, "_owns_http_client", False) and not self._closed:
            warnings.warn(
                f"{type(self).__name__} was garbage-collected without being closed; "
                "use `with` or call close()",
                ResourceWarning,
                stacklevel=2,
                source=self,
            )


class Client(_BaseClient[SyncPipeline], Closing):
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
    for every request; for streams and sockets also ``stream_first_event_timeout`` (from the
    request to the first chunk; a timeout there is retried), ``stream_idle_timeout`` (between
    chunks, 300 s) and ``stream_deadline`` (the whole stream). Every call takes the same
    keywords to override them.
    """

    _slots_type = threading.BoundedSemaphore

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | httpx.URL | None = None,
        timeout: TimeoutTypes = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        default_headers: Mapping[str, str] | None = None,
        http_client: httpx.Client | None = None,
        transport: httpx.BaseTransport | None = None,
        retry_policy: RetryPolicy | None = None,
        auto_idempotency_keys: bool = False,
        wait_for_rate_limit: bool = False,
        max_concurrency: int | None = None,
        stream_first_event_timeout: float | None = None,
        stream_idle_timeout: float | None = DEFAULT_STREAM_IDLE_TIMEOUT,
        stream_deadline: float | None = None,
        max_credits: float | None = None,
    ) -> None:
        self._setup(
            SyncPipeline,
            httpx.Client,
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            default_headers=default_headers,
            http_client=http_client,
            transport=transport,
            retry_policy=retry_policy,
            auto_idempotency_keys=auto_idempotency_keys,
            wait_for_rate_limit=wait_for_rate_limit,
            max_concurrency=max_concurrency,
            stream_first_event_timeout=stream_first_event_timeout,
            stream_idle_timeout=stream_idle_timeout,
            stream_deadline=stream_deadline,
            max_credits=max_credits,
        )

    chat: _LazyResource[Chat] = _LazyResource(
        "chat", "Chat", "Chat completions: ``client.chat.completions.create(...)``."
    )
    models: _LazyResource[Models] = _LazyResource(
        "models", "Models", "The model catalogue: ``client.models.list()``, ``.retrieve(id)``."
    )

    run: _LazyResource[Run] = _LazyResource(
        "run",
        "Run",
        "Any service on ``POST /run``: ``client.run(model, inputs)`` returns a `RunResult`.",
    )
    images: _LazyResource[Images] = _LazyResource(
        "media",
        "Images",
        "Image generation: ``client.images.generate(model=..., prompt=..., size=...)``.",
    )
    videos: _LazyResource[Videos] = _LazyResource(
        "media",
        "Videos",
        "Video generation: ``client.videos.generate(model=..., prompt=..., duration=...)``.",
    )
    audio: _LazyResource[Audio] = _LazyResource(
        "media",
        "Audio",
        "Speech: ``audio.speech(model=..., text=...)``, ``audio.transcribe(model=..., audio=...)``.",
    )
    web: _LazyResource[Web] = _LazyResource(
        "web",
        "Web",
        "The web: ``web.scrape(model=..., url=...)``, ``web.search(model=..., query=...)``.",
    )
    social: _LazyResource[Social] = _LazyResource(
        "web", "Social", "Social data: ``social.profile(model=..., handle=...)``."
    )
    email: _LazyResource[Email] = _LazyResource(
        "messaging", "Email", "Email: ``email.send(model=..., to=..., subject=..., text=...)``."
    )
    sms: _LazyResource[Sms] = _LazyResource(
        "messaging", "Sms", "SMS: ``sms.send(model=..., to='+14155550123', text=...)``."
    )
    payments: _LazyResource[Payments] = _LazyResource(
        "messaging",
        "Payments",
        "Payments: ``payments.create(model=..., amount=..., currency=...)``.",
    )
    documents: _LazyResource[Documents] = _LazyResource(
        "data", "Documents", "Document parsing: ``documents.parse(model=..., file=...)``."
    )
    storage: _LazyResource[Storage] = _LazyResource(
        "data", "Storage", "Object storage: ``storage.put/get/list/delete(model=..., ...)``."
    )
    databases: _LazyResource[Databases] = _LazyResource(
        "data",
        "Databases",
        "SQL: ``databases.query(model=..., sql=...)``, ``databases.execute(...)``.",
    )

    discovery: _LazyResource[Discovery] = _LazyResource(
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
        if not self._closed and self._owns_http_client:
            self._pipeline.http_client.close()
        self._closed = True


class AsyncClient(_BaseClient[AsyncPipeline], AsyncClosing):
    """The asynchronous client: ``AsyncClient(api_key=..., base_url=...)``, then
    ``await client.chat.completions.create(...)``. Use it in ``async with`` or ``await close()``.

    One client serves many concurrent calls over one connection pool; keep it for the life of
    the application. Settings are those of `Client`; ``http_client`` is an `httpx.AsyncClient`.
    ``max_concurrency`` bounds the requests in flight across all tasks (the plans cap
    concurrent requests; a stream is in flight until it is closed).
    """

    @staticmethod
    def _slots_type(limit: int) -> anyio.Semaphore:
        import anyio  # only with max_concurrency: keeps `import aigateway` light

        return anyio.Semaphore(limit)

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | httpx.URL | None = None,
        timeout: TimeoutTypes = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        default_headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        retry_policy: RetryPolicy | None = None,
        auto_idempotency_keys: bool = False,
        wait_for_rate_limit: bool = False,
        max_concurrency: int | None = None,
        stream_first_event_timeout: float | None = None,
        stream_idle_timeout: float | None = DEFAULT_STREAM_IDLE_TIMEOUT,
        stream_deadline: float | None = None,
        max_credits: float | None = None,
    ) -> None:
        self._setup(
            AsyncPipeline,
            httpx.AsyncClient,
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            default_headers=default_headers,
            http_client=http_client,
            transport=transport,
            retry_policy=retry_policy,
            auto_idempotency_keys=auto_idempotency_keys,
            wait_for_rate_limit=wait_for_rate_limit,
            max_concurrency=max_concurrency,
            stream_first_event_timeout=stream_first_event_timeout,
            stream_idle_timeout=stream_idle_timeout,
            stream_deadline=stream_deadline,
            max_credits=max_credits,
        )

    chat: _LazyResource[AsyncChat] = _LazyResource(
        "chat", "AsyncChat", "Chat completions: ``await client.chat.completions.create(...)``."
    )
    models: _LazyResource[AsyncModels] = _LazyResource(
        "models", "AsyncModels", "The model catalogue: ``await client.models.list()``."
    )

    run: _LazyResource[AsyncRun] = _LazyResource(
        "run",
        "AsyncRun",
        "Any service on ``POST /run``: ``await client.run(model, inputs)`` returns a `RunResult`.",
    )
    images: _LazyResource[AsyncImages] = _LazyResource(
        "media",
        "AsyncImages",
        "Image generation: ``await client.images.generate(model=..., prompt=..., size=...)``.",
    )
    videos: _LazyResource[AsyncVideos] = _LazyResource(
        "media",
        "AsyncVideos",
        "Video generation: ``await client.videos.generate(model=..., prompt=..., duration=...)``.",
    )
    audio: _LazyResource[AsyncAudio] = _LazyResource(
        "media",
        "AsyncAudio",
        "Speech: ``audio.speech(model=..., text=...)``, ``audio.transcribe(model=..., audio=...)``.",
    )
    web: _LazyResource[AsyncWeb] = _LazyResource(
        "web",
        "AsyncWeb",
        "The web: ``web.scrape(model=..., url=...)``, ``web.search(model=..., query=...)``.",
    )
    social: _LazyResource[AsyncSocial] = _LazyResource(
        "web", "AsyncSocial", "Social data: ``social.profile(model=..., handle=...)``."
    )
    email: _LazyResource[AsyncEmail] = _LazyResource(
        "messaging",
        "AsyncEmail",
        "Email: ``email.send(model=..., to=..., subject=..., text=...)``.",
    )
    sms: _LazyResource[AsyncSms] = _LazyResource(
        "messaging", "AsyncSms", "SMS: ``sms.send(model=..., to='+14155550123', text=...)``."
    )
    payments: _LazyResource[AsyncPayments] = _LazyResource(
        "messaging",
        "AsyncPayments",
        "Payments: ``payments.create(model=..., amount=..., currency=...)``.",
    )
    documents: _LazyResource[AsyncDocuments] = _LazyResource(
        "data", "AsyncDocuments", "Document parsing: ``documents.parse(model=..., file=...)``."
    )
    storage: _LazyResource[AsyncStorage] = _LazyResource(
        "data", "AsyncStorage", "Object storage: ``storage.put/get/list/delete(model=..., ...)``."
    )
    databases: _LazyResource[AsyncDatabases] = _LazyResource(
        "data",
        "AsyncDatabases",
        "SQL: ``databases.query(model=..., sql=...)``, ``databases.execute(...)``.",
    )

    discovery: _LazyResource[AsyncDiscovery] = _LazyResource(
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
        if not self._closed and self._owns_http_client:
            await self._pipeline.http_client.aclose()
        self._closed = True
