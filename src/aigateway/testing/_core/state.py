"""The state of one mock gateway, and `GatewayState.handle`, how it answers a request.

The state is what a gateway keeps: accounts and credits (`Ledger`), the model and service
catalogues, the files and stores of the services, quotas, rate limits, idempotency keys,
faults, the clock, ids, the stream pacing, the request log and the routes. `MockGateway`
composes it with its front doors; the front doors (the in-process transport and WebSocket, the
ASGI app) are given the state and call `GatewayState.handle`, which does no I/O::

    MockRequest --> admin path? --------------------------------------> router --> log
                    else faults --> guard (body limit, rate limits, idempotency) --^

Handlers get a `RequestContext` made from the state (`GatewayState.context`), never the
state itself. Handling is thread-safe: the ledger checks and debits under a lock, and the
other shared parts (request log, queued replies, id counters, clock) have locks of their own.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterable

from aigateway.testing._core.accounts import Account, Ledger
from aigateway.testing._core.catalogue import Catalogue, ModelSpec, default_catalogue
from aigateway.testing._core.clock import MockClock
from aigateway.testing._core.context import RequestContext, ServiceCategory
from aigateway.testing._core.faults import FaultPlan
from aigateway.testing._core.guard import Guard
from aigateway.testing._core.idempotency import IdempotencyStore
from aigateway.testing._core.ids import IdSource
from aigateway.testing._core.pacing import StreamPacing
from aigateway.testing._core.quotas import Quota, Quotas
from aigateway.testing._core.rate_limits import RateLimiter, RateLimits
from aigateway.testing._core.request_log import RequestLog, unknown_fields
from aigateway.testing._core.router import Router
from aigateway.testing._core.services import (
    FileStore,
    ServiceCatalogue,
    ServiceSpec,
    ServiceStores,
    default_services,
)
from aigateway.testing._core.wire import MockRequest, MockResponse, error_response
from aigateway.testing._model.replies import ChatReplies

__all__ = ["ADMIN_PREFIX", "DEFAULT_BASE_URL", "GatewayState", "is_admin_path"]

_log = logging.getLogger("aigateway.testing")

DEFAULT_BASE_URL = "http://mock.aigateway.local/v1"
"""The base URL of an in-process gateway (any host works with its transport)."""
ADMIN_PREFIX = "/_mock/"
"""Where the admin API lives; paths under it are reserved for it."""


def is_admin_path(path: str) -> bool:
    """True for a request to the admin API: the mock's own controls, not traffic (answered
    before faults, rate limits and the request log)."""
    return path.startswith(ADMIN_PREFIX)


class GatewayState:
    """Everything one mock gateway keeps, and `handle`, its sans-io entry point.

    `MockGateway` makes it from its own arguments (their meaning is documented there) and
    fills ``router`` with the gateway's routes and ``categories`` with its service categories.
    """

    base_url: str = DEFAULT_BASE_URL

    def __init__(
        self,
        *,
        seed: int,
        catalogue: Iterable[ModelSpec] | None,
        credits: float,
        clock: MockClock | None,
        services: Iterable[ServiceSpec] | None,
        categories: dict[str, ServiceCategory],
        rate_limits: str | RateLimits,
        time_to_first_token: float,
        token_delay: float,
        fixed_keys: bool,
        max_body_bytes: int,
        max_logged_requests: int,
        max_logged_body_bytes: int,
        quota: Quota | None,
        strict_fields: bool,
    ) -> None:
        if max_body_bytes < 1:
            raise ValueError(f"max_body_bytes must be at least 1, got {max_body_bytes!r}")
        self.request_log = RequestLog(max_logged_requests, max_logged_body_bytes)
        self.seed = seed
        self.strict_fields = strict_fields
        self.stream_pacing = StreamPacing(time_to_first_token, token_delay)
        self.clock = clock if clock is not None else MockClock()
        self.ids = IdSource(seed, fixed_secrets=fixed_keys)
        self.replies = ChatReplies(seed)
        self.catalogue = Catalogue(default_catalogue() if catalogue is None else catalogue)
        self.ledger = Ledger(self.ids)
        self.account = self.ledger.create_account(credits)
        self.categories = categories
        self.services = ServiceCatalogue(
            default_services() if services is None else services, categories
        )
        self.quotas = Quotas(self.ledger, quota)
        self.files = FileStore(self.ids, self.quotas)
        self.stores = ServiceStores(quotas=self.quotas)
        self.router = Router()
        self.rate_limits = RateLimiter(self.clock, rate_limits)
        self.idempotency = IdempotencyStore(self.clock)
        self.guard = Guard(self.ledger, self.rate_limits, self.idempotency, max_body_bytes)
        self.faults = FaultPlan(self.clock.now, self.guard.rate_limit_headers)
        self.admin_token: str | None = secrets.token_urlsafe(24)

    def handle(self, request: MockRequest) -> MockResponse:
        """Answer one request; never raises (an internal failure is a 500 Error reply)."""
        admin = is_admin_path(request.path)  # the mock's controls: not logged, faulted, limited
        request_id = self.ids.next("admin request" if admin else "request", "req_")
        received = self.clock.now()
        refused = False  # by the body limit or a rate limit: the log keeps no body

        def route() -> MockResponse:
            return self.router.route(
                request, lambda argument: self.context(request, request_id, argument)
            )

        def refuse() -> None:
            nonlocal refused
            refused = True

        try:
            if admin:
                response = route()
            else:
                response = self.faults.run(
                    request,
                    lambda: self.guard.guarded(request, request_id, route, on_refused=refuse),
                )
        except Exception:  # a bug (or a user's handler failed): answer, do not crash the server
            _log.exception("the mock gateway failed to answer request %s", request_id)
            response = error_response(
                500,
                f"the mock gateway failed to answer this request (request id {request_id}; "
                "the details are in the log of the process running it)",
                "server_error",
                "internal_error",
                headers=self.guard.rate_limit_headers(request),
            )
        response.headers["x-request-id"] = request_id
        if not admin:
            known_key = self.ledger.account(request.bearer_key) is not None
            self.request_log.add(
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

    def context(self, request: MockRequest, request_id: str, argument: str) -> RequestContext:
        """What a handler of ``request`` gets (``argument``: the rest of a prefix route's path)."""
        return RequestContext(
            request,
            request_id,
            argument,
            clock=self.clock,
            seed=self.seed,
            ledger=self.ledger,
            catalogue=self.catalogue,
            services=self.services,
            files=self.files,
            stores=self.stores,
            base_url=self.base_url,
            replies=self.replies,
            strict_fields=self.strict_fields,
            pacing=self.stream_pacing,
            service_categories=self.categories,
            _new_id=self.new_id,
            _authenticate=self.authenticate,
        )

    def new_id(self, kind: str, prefix: str) -> str:
        """A fresh id for an object of ``kind``, deterministic under the seed."""
        return self.ids.next(kind, prefix)

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
