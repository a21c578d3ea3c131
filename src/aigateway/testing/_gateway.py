"""`MockGateway`: the whole Unified AI Gateway as an in-process, stateful, deterministic object.

The gateway holds the state (accounts and credits, the model catalogue, the fake engine, a
clock, the requests it received) and answers `MockRequest`s with `MockResponse`s in
`MockGateway.handle`, without any I/O. Transports put it behind httpx today; an ASGI app can
put the same ``handle`` behind uvicorn.

Routes (`_routes.Router`; handlers get a narrow `RequestContext`):

* ``POST /v1/chat/completions``, ``GET /v1/models`` and ``GET /v1/models/{id}`` (`_chat`);
* ``POST /v1/run``, ``POST /v1/image/generate`` and ``GET /v1/files/{id}``: the non-chat
  services, billed per their units (`_run`, `_services`, `_planners_media`, `_planners_data`);
* ``GET /llms.txt`` and the other public discovery files at the site root (`_discovery`);
* the admin API under ``/_mock/``, behind ``admin_token`` (`_admin`);
* routes users add with `MockGateway.add_route`; anything else is a 404 (unknown path) or 405
  (wrong method), both with an Error body.

Every reply carries ``content-type``, ``x-request-id`` (``req_`` + hex from the seed and a
counter) and the ``X-RateLimit-*`` headers (`_guard`). Handling is thread-safe: the ledger
checks and debits under a lock, and the other shared state (request log, queued replies, id
counters, clock) has locks of its own.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from aigateway.testing._accounts import FREE_TIER_CREDITS, Account, Charge, Ledger
from aigateway.testing._admin import add_admin_routes, is_admin_path
from aigateway.testing._catalogue import Catalogue, ModelSpec, default_catalogue
from aigateway.testing._chat import chat_completions, list_models, retrieve_model, unknown_fields
from aigateway.testing._clock import MockClock
from aigateway.testing._discovery import add_discovery_routes
from aigateway.testing._engine import ScriptedReply
from aigateway.testing._faults import FaultPlan
from aigateway.testing._guard import guarded, rate_limit_headers
from aigateway.testing._idempotency import IdempotencyStore
from aigateway.testing._ids import IdSource
from aigateway.testing._pacing import StreamPacing
from aigateway.testing._quotas import Quota, Quotas
from aigateway.testing._ratelimits import RateLimiter, RateLimits
from aigateway.testing._replies import ChatReplies, ReplyFunction
from aigateway.testing._request_log import LOG_BODY_BYTES, LOG_SIZE, RequestLog
from aigateway.testing._routes import Handler, Router
from aigateway.testing._run import (
    Planner,
    ServiceCategory,
    builtin_categories,
    delete_file,
    handle_file,
    handle_image_generate,
    handle_run,
)
from aigateway.testing._services import (
    FileStore,
    ServiceCatalogue,
    ServiceSpec,
    ServiceStores,
    default_services,
)
from aigateway.testing._wire import MockRequest, MockResponse, error_response

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from aigateway._client.clients import AsyncClient, Client
    from aigateway.testing._connections import ConnectionLimits
    from aigateway.testing._server import ClockMode
    from aigateway.testing._transport import MockTransport

__all__ = ["DEFAULT_BASE_URL", "MockGateway"]

_log = logging.getLogger("aigateway.testing")

DEFAULT_BASE_URL = "http://mock.aigateway.local/v1"
"""The base URL of an in-process gateway (any host works with its transport)."""


class MockGateway:
    """An in-process Unified AI Gateway for tests: stateful, deterministic under ``seed``.

    ``catalogue`` replaces the default 11 models, ``services`` the default non-chat services
    (``/run``, ``/image/generate``); ``credits`` is the default account's starting balance
    (its key is ``api_key``). ``time_to_first_token`` and ``token_delay`` (seconds) pace
    streamed replies like a real model's. Use ``transport()`` with httpx (sync or async) and
    ``base_url``, ``serve()`` for a real HTTP server, or call ``handle`` directly.

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
        if max_body_bytes < 1:
            raise ValueError(f"max_body_bytes must be at least 1, got {max_body_bytes!r}")
        self._request_log = RequestLog(max_logged_requests, max_logged_body_bytes)
        self.seed = seed
        self.max_body_bytes = max_body_bytes
        """The largest request body answered (in bytes); a larger one is a 413."""
        self.strict_fields = strict_fields
        """False: unknown chat body fields are accepted and named in ``X-Mock-Unknown-Fields``;
        True: they are a 400 naming them."""
        self.stream_pacing = StreamPacing(time_to_first_token, token_delay)
        """How fast streams flow (instant by default); replace it to change the pace."""
        self.clock = clock if clock is not None else MockClock()
        """The time source of ``created`` fields; set or advance it from tests."""
        self._ids = IdSource(seed, fixed_secrets=fixed_keys)
        self.replies = ChatReplies(seed)
        """Where chat replies come from: queued ones, the reply function, the fake model."""
        self._catalogue = Catalogue(default_catalogue() if catalogue is None else catalogue)
        self.ledger = Ledger(self._ids)
        """Accounts, balances and charges."""
        self.account = self.ledger.create_account(credits)
        """The default account; its key is ``api_key``."""
        self.categories: dict[str, ServiceCategory] = builtin_categories()
        """The service categories ``/run`` knows, by name (`add_service_category` adds one)."""
        self.services = ServiceCatalogue(
            default_services() if services is None else services, self.categories
        )
        """The non-chat services ``/run`` serves: a mutable mapping id -> `ServiceSpec`."""
        self.quotas = Quotas(self.ledger, quota)
        """What each account may keep (files, their bytes, SQL databases): ``quota`` (a
        `Quota`, its defaults when None) unless ``quotas.set(Quota(...), account)`` gives an
        account its own."""
        self.files = FileStore(self._ids, self.quotas)
        """Files the services made or stored, served at ``/v1/files/{id}``."""
        self.stores = ServiceStores(quotas=self.quotas)
        """The objects of the storage services and the SQL databases of the database ones."""
        self._router = _builtin_router()
        self.rate_limits = RateLimiter(self.clock, rate_limits)
        """Per-key limits (a preset name or `RateLimits`): ``rate_limits.set("starter", key)``."""
        self.idempotency = IdempotencyStore(self.clock)
        """Idempotency keys seen, per account, for 24 hours of the clock."""
        self.faults = FaultPlan(self.clock.now, lambda request: rate_limit_headers(self, request))
        """Faults for the next requests: ``faults.fail(503, times=2)``, ``faults.drop()``..."""
        self.admin_token: str | None = secrets.token_urlsafe(24)
        """The secret of the admin API under ``/_mock/`` (``Authorization: Bearer <token>``);
        None turns it off."""
        add_admin_routes(self, self._request_log)

    # -- state -----------------------------------------------------------------------------

    @property
    def api_key(self) -> str:
        """The default account's API key."""
        return self.account.key

    @property
    def catalogue(self) -> Catalogue:
        """The models served, a mutable mapping id -> `ModelSpec`; assign any iterable of
        `ModelSpec` to replace them all."""
        return self._catalogue

    @catalogue.setter
    def catalogue(self, specs: Iterable[ModelSpec]) -> None:
        self._catalogue = specs if isinstance(specs, Catalogue) else Catalogue(specs)

    @property
    def requests(self) -> list[MockRequest]:
        """The last ``max_logged_requests`` requests answered, oldest first (a copy). Only a
        request that reached its route (a valid key, within the body and rate limits) keeps
        its body, and only its first ``max_logged_body_bytes`` (``body_cut`` then says so);
        a request without a valid key is kept without its ``Authorization`` header."""
        return self._request_log.requests()

    @property
    def charges(self) -> list[Charge]:
        """Every accepted charge, oldest first (a copy)."""
        return self.ledger.charges

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
        self._router.add(method, path, handler, prefix=prefix)

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

    def transport(self) -> MockTransport:
        """An httpx transport (sync and async) that sends requests to this gateway."""
        from aigateway.testing._transport import MockTransport

        return MockTransport(self)

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
        from aigateway.testing._server import serve

        return serve(
            self,
            host=host,
            port=port,
            clock=clock,
            clock_speed=clock_speed,
            limits=connection_limits,
        )

    def client(self, *, api_key: str | None = None, **options: Any) -> Client:
        """A `aigateway.Client` wired to this gateway in-process (default account's key).

        ``options`` go to `Client` (``max_retries``, ``timeout``, ``retry_policy``, ...). Retry
        waits move the gateway's clock instead of sleeping, unless ``retry_policy`` is given.
        """
        from aigateway._client.clients import Client
        from aigateway.testing._delivery import mock_time_retry_policy

        options.setdefault("retry_policy", mock_time_retry_policy(self.clock))

        return Client(
            api_key=api_key or self.api_key,
            base_url=self.base_url,
            transport=self.transport(),
            **options,
        )

    def async_client(self, *, api_key: str | None = None, **options: Any) -> AsyncClient:
        """A `aigateway.AsyncClient` wired to this gateway in-process (default account's key)."""
        from aigateway._client.clients import AsyncClient
        from aigateway.testing._delivery import mock_time_retry_policy

        options.setdefault("retry_policy", mock_time_retry_policy(self.clock))

        return AsyncClient(
            api_key=api_key or self.api_key,
            base_url=self.base_url,
            transport=self.transport(),
            **options,
        )

    # -- handling --------------------------------------------------------------------------

    def handle(self, request: MockRequest) -> MockResponse:
        """Answer one request; never raises (an internal failure is a 500 Error reply)."""
        admin = is_admin_path(request.path)  # the mock's controls: not logged, faulted, limited
        request_id = self._ids.next("admin request" if admin else "request", "req_")
        received = self.clock.now()
        refused = False  # by the body limit or a rate limit: the log keeps no body

        def route() -> MockResponse:
            return self._router.route(self, request, request_id)

        def refuse() -> None:
            nonlocal refused
            refused = True

        try:
            if admin:
                response = route()
            else:
                response = self.faults.run(
                    request, lambda: guarded(self, request, request_id, route, on_refused=refuse)
                )
        except Exception:  # a bug (or a user's handler failed): answer, do not crash the server
            _log.exception("the mock gateway failed to answer request %s", request_id)
            response = error_response(
                500,
                f"the mock gateway failed to answer this request (request id {request_id}; "
                "the details are in the log of the process running it)",
                "server_error",
                "internal_error",
                headers=rate_limit_headers(self, request),
            )
        response.headers["x-request-id"] = request_id
        if not admin:
            known_key = self.ledger.account(request.bearer_key) is not None
            self._request_log.add(
                request,
                request_id,
                response.status,
                self.clock.now(),
                received,
                known_key=known_key,
                refused=refused,
                unknown_fields=unknown_fields(response),
            )
        return response

    def new_id(self, kind: str, prefix: str) -> str:
        """A fresh id for an object of ``kind``, deterministic under the seed."""
        return self._ids.next(kind, prefix)

    def authenticate(self, request: MockRequest) -> Account | MockResponse:
        """The account of ``request``'s bearer key, or the 401 to answer with."""
        key = request.bearer_key
        if not key:
            message = "missing API key: send the header 'Authorization: Bearer <API_KEY>'"
        else:
            account = self.ledger.account(key)
            if account is not None:
                return account
            message = "invalid API key: no account has this key"
        return error_response(401, message, "authentication_error", "invalid_api_key")


def _key_of(key_or_account: str | Account) -> str:
    return key_or_account.key if isinstance(key_or_account, Account) else key_or_account


def _builtin_router() -> Router:
    """A router with the gateway's own routes."""
    router = Router()
    router.add("POST", "/v1/chat/completions", chat_completions)
    router.add("GET", "/v1/models", list_models)
    router.add("GET", "/v1/models/", retrieve_model, prefix=True)
    router.add("POST", "/v1/run", handle_run)
    router.add("POST", "/v1/image/generate", handle_image_generate)
    router.add("GET", "/v1/files/", handle_file, prefix=True)
    router.add("DELETE", "/v1/files/", delete_file, prefix=True)
    add_discovery_routes(router)
    return router
