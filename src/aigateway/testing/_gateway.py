"""`MockGateway`: the whole Unified AI Gateway as an in-process, stateful, deterministic object.

A gateway is its state (`aigateway.testing._core.state.GatewayState`: accounts and credits,
the catalogues, the fake model's replies, a clock, limits, faults, the requests it received)
composed with its front doors, each given the state, never the gateway:

* the routes (`aigateway.testing._routes`): ``POST /v1/chat/completions``, ``GET /v1/models``
  and ``GET /v1/models/{id}``; ``POST /v1/run``, ``POST /v1/image/generate`` and
  ``GET /v1/files/{id}`` (the non-chat services, billed per their units); ``GET /llms.txt``
  and the other public discovery files at the site root; the admin API under ``/_mock/``,
  behind ``admin_token``; routes users add with `MockGateway.add_route`. Anything else is a
  404 (unknown path) or 405 (wrong method), both with an Error body;
* the in-process transport for httpx or httpx2 and WebSocket (`transport`), the ASGI app on
  uvicorn (`serve`) (`aigateway.testing._serving`);
* our own clients and the official ``openai`` SDK's wired to it (`client`, `async_client`,
  `openai_client`, `async_openai_client`, from `aigateway.testing._clients`).

Every reply carries ``content-type``, ``x-request-id`` (``req_`` + hex from the seed and a
counter) and the ``X-RateLimit-*`` headers. `MockGateway.handle` answers without any I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal, overload

from aigateway._stacks import own_stack
from aigateway.testing._clients import (
    in_process_async_client,
    in_process_client,
    in_process_openai,
)
from aigateway.testing._core.accounts import FREE_TIER_CREDITS, Account, Charge, Ledger
from aigateway.testing._core.catalogue import Catalogue, ModelSpec
from aigateway.testing._core.clock import MockClock
from aigateway.testing._core.context import Handler, Planner, ServiceCategory
from aigateway.testing._core.faults import FaultPlan
from aigateway.testing._core.idempotency import IdempotencyStore
from aigateway.testing._core.pacing import StreamPacing
from aigateway.testing._core.quotas import Quota, Quotas
from aigateway.testing._core.rate_limits import RateLimiter, RateLimits
from aigateway.testing._core.request_log import LOG_BODY_BYTES, LOG_SIZE
from aigateway.testing._core.services import FileStore, ServiceCatalogue, ServiceSpec, ServiceStores
from aigateway.testing._core.state import DEFAULT_BASE_URL, GatewayState
from aigateway.testing._core.wire import MockRequest, MockResponse
from aigateway.testing._model.engine import ScriptedReply
from aigateway.testing._model.replies import ChatReplies, ReplyFunction
from aigateway.testing._routes.admin import add_admin_routes
from aigateway.testing._routes.chat import chat_completions, list_models, retrieve_model
from aigateway.testing._routes.discovery import add_discovery_routes
from aigateway.testing._routes.run import (
    builtin_categories,
    delete_file,
    handle_file,
    handle_image_generate,
    handle_run,
)
from aigateway.testing._serving.transport import MockTransport, StackName, in_process_transport

if TYPE_CHECKING:
    import openai

    from aigateway.testing._clients import AsyncClient, Client
    from aigateway.testing._serving.connections import ConnectionLimits
    from aigateway.testing._serving.server import ClockMode
    from aigateway.testing._serving.transport_httpx2 import Httpx2MockTransport

__all__ = ["DEFAULT_BASE_URL", "MockGateway"]


class MockGateway:
    """An in-process Unified AI Gateway for tests: stateful, deterministic under ``seed``.

    ``catalogue`` replaces the default 11 models, ``services`` the default non-chat services
    (``/run``, ``/image/generate``); ``credits`` is the default account's starting balance
    (its key is ``api_key``). ``time_to_first_token`` and ``token_delay`` (seconds) pace
    streamed replies like a real model's. Use ``transport()`` with httpx (sync or async) and
    ``base_url`` (``transport("httpx2")`` with httpx2), ``client()`` or ``openai_client()`` for
    a client wired to it, ``serve()`` for a real HTTP server, or call ``handle`` directly.

    API keys and file ids are random; ``fixed_keys=True`` derives them from ``seed`` instead,
    for tests that compare them from run to run (never for a mock others can reach). A body
    over ``max_body_bytes`` is a 413; ``requests`` keeps the last ``max_logged_requests``, each
    with at most ``max_logged_body_bytes`` of its body. What an account keeps (files, their
    bytes, SQL databases) stays within its quota (``quota`` for every account, or
    ``quotas.set``); a call over it is a 403.
    A chat request's body fields the gateway does not know are accepted and listed in the
    reply's ``X-Mock-Unknown-Fields`` header, or, with ``strict_fields=True``, a 400 naming
    them (a misspelt parameter then fails your test).
    """

    base_url: str = DEFAULT_BASE_URL

    def __init__(
        self,
        *,
        seed: int = 0,
        catalogue: Iterable[ModelSpec] | None = None,
        credits: float = FREE_TIER_CREDITS,
        clock: MockClock | None = None,
        services: Iterable[ServiceSpec] | None = None,
        rate_limits: str | RateLimits = "free",
        time_to_first_token: float = 0.0,
        token_delay: float = 0.0,
        fixed_keys: bool = False,
        max_body_bytes: int = 32 * 1024 * 1024,
        max_logged_requests: int = LOG_SIZE,
        max_logged_body_bytes: int = LOG_BODY_BYTES,
        quota: Quota | None = None,
        strict_fields: bool = False,
    ) -> None:
        self._state = GatewayState(
            seed=seed,
            catalogue=catalogue,
            credits=credits,
            clock=clock,
            services=services,
            categories=builtin_categories(),
            rate_limits=rate_limits,
            time_to_first_token=time_to_first_token,
            token_delay=token_delay,
            fixed_keys=fixed_keys,
            max_body_bytes=max_body_bytes,
            max_logged_requests=max_logged_requests,
            max_logged_body_bytes=max_logged_body_bytes,
            quota=quota,
            strict_fields=strict_fields,
        )
        _add_builtin_routes(self._state)

    # -- state -----------------------------------------------------------------------------

    @property
    def seed(self) -> int:
        """The seed every reply and id derives from."""
        return self._state.seed

    @property
    def max_body_bytes(self) -> int:
        """The largest request body answered (in bytes); a larger one is a 413."""
        return self._state.guard.max_body_bytes

    @max_body_bytes.setter
    def max_body_bytes(self, limit: int) -> None:
        self._state.guard.max_body_bytes = limit

    @property
    def strict_fields(self) -> bool:
        """False: unknown chat body fields are accepted and named in ``X-Mock-Unknown-Fields``;
        True: they are a 400 naming them."""
        return self._state.strict_fields

    @strict_fields.setter
    def strict_fields(self, strict: bool) -> None:
        self._state.strict_fields = strict

    @property
    def stream_pacing(self) -> StreamPacing:
        """How fast streams flow (instant by default); replace it to change the pace."""
        return self._state.stream_pacing

    @stream_pacing.setter
    def stream_pacing(self, pacing: StreamPacing) -> None:
        self._state.stream_pacing = pacing

    @property
    def clock(self) -> MockClock:
        """The time source of ``created`` fields; set or advance it from tests."""
        return self._state.clock

    @property
    def replies(self) -> ChatReplies:
        """Where chat replies come from: queued ones, the reply function, the fake model."""
        return self._state.replies

    @property
    def ledger(self) -> Ledger:
        """Accounts, balances and charges."""
        return self._state.ledger

    @property
    def account(self) -> Account:
        """The default account; its key is ``api_key``."""
        return self._state.account

    @property
    def api_key(self) -> str:
        """The default account's API key."""
        return self._state.account.key

    @property
    def catalogue(self) -> Catalogue:
        """The models served, a mutable mapping id -> `ModelSpec`; assign any iterable of
        `ModelSpec` to replace them all."""
        return self._state.catalogue

    @catalogue.setter
    def catalogue(self, specs: Iterable[ModelSpec]) -> None:
        self._state.catalogue = specs if isinstance(specs, Catalogue) else Catalogue(specs)

    @property
    def categories(self) -> dict[str, ServiceCategory]:
        """The service categories ``/run`` knows, by name (`add_service_category` adds one)."""
        return self._state.categories

    @property
    def services(self) -> ServiceCatalogue:
        """The non-chat services ``/run`` serves: a mutable mapping id -> `ServiceSpec`."""
        return self._state.services

    @property
    def quotas(self) -> Quotas:
        """What each account may keep (files, their bytes, SQL databases): ``quota`` (a
        `Quota`, its defaults when None) unless ``quotas.set(Quota(...), account)`` gives an
        account its own."""
        return self._state.quotas

    @property
    def files(self) -> FileStore:
        """Files the services made or stored, served at ``/v1/files/{id}``."""
        return self._state.files

    @property
    def stores(self) -> ServiceStores:
        """The objects of the storage services and the SQL databases of the database ones."""
        return self._state.stores

    @property
    def rate_limits(self) -> RateLimiter:
        """Per-key limits (a preset name or `RateLimits`): ``rate_limits.set("starter", key)``."""
        return self._state.rate_limits

    @property
    def idempotency(self) -> IdempotencyStore:
        """Idempotency keys seen, per account, for 24 hours of the clock."""
        return self._state.idempotency

    @property
    def faults(self) -> FaultPlan:
        """Faults for the next requests: ``faults.fail(503, times=2)``, ``faults.drop()``..."""
        return self._state.faults

    @property
    def admin_token(self) -> str | None:
        """The secret of the admin API under ``/_mock/`` (``Authorization: Bearer <token>``);
        None turns it off."""
        return self._state.admin_token

    @admin_token.setter
    def admin_token(self, token: str | None) -> None:
        self._state.admin_token = token

    @property
    def requests(self) -> list[MockRequest]:
        """The last ``max_logged_requests`` requests answered, oldest first (a copy). Only a
        request that reached its route (a valid key, within the body and rate limits) keeps
        its body, and only its first ``max_logged_body_bytes`` (``body_cut`` then says so);
        a request without a valid key is kept without its ``Authorization`` header."""
        return self._state.request_log.requests()

    @property
    def charges(self) -> list[Charge]:
        """Every accepted charge, oldest first (a copy)."""
        return self._state.ledger.charges

    def create_account(self, credits: float = FREE_TIER_CREDITS) -> Account:
        """A new account with its own API key (``account.key``), 20 credits by default."""
        return self.ledger.create_account(credits)

    def set_credits(self, key_or_account: str | Account, amount: float | Decimal) -> None:
        """Set an account's balance."""
        self.ledger.set_credits(_key_of(key_or_account), amount)

    def credits(self, key_or_account: str | Account | None = None) -> float:
        """An account's balance (the default account's when none is named)."""
        return self.ledger.credits(_key_of(key_or_account or self.account))

    def enqueue_reply(
        self,
        content: str | None = None,
        *,
        tool_calls: Sequence[Mapping[str, Any]] | None = None,
        finish_reason: str | None = None,
    ) -> None:
        """Script the next chat completion (first in, first out) instead of generating one.

        ``tool_calls`` items are ``{"name": ..., "arguments": {...} | "<json>"}`` or the wire
        form ``{"id"?, "type": "function", "function": {"name", "arguments"}}``. The reply is
        still cut by the request's ``stop`` and ``max_tokens``; ``finish_reason`` defaults to
        ``tool_calls`` when there are calls, else ``stop``. A request that fails (4xx) does not
        use up a queued reply.
        """
        self.replies.enqueue(ScriptedReply.build(content, tool_calls, finish_reason))

    def reply_with(self, function: ReplyFunction | None) -> None:
        """Answer chat requests with ``function(request)`` instead of the fake model (None
        restores it); queued replies still come first.

        ``request`` is the validated body (a dict: ``model``, ``messages``, ``tools``...); the
        function returns the reply's text, a list of tool calls in `enqueue_reply`'s forms, or
        a `ScriptedReply`. Billing, streaming, ``stop`` and ``max_tokens`` apply as usual.
        """
        self.replies.function = function

    def add_route(self, method: str, path: str, handler: Handler, *, prefix: bool = False) -> None:
        """Answer ``method path`` (as sent, e.g. ``"/v1/echo"``) with ``handler(ctx)``, which
        gets a `RequestContext` and returns a `MockResponse`; with ``prefix``, every path
        under ``path`` (the rest is ``ctx.argument``). Rate limits, idempotency keys, faults
        and the request log apply as to the built-in routes (paths under ``/_mock/`` are the
        admin API's, exempt from them); a route already there is replaced."""
        self._state.router.add(method, path, handler, prefix=prefix)

    def add_service_category(
        self,
        name: str,
        *,
        inputs: Any,
        plan: Planner,
        allowed: Mapping[str, str] | None = None,
        max_chars: Mapping[str, int] | None = None,
    ) -> None:
        """Let ``/run`` serve services of category ``name``: ``inputs`` is what their inputs
        must be (a TypedDict, a pydantic model, any type pydantic validates; a 400 names the
        field otherwise), ``plan(ctx)`` gets a `ServiceContext` and returns the output, or a
        `Plan` (quantity of the unit to bill, what to do once paid). Then add services of it:
        ``gateway.services.add(ServiceSpec("acme/translate", name, price=0.001))``.
        ``max_chars`` bounds string inputs by name (``{"text": 10_000}``: longer is a 400)."""
        self.categories[name] = ServiceCategory(name, inputs, plan, allowed, max_chars)

    # -- front doors -----------------------------------------------------------------------

    @overload
    def transport(self, stack: Literal["httpx"] = "httpx") -> MockTransport: ...
    @overload
    def transport(self, stack: Literal["httpx2"]) -> Httpx2MockTransport: ...
    def transport(self, stack: StackName = "httpx") -> MockTransport | Httpx2MockTransport:
        """A transport (sync and async) that sends requests to this gateway in-process, for
        clients of the HTTP library ``stack``: ``"httpx"`` (`MockTransport`, the default) or
        ``"httpx2"`` (`Httpx2MockTransport`, with the ``httpx2`` extra; the official
        ``openai`` SDK 3.x is built on it). Delivery faults raise that library's errors."""
        return in_process_transport(self._state, stack)

    def serve(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        clock: ClockMode = "wall",
        clock_speed: float = 1.0,
        connection_limits: ConnectionLimits | None = None,
    ) -> AbstractContextManager[str]:
        """Serve this gateway over real HTTP (and its WebSocket) with uvicorn, in a background
        thread: ``with gateway.serve() as url:`` gives the base URL (``http://127.0.0.1:<port>/v1``);
        the server stops when the block ends. Port 0 picks a free port. While serving, the clock
        follows the wall clock, so rate limits run in real time; ``clock_speed=60`` runs it 60
        times as fast (a rate-limit minute per real second); ``clock="manual"`` keeps it where
        the test puts it. ``connection_limits`` (a `ConnectionLimits`) bounds what each
        connection may hold: deadlines, connections per client, body bytes in flight. The
        gateway's errors (a 500's traceback and request id) go to stderr while it serves.
        Needs the ``server`` extra."""
        from aigateway.testing._serving.server import serve  # the ASGI app, when it serves

        return serve(
            self._state,
            host=host,
            port=port,
            clock=clock,
            clock_speed=clock_speed,
            limits=connection_limits,
        )

    def client(
        self, *, api_key: str | None = None, stack: StackName | None = None, **options: Any
    ) -> Client:
        """A `aigateway.Client` wired to this gateway in-process (default account's key), over
        the HTTP library ``stack`` (``"httpx"`` or ``"httpx2"``; by default the one our
        clients use for their own pools: httpx, unless ``AIGATEWAY_HTTP_STACK`` says otherwise).

        ``options`` go to `Client` (``max_retries``, ``timeout``, ``retry_policy``, ...). Retry
        waits move the gateway's clock instead of sleeping, unless ``retry_policy`` is given.
        """
        transport = in_process_transport(self._state, stack or own_stack().name)
        return in_process_client(transport, api_key or self.api_key, **options)

    def async_client(
        self, *, api_key: str | None = None, stack: StackName | None = None, **options: Any
    ) -> AsyncClient:
        """A `aigateway.AsyncClient` wired to this gateway in-process (default account's key),
        over the HTTP library ``stack``, as `client`."""
        transport = in_process_transport(self._state, stack or own_stack().name)
        return in_process_async_client(transport, api_key or self.api_key, **options)

    def openai_client(self, *, api_key: str | None = None, **options: Any) -> openai.OpenAI:
        """An ``openai.OpenAI`` of the official SDK wired to this gateway in-process, no port
        (default account's key), over the HTTP library that SDK uses (httpx2 from openai 3.0).

        ``options`` go to ``openai.OpenAI`` (``max_retries``, ``timeout``, ...). Its retries
        sleep for real: give injected failures a tiny ``retry_after``
        (``gateway.faults.fail(503, retry_after=0.001)``) or pass ``max_retries=0``. Needs
        the ``openai`` package (an ImportError says how to install it)."""
        return in_process_openai(  # type: ignore[no-any-return]
            self._state, api_key or self.api_key, asynchronous=False, options=options
        )

    def async_openai_client(
        self, *, api_key: str | None = None, **options: Any
    ) -> openai.AsyncOpenAI:
        """An ``openai.AsyncOpenAI`` wired to this gateway in-process, as `openai_client`."""
        return in_process_openai(  # type: ignore[no-any-return]
            self._state, api_key or self.api_key, asynchronous=True, options=options
        )

    # -- handling --------------------------------------------------------------------------

    def handle(self, request: MockRequest) -> MockResponse:
        """Answer one request; never raises (an internal failure is a 500 Error reply)."""
        return self._state.handle(request)

    def new_id(self, kind: str, prefix: str) -> str:
        """A fresh id for an object of ``kind``, deterministic under the seed."""
        return self._state.new_id(kind, prefix)

    def authenticate(self, request: MockRequest) -> Account | MockResponse:
        """The account of ``request``'s bearer key, or the 401 to answer with."""
        return self._state.authenticate(request)


def _key_of(key_or_account: str | Account) -> str:
    return key_or_account.key if isinstance(key_or_account, Account) else key_or_account


def _add_builtin_routes(state: GatewayState) -> None:
    """The gateway's own routes: chat and models, the services, discovery, the admin API."""
    router = state.router
    router.add("POST", "/v1/chat/completions", chat_completions)
    router.add("GET", "/v1/models", list_models)
    router.add("GET", "/v1/models/", retrieve_model, prefix=True)
    router.add("POST", "/v1/run", handle_run)
    router.add("POST", "/v1/image/generate", handle_image_generate)
    router.add("GET", "/v1/files/", handle_file, prefix=True)
    router.add("DELETE", "/v1/files/", delete_file, prefix=True)
    add_discovery_routes(router)
    add_admin_routes(state)
