"""Routing in the mock gateway: `RequestContext`, what a handler gets, and the `Router`.

A route handler is a function ``handler(ctx) -> MockResponse``. It gets a narrow context (the
request, its id, the rest of the path for a prefix route, and the few things of the gateway a
handler needs: the key check, the ledger, ids, the clock, the stores) rather than the gateway
itself, so built-in routes and routes users add (``gateway.add_route``) are written alike::

    def echo(ctx: RequestContext) -> MockResponse:
        account = ctx.authenticate()
        if isinstance(account, MockResponse):
            return account  # the 401
        return json_response(200, {"echo": ctx.json_object(), "account": account.id})

    gateway.add_route("POST", "/v1/echo", echo)

Paths are matched as sent, without the query: exact paths first, then prefixes (the longest
that matches), whose rest, percent-decoded, is ``ctx.argument``. A path no route knows is a
404, a known path with another method a 405 naming the allowed ones.
"""

from __future__ import annotations

import threading
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aigateway.testing._wire import (
    JSON_MEDIA_TYPES,
    MockRequest,
    MockResponse,
    error_response,
    is_json_content_type,
    json_loads_bounded,
)

if TYPE_CHECKING:
    from aigateway.testing._accounts import Account, Ledger
    from aigateway.testing._catalogue import Catalogue
    from aigateway.testing._clock import MockClock
    from aigateway.testing._gateway import MockGateway
    from aigateway.testing._pacing import StreamPacing
    from aigateway.testing._replies import ChatReplies
    from aigateway.testing._run import ServiceCategory
    from aigateway.testing._services import FileStore, ServiceCatalogue, ServiceStores

__all__ = ["INVALID", "Handler", "RequestContext", "Router"]

INVALID = "invalid_request_error"
"""The error type of every 4xx that blames the request."""


@dataclass
class RequestContext:
    """What a route handler may use: the request and the parts of the gateway it needs."""

    request: MockRequest
    request_id: str
    argument: str
    """The rest of the path after a prefix route's prefix, percent-decoded ("" otherwise)."""
    _gateway: MockGateway

    @property
    def clock(self) -> MockClock:
        return self._gateway.clock

    @property
    def seed(self) -> int:
        """The gateway's seed: replies derived from it are the same from run to run."""
        return self._gateway.seed

    @property
    def ledger(self) -> Ledger:
        """Accounts and balances: ``ledger.charge(key, cost, model=..., request_id=...)``."""
        return self._gateway.ledger

    @property
    def catalogue(self) -> Catalogue:
        return self._gateway.catalogue

    @property
    def services(self) -> ServiceCatalogue:
        return self._gateway.services

    @property
    def files(self) -> FileStore:
        return self._gateway.files

    @property
    def stores(self) -> ServiceStores:
        return self._gateway.stores

    @property
    def base_url(self) -> str:
        return self._gateway.base_url

    @property
    def replies(self) -> ChatReplies:
        """Where chat replies come from: queued ones, the reply function, the fake model."""
        return self._gateway.replies

    @property
    def strict_fields(self) -> bool:
        """True: a body field the route does not know is a 400, not just reported."""
        return self._gateway.strict_fields

    @property
    def pacing(self) -> StreamPacing:
        """How fast streamed replies flow."""
        return self._gateway.stream_pacing

    @property
    def service_categories(self) -> Mapping[str, ServiceCategory]:
        """The service categories the gateway runs, by name."""
        return self._gateway.categories

    def new_id(self, kind: str, prefix: str) -> str:
        """A fresh id for an object of ``kind`` (``new_id("completion", "chatcmpl-")``)."""
        return self._gateway.new_id(kind, prefix)

    def authenticate(self) -> Account | MockResponse:
        """The account of the request's bearer key, or the 401 to answer with."""
        return self._gateway.authenticate(self.request)

    def json_object(self) -> dict[str, Any] | MockResponse:
        """The body as a JSON object, or the error to answer with: 415 for a ``Content-Type``
        that is not JSON (none at all is taken as JSON), 400 for a body that is not JSON, too
        deep, or not an object."""
        content_type = self.request.headers.get("content-type")
        if content_type is not None and not is_json_content_type(content_type):
            return error_response(
                415,
                f"the body must be JSON: send Content-Type {JSON_MEDIA_TYPES}, not "
                f"{content_type[:100]!r}",
                INVALID,
                "unsupported_media_type",
            )
        try:
            raw = json_loads_bounded(self.request.body)
        except ValueError as exc:
            return error_response(
                400, f"the body is not valid JSON: {exc}", INVALID, "invalid_json"
            )
        if not isinstance(raw, dict):
            return error_response(
                400,
                f"the body must be a JSON object, got {type(raw).__name__}",
                INVALID,
                "invalid_body",
            )
        return raw


Handler = Callable[[RequestContext], MockResponse]


class Router:
    """Routes by method and path: exact paths, then the longest matching prefix."""

    def __init__(self) -> None:
        self._exact: dict[str, dict[str, Handler]] = {}
        self._prefixes: list[tuple[str, dict[str, Handler]]] = []
        self._lock = threading.Lock()

    def add(self, method: str, path: str, handler: Handler, *, prefix: bool = False) -> None:
        """Answer ``method path`` with ``handler`` (replacing a route already there); with
        ``prefix``, every path under ``path`` (its rest is ``ctx.argument``)."""
        if not path.startswith("/"):
            raise ValueError(f"a route's path starts with '/', got {path!r}")
        method = method.upper()
        with self._lock:
            if not prefix:
                self._exact.setdefault(path.rstrip("/") or "/", {})[method] = handler
                return
            for known, handlers in self._prefixes:
                if known == path:
                    handlers[method] = handler
                    return
            self._prefixes.append((path, {method: handler}))
            self._prefixes.sort(key=lambda item: len(item[0]), reverse=True)

    def match(self, path: str) -> tuple[dict[str, Handler], str]:
        """The handlers by method for ``path`` and the path's rest (empty when none match)."""
        exact = self._exact.get(path.rstrip("/") or "/")
        if exact:
            return exact, ""
        for prefix, handlers in self._prefixes:
            if path.startswith(prefix) and len(path) > len(prefix):
                return handlers, urllib.parse.unquote(path[len(prefix) :])
        return {}, ""

    def route(self, gateway: MockGateway, request: MockRequest, request_id: str) -> MockResponse:
        """Answer ``request`` with its route's handler, or the 404 / 405."""
        handlers, argument = self.match(request.path)
        if not handlers:
            return error_response(
                404, f"no route for {request.method} {request.path}", INVALID, "not_found"
            )
        handler = handlers.get(request.method)
        if handler is None:
            allowed = ", ".join(handlers)
            return error_response(
                405,
                f"method {request.method} is not allowed on {request.path} (allowed: {allowed})",
                INVALID,
                "method_not_allowed",
                headers={"allow": allowed},
            )
        return handler(RequestContext(request, request_id, argument, gateway))
