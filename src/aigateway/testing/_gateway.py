"""`MockGateway`: the whole Unified AI Gateway as an in-process, stateful, deterministic object.

The gateway holds the state (accounts and credits, the model catalogue, the fake engine, a
clock, the requests it received) and answers `MockRequest`s with `MockResponse`s in
`MockGateway.handle`, without any I/O. Transports put it behind httpx today; an ASGI app can
put the same ``handle`` behind uvicorn.

Routes (the base URL ends in ``/v1``, which the router strips):

* ``POST /v1/chat/completions``: auth (401), JSON body (400), the same validation as the
  client (400, every section-8 limit), model lookup in either id spelling (404 naming the
  closest ids), vision and tools capability (400), prompt size against the context window
  (400), generation, then billing: ``prompt_tokens / 1000 * input price + completion_tokens /
  1000 * output price``; a balance below that is a 402 and nothing is charged. Replies carry
  ``_remaining_credits`` and ``_balance_warning`` (balance below 10). A streamed reply is
  charged before its first byte, since the whole output is known then.
* ``GET /v1/models`` and ``GET /v1/models/{id}`` (ids may contain ``/``, raw or as ``%2F``).
* ``POST /v1/run``, ``POST /v1/image/generate`` and ``GET /v1/files/{id}``: the non-chat
  services, billed per the spec's units (`aigateway.testing._run`, `._services`, `._media`).
* Anything else: 404 (unknown path) or 405 (wrong method), both with an Error body.

Every reply carries ``content-type`` and ``x-request-id`` (``req_`` + hex from the seed and a
counter). Handling is thread-safe: the ledger checks and debits under a lock, and the other
shared state (request log, queued replies, id counters, clock) has locks of its own.
"""

from __future__ import annotations

import threading
import urllib.parse
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter

from ..errors import InvalidRequestError
from ..types._validation import validate
from ..types.chat_params import ALLOWED, ChatCompletionRequest
from ._accounts import FREE_TIER_CREDITS, Account, Charge, Ledger, to_decimal
from ._catalogue import Catalogue, ModelSpec, default_catalogue, model_object
from ._clock import MockClock
from ._engine import (
    Engine,
    ScriptedReply,
    completion_body,
    count_prompt_tokens,
    has_image,
    stream_chunks,
    tool_choice_problem,
)
from ._faults import FaultPlan
from ._guard import guarded
from ._idempotency import IdempotencyStore
from ._ids import IdSource
from ._pacing import StreamPacing, paced
from ._ratelimits import RateLimiter, RateLimits
from ._run import handle_file, handle_image_generate, handle_run
from ._services import FileStore, ServiceCatalogue, ServiceSpec, ServiceStores, default_services
from ._wire import MockRequest, MockResponse, error_response, json_response, sse_response

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from .._client import AsyncClient, Client
    from ._server import ClockMode
    from ._transport import MockTransport

__all__ = ["BALANCE_WARNING_THRESHOLD", "DEFAULT_BASE_URL", "MockGateway"]

DEFAULT_BASE_URL = "http://mock.aigateway.local/v1"
"""The base URL of an in-process gateway (any host works with its transport)."""
BALANCE_WARNING_THRESHOLD = Decimal(10)
"""``_balance_warning`` is true when the balance after a call is below this (spec section 8)."""

_INVALID = "invalid_request_error"
_REQUEST_ADAPTER: TypeAdapter[ChatCompletionRequest] = TypeAdapter(ChatCompletionRequest)
_Handler = Callable[["MockGateway", MockRequest, str, str], MockResponse]


class MockGateway:
    """An in-process Unified AI Gateway for tests: stateful, deterministic under ``seed``.

    ``catalogue`` replaces the default 11 models, ``services`` the default non-chat services
    (``/run``, ``/image/generate``); ``credits`` is the default account's starting balance
    (its key is ``api_key``). ``time_to_first_token`` and ``token_delay`` (seconds) pace
    streamed replies like a real model's. Use ``transport()`` with httpx (sync or async) and
    ``base_url``, ``serve()`` for a real HTTP server, or call ``handle`` directly.
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
    ) -> None:
        self.seed = seed
        self.stream_pacing = StreamPacing(time_to_first_token, token_delay)
        """How fast streams flow (instant by default); replace it to change the pace."""
        self.clock = clock if clock is not None else MockClock()
        """The time source of ``created`` fields; set or advance it from tests."""
        self._ids = IdSource(seed)
        self._engine = Engine(seed)
        self._catalogue = Catalogue(default_catalogue() if catalogue is None else catalogue)
        self.ledger = Ledger(self._ids)
        """Accounts, balances and charges."""
        self.account = self.ledger.create_account(credits)
        """The default account; its key is ``api_key``."""
        self.services = ServiceCatalogue(default_services() if services is None else services)
        """The non-chat services ``/run`` serves: a mutable mapping id -> `ServiceSpec`."""
        self.files = FileStore(self._ids)
        """Files the services made or stored, served at ``/v1/files/{id}``."""
        self.stores = ServiceStores()
        """The objects of the storage services and the SQL databases of the database ones."""
        self._lock = threading.Lock()
        self._requests: list[MockRequest] = []
        self._script: deque[ScriptedReply] = deque()
        self.rate_limits = RateLimiter(self.clock, rate_limits)
        """Per-key limits (a preset name or `RateLimits`): ``rate_limits.set("starter", key)``."""
        self.idempotency = IdempotencyStore(self.clock)
        """Idempotency keys seen, per account, for 24 hours of the clock."""
        self.faults = FaultPlan(self.clock.now, self._requests_per_minute_of)
        """Faults for the next requests: ``faults.fail(503, times=2)``, ``faults.drop()``..."""

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
        """Every request received, oldest first (a copy)."""
        with self._lock:
            return list(self._requests)

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
        reply = ScriptedReply.build(content, tool_calls, finish_reason)
        with self._lock:
            self._script.append(reply)

    def transport(self) -> MockTransport:
        """An httpx transport (sync and async) that sends requests to this gateway."""
        from ._transport import MockTransport

        return MockTransport(self)

    def serve(
        self, *, host: str = "127.0.0.1", port: int = 0, clock: ClockMode = "wall"
    ) -> AbstractContextManager[str]:
        """Serve this gateway over real HTTP (and its WebSocket) with uvicorn, in a background
        thread: ``with gateway.serve() as url:`` gives the base URL (``http://127.0.0.1:<port>/v1``);
        the server stops when the block ends. Port 0 picks a free port. While serving, the clock
        follows the wall clock, so rate limits run in real time; ``clock="manual"`` keeps it
        where the test puts it. Needs the ``aigateway[server]`` extra."""
        from ._server import serve

        return serve(self, host=host, port=port, clock=clock)

    def client(self, *, api_key: str | None = None, **options: Any) -> Client:
        """A `aigateway.Client` wired to this gateway in-process (default account's key).

        ``options`` go to `Client` (``max_retries``, ``timeout``, ``retry_policy``, ...). Retry
        waits move the gateway's clock instead of sleeping, unless ``retry_policy`` is given.
        """
        from .._client import Client
        from ._delivery import mock_time_retry_policy

        options.setdefault("retry_policy", mock_time_retry_policy(self.clock))

        return Client(
            api_key=api_key or self.api_key,
            base_url=self.base_url,
            transport=self.transport(),
            **options,
        )

    def async_client(self, *, api_key: str | None = None, **options: Any) -> AsyncClient:
        """A `aigateway.AsyncClient` wired to this gateway in-process (default account's key)."""
        from .._client import AsyncClient
        from ._delivery import mock_time_retry_policy

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
        request_id = self._ids.next("request", "req_")
        with self._lock:
            self._requests.append(request)
        try:
            response = self.faults.run(
                request,
                lambda: guarded(
                    self, request, request_id, lambda: self._route(request, request_id)
                ),
            )
        except Exception as exc:  # a bug in the mock: answer, do not crash the caller's server
            response = error_response(
                500, f"mock gateway internal error: {exc!r}", "server_error", "internal_error"
            )
        response.headers["x-request-id"] = request_id
        return response

    def _route(self, request: MockRequest, request_id: str) -> MockResponse:
        raw_path = request.path
        path = raw_path[3:] if raw_path == "/v1" or raw_path.startswith("/v1/") else None
        if path is not None and len(path) > 1:
            path = path.rstrip("/")
        routes: Mapping[str, _Handler] = {}
        argument = ""
        if path is not None:
            routes = _EXACT_ROUTES.get(path, {})
            for prefix, prefix_routes in _PREFIX_ROUTES:
                if not routes and path.startswith(prefix) and len(path) > len(prefix):
                    routes, argument = prefix_routes, urllib.parse.unquote(path[len(prefix) :])
        if not routes:
            return error_response(
                404, f"no route for {request.method} {raw_path}", _INVALID, "not_found"
            )
        handler = routes.get(request.method)
        if handler is None:
            allowed = ", ".join(routes)
            return error_response(
                405,
                f"method {request.method} is not allowed on {raw_path} (allowed: {allowed})",
                _INVALID,
                "method_not_allowed",
                headers={"allow": allowed},
            )
        return handler(self, request, request_id, argument)

    def _requests_per_minute_of(self, request: MockRequest) -> int | None:
        key = request.headers.get("authorization", "").partition(" ")[2].strip()
        return self.rate_limits.limits(key).requests_per_minute

    def _authenticate(self, request: MockRequest) -> Account | MockResponse:
        scheme, _, key = request.headers.get("authorization", "").strip().partition(" ")
        key = key.strip()
        if scheme.lower() != "bearer" or not key:
            message = "missing API key: send the header 'Authorization: Bearer <API_KEY>'"
        else:
            account = self.ledger.account(key)
            if account is not None:
                return account
            message = "invalid API key: no account has this key"
        return error_response(401, message, "authentication_error", "invalid_api_key")

    def _find_model(self, model_id: str) -> ModelSpec | MockResponse:
        spec = self._catalogue.find(model_id)
        if spec is not None:
            return spec
        closest = self._catalogue.closest(model_id)
        hint = (
            f"closest known ids: {', '.join(closest)}"
            if closest
            else f"the {len(self._catalogue)} known ids are listed by GET /models"
        )
        return error_response(
            404, f"model {model_id!r} does not exist; {hint}", _INVALID, "model_not_found",
            param="model",
        )  # fmt: skip

    def _list_models(self, request: MockRequest, request_id: str, _: str) -> MockResponse:
        auth = self._authenticate(request)
        if isinstance(auth, MockResponse):
            return auth
        data = [model_object(spec) for spec in self._catalogue.specs()]
        return json_response(200, {"object": "list", "data": data})

    def _retrieve_model(self, request: MockRequest, request_id: str, model_id: str) -> MockResponse:
        auth = self._authenticate(request)
        if isinstance(auth, MockResponse):
            return auth
        spec = self._find_model(model_id)
        if isinstance(spec, MockResponse):
            return spec
        return json_response(200, model_object(spec))

    def _chat_completions(self, request: MockRequest, request_id: str, _: str) -> MockResponse:
        account = self._authenticate(request)
        if isinstance(account, MockResponse):
            return account
        try:
            raw = request.json()
        except ValueError as exc:
            return error_response(
                400, f"the body is not valid JSON: {exc}", _INVALID, "invalid_json"
            )
        if not isinstance(raw, dict):
            return error_response(
                400, f"the body must be a JSON object, got {type(raw).__name__}", _INVALID,
                "invalid_body",
            )  # fmt: skip
        try:
            body = validate(_REQUEST_ADAPTER, raw, ALLOWED)
        except InvalidRequestError as exc:
            message = "; ".join(str(violation) for violation in exc.violations)
            return error_response(400, message, _INVALID, "invalid_parameter", param=exc.field)
        spec = self._find_model(body["model"])
        if isinstance(spec, MockResponse):
            return spec
        problem = self._capability_problem(body, spec)
        if problem is not None:
            return problem

        with self._lock:
            scripted = self._script.popleft() if self._script else None
        completion = self._engine.complete(
            body,
            model_id=spec.id,
            new_call_id=lambda: self._ids.next("call", "call_"),
            scripted=scripted,
            function_call=raw.get("function_call"),
        )
        cost = (
            Decimal(completion.prompt_tokens) * to_decimal(spec.input_price_per_1k)
            + Decimal(completion.completion_tokens) * to_decimal(spec.output_price_per_1k)
        ) / 1000
        result = self.ledger.charge(
            account.key,
            cost,
            model=spec.id,
            request_id=request_id,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
        )
        if not result.ok:
            if scripted is not None:
                with self._lock:
                    self._script.appendleft(scripted)
            return insufficient_credits_response(cost, result.balance)
        credits = {
            "_remaining_credits": _credits_value(result.balance),
            "_balance_warning": result.balance < BALANCE_WARNING_THRESHOLD,
        }
        completion_id = self._ids.next("completion", "chatcmpl-")
        created = int(self.clock.now())
        if body.get("stream"):
            options = raw.get("stream_options")
            include_usage = isinstance(options, dict) and options.get("include_usage") is True
            chunks = stream_chunks(
                completion, id=completion_id, created=created, model=spec.id, credits=credits,
                include_usage=include_usage,
            )  # fmt: skip
            return paced(sse_response(chunks), self.stream_pacing)
        reply = completion_body(
            completion, id=completion_id, created=created, model=spec.id, credits=credits
        )
        return json_response(200, reply)

    def _capability_problem(
        self, body: ChatCompletionRequest, spec: ModelSpec
    ) -> MockResponse | None:
        messages: list[Any] = list(body["messages"])
        if not spec.vision and has_image(messages):
            capable = [s.id for s in self._catalogue.specs() if s.vision]
            return error_response(
                400,
                f"model {spec.id!r} does not accept image input; vision-capable models: "
                f"{', '.join(capable) or 'none'}",
                _INVALID,
                "model_not_vision_capable",
                param="messages",
            )
        if not spec.tools and (body.get("tools") or body.get("functions")):
            capable = [s.id for s in self._catalogue.specs() if s.tools]
            return error_response(
                400,
                f"model {spec.id!r} does not support tools; tool-capable models: "
                f"{', '.join(capable) or 'none'}",
                _INVALID,
                "model_not_tool_capable",
                param="tools",
            )
        problem = tool_choice_problem(body)
        if problem is not None:
            return error_response(400, problem, _INVALID, "invalid_parameter", param="tool_choice")
        prompt_tokens = count_prompt_tokens(messages)
        if prompt_tokens > spec.context_window:
            return error_response(
                400,
                f"the messages take {prompt_tokens} tokens; model {spec.id!r} accepts at most "
                f"{spec.context_window}",
                _INVALID,
                "context_length_exceeded",
                param="messages",
            )
        return None


def _key_of(key_or_account: str | Account) -> str:
    return key_or_account.key if isinstance(key_or_account, Account) else key_or_account


def _credits_value(amount: Decimal) -> float:
    """A credit amount as it appears in replies: a float rounded to 6 decimals."""
    return round(float(amount), 6)


def insufficient_credits_response(cost: Decimal, balance: Decimal) -> MockResponse:
    """The 402 of a call costing ``cost`` on an account holding ``balance``."""
    return error_response(
        402,
        f"insufficient credits: this call costs {_credits_value(cost)} credits "
        f"and the balance is {_credits_value(balance)}",
        "insufficient_credits",
        "insufficient_credits",
        _remaining_credits=_credits_value(balance),
    )


# The routes, relative to /v1: exact paths, then prefixes whose rest is the handler's argument.
_EXACT_ROUTES: dict[str, dict[str, _Handler]] = {
    "/chat/completions": {"POST": MockGateway._chat_completions},
    "/models": {"GET": MockGateway._list_models},
    "/run": {"POST": handle_run},
    "/image/generate": {"POST": handle_image_generate},
}
_PREFIX_ROUTES: list[tuple[str, dict[str, _Handler]]] = [
    ("/models/", {"GET": MockGateway._retrieve_model}),
    ("/files/", {"GET": handle_file}),
]
