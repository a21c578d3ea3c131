"""What the gateway gives the code that answers a request, and what that code gives back.

A route handler (built-in or added with ``gateway.add_route``) is a function
``handler(ctx) -> MockResponse``. It gets a narrow `RequestContext` (the request, its id, the
rest of the path for a prefix route, and the few parts of the gateway a handler needs: the key
check, the ledger, ids, the clock, the stores) rather than the gateway itself, so built-in
routes and routes users add are written alike::

    def echo(ctx: RequestContext) -> MockResponse:
        account = ctx.authenticate()
        if isinstance(account, MockResponse):
            return account  # the 401
        return json_response(200, {"echo": ctx.json_object(), "account": account.id})

    gateway.add_route("POST", "/v1/echo", echo)

``POST /run`` checks the key, the body and the service, then hands the checked inputs to the
planner of the service's `ServiceCategory`: a function ``plan(ctx) -> Plan`` given a
`ServiceContext`, that checks what only the service can (a file it cannot read, bad SQL:
``raise refuse(400, ...)``), says how many units the call costs (``Plan.quantity``) and what
it does once paid (``Plan.perform`` returns the output; ``Plan.cancel`` undoes a reservation
when the balance is short). Nothing acts before it is paid. The built-in categories are
planned in `aigateway.testing._routes.planners`; ``gateway.add_service_category`` registers
more.
"""

from __future__ import annotations

import hashlib
import json
import random
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter

from aigateway.testing._core.quotas import QuotaExceeded
from aigateway.testing._core.wire import (
    INVALID,
    JSON_MEDIA_TYPES,
    MockRequest,
    MockResponse,
    error_response,
    is_json_content_type,
    json_loads_bounded,
)
from aigateway.types.files import MAX_FILE_BYTES, decode_data_url

if TYPE_CHECKING:
    from aigateway.testing._core.accounts import Account, Ledger
    from aigateway.testing._core.catalogue import Catalogue
    from aigateway.testing._core.clock import MockClock
    from aigateway.testing._core.pacing import StreamPacing
    from aigateway.testing._core.services import (
        FileStore,
        ServiceCatalogue,
        ServiceSpec,
        ServiceStores,
    )
    from aigateway.testing._model.replies import ChatReplies

__all__ = [
    "FILES_PATH",
    "Handler",
    "Plan",
    "Planner",
    "Refusal",
    "RequestContext",
    "ServiceCategory",
    "ServiceContext",
    "authenticated_body",
    "refuse",
]

FILES_PATH = "/v1/files/"
"""Where the gateway serves the files its services make."""


@dataclass
class RequestContext:
    """What a route handler may use: the request and the parts of the gateway it needs."""

    request: MockRequest
    request_id: str
    argument: str
    """The rest of the path after a prefix route's prefix, percent-decoded ("" otherwise)."""
    clock: MockClock
    seed: int
    """The gateway's seed: replies derived from it are the same from run to run."""
    ledger: Ledger
    """Accounts and balances: ``ledger.charge(key, cost, model=..., request_id=...)``."""
    catalogue: Catalogue
    services: ServiceCatalogue
    files: FileStore
    stores: ServiceStores
    base_url: str
    replies: ChatReplies
    """Where chat replies come from: queued ones, the reply function, the fake model."""
    strict_fields: bool
    """True: a body field the route does not know is a 400, not just reported."""
    pacing: StreamPacing
    """How fast streamed replies flow."""
    service_categories: Mapping[str, ServiceCategory]
    """The service categories the gateway runs, by name."""
    _new_id: Callable[[str, str], str] = field(repr=False)
    _authenticate: Callable[[MockRequest], Account | MockResponse] = field(repr=False)

    def new_id(self, kind: str, prefix: str) -> str:
        """A fresh id for an object of ``kind`` (``new_id("completion", "chatcmpl-")``)."""
        return self._new_id(kind, prefix)

    def authenticate(self) -> Account | MockResponse:
        """The account of the request's bearer key, or the 401 to answer with."""
        return self._authenticate(self.request)

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
"""A route: ``handler(ctx)`` answers the request ``ctx`` holds."""


def authenticated_body(ctx: RequestContext) -> tuple[Account, dict[str, Any]] | MockResponse:
    """The account of the request's key and its body as a JSON object, or the error to answer
    with: the key is checked first, so a request without a valid key is a 401 whatever its
    body."""
    account = ctx.authenticate()
    if isinstance(account, MockResponse):
        return account
    body = ctx.json_object()
    return body if isinstance(body, MockResponse) else (account, body)


class Refusal(Exception):
    """A planner's way to answer with an error instead of a plan (raise `refuse(...)`)."""

    def __init__(self, response: MockResponse) -> None:
        self.response = response


def refuse(status: int, message: str, code: str, param: str | None = None) -> Refusal:
    """The exception a planner raises to answer with an Error reply instead."""
    return Refusal(error_response(status, message, INVALID, code, param=param))


@dataclass
class Plan:
    """What a checked call will cost (``quantity`` of the service's unit) and do once paid."""

    quantity: Decimal
    perform: Callable[[], dict[str, Any]]
    cancel: Callable[[], None] = field(default=lambda: None)


@dataclass
class ServiceContext:
    """What a planner may use: the checked inputs, the account, the service, and the request's
    context (ids, files, stores, the clock)."""

    request: RequestContext
    account: Account
    spec: ServiceSpec
    inputs: dict[str, Any]
    param_prefix: str
    """How a field is named in errors: ``inputs.`` on ``/run``, nothing on flat routes."""

    @property
    def rng(self) -> random.Random:
        """A random source seeded by the gateway's seed, the service and the inputs."""
        return random.Random(self.seed)

    @property
    def seed(self) -> int:
        text = json.dumps(self.inputs, sort_keys=True, default=str)
        digest = hashlib.sha256(f"{self.request.seed}:{self.spec.id}:{text}".encode()).digest()
        return int.from_bytes(digest[:8], "big")

    @property
    def clock(self) -> MockClock:
        return self.request.clock

    @property
    def files(self) -> FileStore:
        return self.request.files

    @property
    def stores(self) -> ServiceStores:
        return self.request.stores

    def param(self, name: str) -> str:
        return self.param_prefix + name

    def new_id(self, kind: str, prefix: str) -> str:
        return self.request.new_id(kind, prefix)

    def keep_files(
        self, files: Sequence[tuple[bytes, str]], *, replacing: str | None = None
    ) -> tuple[list[str], Callable[[], None]]:
        """Keep ``files`` (bytes and content type) for this account while planning, before
        the call is paid: their ids (`url_of` gives their URLs), and the function that forgets
        them again (the plan's ``cancel``). When the account's quota has no room for them all
        (not counting a file they replace, ``replacing``), nothing is kept and the call is a
        403 (`QuotaExceeded`)."""
        try:
            kept = self.files.put_all(files, owner=self.account.id, replacing=replacing)
        except QuotaExceeded as exc:
            raise Refusal(exc.response()) from None

        def forget() -> None:
            for file_id in kept:
                self.files.delete(file_id)

        return kept, forget

    def file_url(self, data: bytes, content_type: str) -> str:
        """Keep one file for this account (see `keep_files`: call it while planning); its URL."""
        kept, _ = self.keep_files([(data, content_type)])
        return self.url_of(kept[0])

    def url_of(self, file_id: str) -> str:
        """The URL of one of the gateway's files, on the host the request came to."""
        host = self.request.request.headers.get("host")
        if host:
            return f"http://{host}{FILES_PATH}{file_id}"
        return f"{self.request.base_url.rstrip('/')}/files/{file_id}"

    def load_file(self, url: str, name: str) -> tuple[bytes, str]:
        """The bytes and MIME type of a file input: a data: URL or one of this account's files."""
        try:
            decoded = decode_data_url(url)
        except ValueError as exc:
            message = f"{self.param(name)}: {exc}"
            raise refuse(400, message, "invalid_file", self.param(name)) from None
        if decoded is None:
            path = urllib.parse.urlsplit(url).path
            found = (
                self.files.get(path[len(FILES_PATH) :], owner=self.account.id)
                if path.startswith(FILES_PATH)
                else None
            )
            if found is None:
                raise refuse(
                    400,
                    f"{self.param(name)}: the mock gateway reads only data: URLs and this "
                    f"account's own {FILES_PATH} URLs, not {url[:100]!r}",
                    "unfetchable_url",
                    self.param(name),
                )
            decoded = found
        data, mime = decoded
        if len(data) > MAX_FILE_BYTES:
            raise refuse(
                400,
                f"{self.param(name)}: the file has {len(data)} bytes; at most {MAX_FILE_BYTES}",
                "file_too_large",
                self.param(name),
            )
        return data, mime


Planner = Callable[[ServiceContext], "Plan | Mapping[str, Any]"]
"""A service category's planner: ``plan(ctx)`` returns a `Plan`, or the output itself."""


@dataclass(frozen=True)
class ServiceCategory:
    """A kind of service: what its inputs are (a TypedDict, a pydantic model or any type
    pydantic validates) and how a call is planned (``plan(ctx)`` returns a `Plan`, or simply
    the output, for a call of quantity 1 with nothing to undo)."""

    name: str
    inputs: Any
    plan: Planner
    allowed: Mapping[str, str] | None = None
    """What to say is allowed, per field name, in a 400 (optional)."""
    max_chars: Mapping[str, int] | None = None
    """The longest string each input may be (or each string of a list), in characters;
    longer is a 400 naming the limit (optional)."""

    def adapter(self) -> TypeAdapter[Any]:
        return _adapter(self.inputs)


_ADAPTERS: dict[int, TypeAdapter[Any]] = {}


def _adapter(inputs: Any) -> TypeAdapter[Any]:
    found = _ADAPTERS.get(id(inputs))
    if found is None:
        found = _ADAPTERS[id(inputs)] = TypeAdapter(inputs)
    return found
