"""What `Client` and `AsyncClient` share: the constructor and its settings, what the client
remembers, repr, ``with_options`` and ``with_budget`` copies, and the resources, built lazily
around the client's pipeline (one descriptor, `LazyResource`)."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from typing_extensions import deprecated

from aigateway._call.settings import (
    DEFAULT,
    DEFAULT_DEADLINE,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    ClientConfig,
    check_stream_timeouts,
    checked_api_key,
    chosen_deadlines,
    chosen_stack,
    coerce_timeout,
)
from aigateway._call.timeouts import DEFAULT_STREAM_IDLE_TIMEOUT, StreamTimeouts
from aigateway._display import card, field, guarded, plain, rate_limit_text
from aigateway._lazy import collector_paused
from aigateway._logging import configure_from_env
from aigateway._pipeline.credit_budget import CreditBudget
from aigateway._pipeline.flow import Pipeline
from aigateway._pipeline.ledger import UsageLedger
from aigateway._pipeline.limits import LoopSlots, RateLimit, RateLimiter
from aigateway._pipeline.retry import RetryPolicy
from aigateway._pipeline.state import ClientState
from aigateway._stacks import (
    DEFAULT_STACK,
    URL,
    AsyncTransport,
    HTTPClient,
    Stack,
    SyncTransport,
    get,
    stack_of,
)
from aigateway.errors import ConfigurationError, HTTPClientTypeError, RateLimitInfo

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider
    from typing_extensions import Self

    from aigateway._call.settings import TimeoutTypes
    from aigateway._pipeline.drivers import AsyncPipeline, SyncPipeline
    from aigateway._pipeline.state import SharedState
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


__all__ = ["BaseClient", "LazyResource"]

PipelineT = TypeVar("PipelineT", bound=Pipeline)
HTTPClientT = TypeVar("HTTPClientT", bound=HTTPClient)
TransportT = TypeVar("TransportT", bound=SyncTransport | AsyncTransport)
ResourceT = TypeVar("ResourceT")
AsyncResourceT = TypeVar("AsyncResourceT")
UNCHANGED: Any = object()
"""The default of each `with_options` argument: that setting stays as it is."""


class LazyResource(Generic[ResourceT, AsyncResourceT]):
    """A resource of both clients, built on first access from ``aigateway.resources.<module>``
    around the client's pipeline (``class_name`` on a `Client`, ``Async<class_name>`` on an
    `AsyncClient`), then kept on the client like a ``cached_property``."""

    def __init__(self, module: str, class_name: str, doc: str) -> None:
        self._module = module
        self._class_name = class_name
        self.__doc__ = doc

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, client: None, owner: type) -> Self: ...
    @overload
    def __get__(self, client: BaseClient[SyncPipeline, Any, Any], owner: type) -> ResourceT: ...
    @overload
    def __get__(
        self, client: BaseClient[AsyncPipeline, Any, Any], owner: type
    ) -> AsyncResourceT: ...
    def __get__(self, client: BaseClient[Any, Any, Any] | None, owner: type) -> Any:
        if client is None:
            return self
        import importlib

        with collector_paused():
            module = importlib.import_module(f"aigateway.resources.{self._module}")
        pipeline = client._pipeline
        name = f"Async{self._class_name}" if pipeline.asynchronous else self._class_name
        resource = getattr(module, name)(pipeline)
        client.__dict__[self._name] = resource
        return resource


class BaseClient(Generic[PipelineT, HTTPClientT, TransportT]):
    """A client, sync or async by its driver (`SyncPipeline`, `AsyncPipeline`) and the http
    client and transport it takes (of httpx or httpx2): one constructor, one set of resources
    and properties."""

    _pipeline_type: type[PipelineT]
    """The driver of the request path (its ``asynchronous`` says which http clients it takes)."""
    _slots_type: Callable[[int], threading.BoundedSemaphore | LoopSlots]
    """The concurrency slots of ``max_concurrency``."""
    _pipeline: PipelineT
    _owns_http_client: bool
    _closed: bool = False

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | URL | None = None,
        timeout: TimeoutTypes = DEFAULT_TIMEOUT,
        deadline: float | None = DEFAULT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        default_headers: Mapping[str, str] | None = None,
        http_client: HTTPClientT | None = None,
        transport: TransportT | None = None,
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
        """Every setting is checked here: one it cannot work with raises `ConfigurationError`.

        Args:
            api_key: The gateway key; ``AIGATEWAY_API_KEY`` when not given. Sent only to the
                gateway's own host.
            base_url: The gateway's URL, ending in ``/v1``; ``AIGATEWAY_BASE_URL`` when not
                given.
            timeout: Seconds, or an ``httpx.Timeout`` or ``httpx2.Timeout`` (connect, read,
                write, pool), for every request.
            deadline: Seconds a whole call may take: connecting, every attempt, every wait
                between attempts and, for a stream, its whole life. By default 600 for a plain
                call and none for a stream (its idle timeout applies); None for none at all.
            max_retries: Retries after a failed attempt (connection errors, 408, 409, 429, 5xx).
            default_headers: Headers sent with every request.
            http_client: Your own ``httpx.Client`` or ``httpx2.Client`` (their
                ``AsyncClient`` for `AsyncClient`; you close it); its settings are used as
                they are. Anything else is an `HTTPClientTypeError`, a closed one a
                `ConfigurationError`, both raised here.
            transport: An ``httpx.BaseTransport`` or ``httpx2.BaseTransport`` (their
                ``AsyncBaseTransport`` for `AsyncClient`) to route requests elsewhere (a mock,
                a proxy); the client's own http client is then of the transport's library.
            retry_policy: What is retried, the waits between attempts and their cap.
            auto_idempotency_keys: True: every POST gets a generated ``Idempotency-Key``, so
                calls that act on the world are retried safely too.
            wait_for_rate_limit: True: wait for a spent rate-limit window to reset instead of
                getting a `RateLimitError`.
            max_concurrency: The most requests in flight at once (a stream counts until
                closed).
            max_response_bytes: The most bytes a reply read into memory may hold, counted after
                decompression (64 MiB by default); past it the connection is closed and
                `ResponseTooLargeError` raised. Streams hold each event to 1 MiB instead.
            stream_first_event_timeout: Seconds from a stream's request to its first event (a
                timeout there is retried); the idle timeout when not given.
            stream_idle_timeout: Seconds allowed between a stream's events; None for no limit.
            stream_deadline: Deprecated (removed in the next release): ``deadline`` for
                streams only.
            max_credits: Refuse calls (`BudgetExceededError`, nothing sent) once this many
                credits are spent; ``client.usage`` says what was.
            tracing: True: an OpenTelemetry span per call from the global tracer provider; or
                the `TracerProvider` to use. Off by default (needs the ``otel`` extra).
            shared_state: An `aigateway.shared.RedisState`: the rate limit, credit budget,
                usage and idempotency keys of actions are shared by every process on the key.
            rate_limit: A `RateLimit` to keep to (with ``shared_state``) instead of learning it
                from the gateway's replies; implies ``wait_for_rate_limit``.
        """
        plain_deadline, stream_deadline = chosen_deadlines(
            deadline, stream_deadline, unset=DEFAULT, plain=DEFAULT_DEADLINE, streams=None
        )
        asynchronous = self._pipeline_type.asynchronous
        stack = checked_stack(type(self).__name__, asynchronous, http_client, transport)
        config = ClientConfig.resolve(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            default_headers=default_headers,
            auto_idempotency_keys=auto_idempotency_keys,
            wait_for_rate_limit=wait_for_rate_limit,
            max_concurrency=max_concurrency,
            stream_timeouts=StreamTimeouts(
                stream_first_event_timeout, stream_idle_timeout, stream_deadline
            ),
            deadline=plain_deadline,
            max_response_bytes=max_response_bytes,
            stack=stack,
        )
        observer = None
        if tracing is not False:  # checked before the http client is made
            from aigateway.integrations.opentelemetry import observer_for

            observer = observer_for(tracing)
        if shared_state is not None or rate_limit is not None:
            check_shared(shared_state, rate_limit)
            config = config.with_changes(
                wait_for_rate_limit=config.wait_for_rate_limit or bool(rate_limit)
            )
        ledger = UsageLedger()
        credit_budget = None if max_credits is None else CreditBudget(max_credits, ledger)
        self._owns_http_client = http_client is None
        from aigateway._http.clients import own_http_client

        client: HTTPClient = http_client or own_http_client(
            stack, timeout=config.timeout, asynchronous=asynchronous, transport=transport
        )
        configure_from_env()
        state = new_state(config, ledger, shared_state=shared_state, rate_limit=rate_limit)
        if config.max_concurrency is not None:
            state.slots = self._slots_type(config.max_concurrency)
        self._pipeline = self._pipeline_type(
            config, client, state, retry_policy or RetryPolicy(), transport
        )
        self._pipeline.credit_budget = credit_budget
        self._pipeline.observer = observer
        if asynchronous and not self._owns_http_client:  # its connections: of one event loop
            from aigateway._http.loops import FirstLoop

            self._pipeline.loop_guard = FirstLoop()

    chat: LazyResource[Chat, AsyncChat] = LazyResource(
        "chat", "Chat", "Chat completions: ``client.chat.completions.create(...)``."
    )
    models: LazyResource[Models, AsyncModels] = LazyResource(
        "models", "Models", "The model catalogue: ``client.models.list()``, ``.retrieve(id)``."
    )

    run: LazyResource[Run, AsyncRun] = LazyResource(
        "run",
        "Run",
        "Any service on ``POST /run``: ``client.run(model, inputs)`` returns a `RunResult`.",
    )
    images: LazyResource[Images, AsyncImages] = LazyResource(
        "media",
        "Images",
        "Image generation: ``client.images.generate(model=..., prompt=..., size=...)``.",
    )
    videos: LazyResource[Videos, AsyncVideos] = LazyResource(
        "media",
        "Videos",
        "Video generation: ``client.videos.generate(model=..., prompt=..., duration=...)``.",
    )
    audio: LazyResource[Audio, AsyncAudio] = LazyResource(
        "media",
        "Audio",
        "Speech: ``audio.speech(model=..., text=...)``, ``audio.transcribe(model=..., audio=...)``.",
    )
    web: LazyResource[Web, AsyncWeb] = LazyResource(
        "web",
        "Web",
        "The web: ``web.scrape(model=..., url=...)``, ``web.search(model=..., query=...)``.",
    )
    social: LazyResource[Social, AsyncSocial] = LazyResource(
        "web", "Social", "Social data: ``social.profile(model=..., handle=...)``."
    )
    email: LazyResource[Email, AsyncEmail] = LazyResource(
        "messaging", "Email", "Email: ``email.send(model=..., to=..., subject=..., text=...)``."
    )
    sms: LazyResource[Sms, AsyncSms] = LazyResource(
        "messaging", "Sms", "SMS: ``sms.send(model=..., to='+14155550123', text=...)``."
    )
    payments: LazyResource[Payments, AsyncPayments] = LazyResource(
        "messaging",
        "Payments",
        "Payments: ``payments.create(model=..., amount=..., currency=...)``.",
    )
    documents: LazyResource[Documents, AsyncDocuments] = LazyResource(
        "data", "Documents", "Document parsing: ``documents.parse(model=..., file=...)``."
    )
    storage: LazyResource[Storage, AsyncStorage] = LazyResource(
        "data", "Storage", "Object storage: ``storage.put/get/list/delete(model=..., ...)``."
    )
    databases: LazyResource[Databases, AsyncDatabases] = LazyResource(
        "data",
        "Databases",
        "SQL: ``databases.query(model=..., sql=...)``, ``databases.execute(...)``.",
    )

    discovery: LazyResource[Discovery, AsyncDiscovery] = LazyResource(
        "discovery",
        "Discovery",
        "The site-root files: ``discovery.llms_txt()``, ``.agent_card()``, ``.mcp_server_card()``.",
    )

    @property
    def config(self) -> ClientConfig:
        """The checked settings (the key is redacted in its repr)."""
        return self._pipeline.config

    @property
    def base_url(self) -> URL:
        """The gateway's base URL (ending in ``/v1``) that every path is joined to."""
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
    def last_rate_limit(self) -> RateLimitInfo | None:
        """The ``X-RateLimit-*`` values of the last reply that carried them (None until one
        did); ``reply.rate_limit`` is a reply's own."""
        return self._pipeline.state.rate_limit

    @property
    @deprecated(
        "client.rate_limit is deprecated: use client.last_rate_limit (what the last reply's "
        "X-RateLimit-* headers said; the rate_limit= option is the RateLimit to keep to)",
        category=DeprecationWarning,
    )
    def rate_limit(self) -> RateLimitInfo | None:
        """Deprecated: `last_rate_limit`, the name that is not the ``rate_limit=`` option's."""
        return self.last_rate_limit

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
        """Whether ``close()`` was called (or the ``with`` block ended)."""
        return self._closed

    def with_options(
        self,
        *,
        api_key: str | object = UNCHANGED,
        timeout: TimeoutTypes | object = UNCHANGED,
        max_retries: int | object = UNCHANGED,
        default_headers: Mapping[str, str] | object = UNCHANGED,
        retry_policy: RetryPolicy | None = None,
        auto_idempotency_keys: bool | object = UNCHANGED,
        stream_first_event_timeout: float | None = UNCHANGED,
        stream_idle_timeout: float | None = UNCHANGED,
        stream_deadline: float | None = UNCHANGED,
        deadline: float | None = UNCHANGED,
    ) -> Self:
        """A client with some settings changed, sharing this one's connections, memory and
        limits; settings not given stay as they are.

        Args:
            api_key: Another key: the copy has its own credits, rate-limit values, limiter
                and usage ledger (``usage``), and shares only the connections and the
                concurrency limit. Checked as at construction.
            timeout: Seconds, or an ``httpx.Timeout`` or ``httpx2.Timeout``, for every request.
            max_retries: Retries after a failed attempt.
            default_headers: Headers sent with every request (replacing the client's).
            retry_policy: What is retried and how long to wait.
            auto_idempotency_keys: True: every POST gets a generated ``Idempotency-Key``.
            stream_first_event_timeout: Seconds from the request to a stream's first event.
            stream_idle_timeout: Seconds allowed between a stream's events.
            stream_deadline: Deprecated: ``deadline`` for streams only.
            deadline: Seconds a whole call may take (plain or streamed), retries included.
        """
        config = self._options_config(
            timeout=timeout, max_retries=max_retries, default_headers=default_headers
        )
        if auto_idempotency_keys is not UNCHANGED:
            config = config.with_changes(auto_idempotency_keys=bool(auto_idempotency_keys))
        streams = config.stream_timeouts
        plain_deadline, stream_deadline = chosen_deadlines(
            deadline,
            stream_deadline,
            unset=UNCHANGED,
            plain=config.deadline,
            streams=streams.deadline,
        )
        config = config.with_changes(
            deadline=plain_deadline,
            stream_timeouts=check_stream_timeouts(
                StreamTimeouts(
                    streams.first_event
                    if stream_first_event_timeout is UNCHANGED
                    else stream_first_event_timeout,
                    streams.idle if stream_idle_timeout is UNCHANGED else stream_idle_timeout,
                    stream_deadline,
                )
            ),
        )
        if api_key is UNCHANGED:
            return self._copy_with(config, retry_policy)
        config = config.with_changes(api_key=checked_api_key(api_key))
        key_changed = config.api_key != self.config.api_key
        return self._copy_with(config, retry_policy, key_changed=key_changed)

    def _options_config(
        self,
        *,
        timeout: TimeoutTypes | object,
        max_retries: int | object,
        default_headers: Mapping[str, str] | object,
    ) -> ClientConfig:
        config = self.config
        changes: dict[str, object] = {}
        if timeout is not UNCHANGED:
            stack = stack_of(self._pipeline.http_client) or get(DEFAULT_STACK)
            changes["timeout"] = coerce_timeout(timeout, stack)  # type: ignore[arg-type]
        if max_retries is not UNCHANGED:
            if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
                raise ConfigurationError(
                    f"max_retries must be an integer >= 0, got {max_retries!r}"
                )
            changes["max_retries"] = max_retries
        if default_headers is not UNCHANGED:
            changes["default_headers"] = {**config.default_headers, **default_headers}  # type: ignore[dict-item]
        return config.with_changes(**changes)

    def _copy_with(
        self, config: ClientConfig, retry: RetryPolicy | None, *, key_changed: bool = False
    ) -> Self:
        """A client sharing this one's connection pool, with other settings: a new object, so
        it builds its own resources around its own pipeline. It shares this one's memory too,
        unless ``key_changed``: then it starts the state of its own key (credits, rate limits,
        ledger, a credit budget of the same size), sharing only the concurrency slots."""
        twin = object.__new__(type(self))
        pipeline = self._pipeline
        state, credit_budget = pipeline.state, pipeline.credit_budget
        if key_changed:
            shared = state.shared
            state = new_state(config, UsageLedger(), slots=state.slots)
            if shared is not None:  # the same shared state, seen by the other key
                state.ledger.pending = []
                state.shared = shared.for_key(config.api_key.reveal(), state.limiter)
            if credit_budget is not None:
                credit_budget = CreditBudget(credit_budget.max_credits, state.ledger)
        twin._pipeline = type(pipeline)(
            config,
            pipeline.http_client,
            state,
            retry or pipeline.retry,
            pipeline.transport,
            credit_budget,
        )
        twin._pipeline.observer = pipeline.observer  # tracing stays on (or off)
        twin._pipeline.loop_guard = pipeline.loop_guard
        twin._owns_http_client = False  # the original closes the shared pool
        return twin

    def _display_fields(self) -> list[tuple[str, object]]:
        """What a repr shows: never the key, and nothing that needs a request."""
        return [
            ("base_url", str(self.base_url)),
            ("state", "closed" if self._closed else "open"),
            ("remaining_credits", self.remaining_credits),
            ("last_rate_limit", rate_limit_text(self.last_rate_limit)),
        ]

    @guarded
    def __repr__(self) -> str:
        base_url, *rest = (field(name, value) for name, value in self._display_fields())
        return plain(self, base_url, "api_key=<redacted>", *rest)

    @guarded
    def _repr_html_(self) -> str:
        shown = [(name.replace("_", " "), value) for name, value in self._display_fields()]
        return card(self, [*shown, ("API key", "set (never shown)")])

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


def checked_stack(client: str, asynchronous: bool, http_client: object, transport: object) -> Stack:
    """The HTTP stack of a client (``client``: its class's name): that of the ``http_client``
    or ``transport`` given, else the one of its own pools (`chosen_stack`). Raises, before
    anything is sent, `HTTPClientTypeError` for an object of neither stack or of the other
    kind (sync where async is needed, and the reverse), and `ConfigurationError` for both at
    once or an http client already closed."""
    if http_client is not None and transport is not None:
        raise ConfigurationError("pass http_client or transport, not both")
    given, what = (
        (http_client, "http_client") if http_client is not None else (transport, "transport")
    )
    if given is None:
        return chosen_stack()
    index = 0 if what == "http_client" else 1
    name = _ACCEPTED[asynchronous][index]  # the stack's class it must be an instance of
    stack = stack_of(given)
    if stack is None or not isinstance(given, getattr(stack.module, name)):
        hint = ""
        if stack is not None and isinstance(
            given, getattr(stack.module, _ACCEPTED[not asynchronous][index])
        ):
            kind, twin = ("a sync", "Client") if asynchronous else ("an async", "AsyncClient")
            hint = f" ({kind} one: pass it to aigateway.{twin})"
        raise HTTPClientTypeError(
            f"{what} must be an httpx.{name} or an httpx2.{name} for {client}, "
            f"got {_type_name(given)}{hint}"
        )
    if what == "http_client" and getattr(given, "is_closed", False):
        raise ConfigurationError(
            f"http_client is closed: {client} sends its requests through it, so pass one "
            "that is open (and close it yourself once the client is done), or leave out "
            "http_client= for the client's own"
        )
    return stack


_ACCEPTED = {False: ("Client", "BaseTransport"), True: ("AsyncClient", "AsyncBaseTransport")}
"""What a sync (False) and an async (True) client take of a stack: http client, transport."""


def _type_name(value: object) -> str:
    """``value``'s type as users write it: ``httpx.AsyncClient``, ``requests.Session``."""
    cls = type(value)
    stack = stack_of(cls)
    if stack is not None and getattr(stack.module, cls.__name__, None) is cls:
        return f"{stack.name}.{cls.__name__}"  # a class of the library's own
    return f"{cls.__module__}.{cls.__qualname__}"


def check_shared(shared_state: object, rate_limit: object) -> None:
    """Refuse a shared state that is not one, or a stated rate limit without one (a stated
    limit is waited for: it implies ``wait_for_rate_limit``)."""
    from aigateway.integrations.redis.state import RedisState

    if not isinstance(shared_state, RedisState):
        raise ConfigurationError(
            "rate_limit= is counted in a shared state: pass shared_state=RedisState(url) too"
            if shared_state is None
            else f"shared_state must be an aigateway.shared.RedisState, got "
            f"{type(shared_state).__name__}"
        )
    if rate_limit is not None and not isinstance(rate_limit, RateLimit):
        raise ConfigurationError(
            f"rate_limit must be an aigateway.RateLimit, got {type(rate_limit).__name__}"
        )


def new_state(
    config: ClientConfig,
    ledger: UsageLedger,
    *,
    slots: threading.BoundedSemaphore | LoopSlots | None = None,
    shared_state: RedisState | None = None,
    rate_limit: RateLimit | None = None,
) -> ClientState:
    """What a client on ``config``'s key remembers, kept in ``ledger``: a limiter when it waits
    for rate limits, and its view of ``shared_state`` when there is one."""
    state = ClientState(
        limiter=RateLimiter() if config.wait_for_rate_limit else None, slots=slots, ledger=ledger
    )
    if shared_state is not None:
        state.ledger.pending = []
        state.shared = bind_shared(shared_state, rate_limit, config, state)
    return state


def bind_shared(
    shared_state: RedisState, rate_limit: RateLimit | None, config: ClientConfig, state: ClientState
) -> SharedState:
    """The client's view of a shared state (``shared_state=``): Redis's, plugged into the
    request path through its `SharedState` interface."""
    from aigateway.integrations.redis.binding import SharedBinding

    return SharedBinding(
        shared_state, config.api_key.reveal(), rate_limit=rate_limit, limiter=state.limiter
    )
