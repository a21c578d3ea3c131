"""What a service's planner gets and gives: `ServiceContext` in, a `Plan` out.

``POST /run`` checks the key, the body and the service, then hands the checked inputs to the
planner of the service's category: a function ``plan(ctx) -> Plan`` that checks what only the
service can (a file it cannot read, bad SQL: ``raise refuse(400, ...)``), says how many units
the call costs (``Plan.quantity``) and what it does once paid (``Plan.perform`` returns the
output; ``Plan.cancel`` undoes a reservation when the balance is short). Nothing acts before it
is paid. The built-in categories are planned in ``_planners_media`` and ``_planners_data``;
``gateway.add_service_category`` registers more.
"""

from __future__ import annotations

import hashlib
import json
import random
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from aigateway.testing._accounts import to_decimal
from aigateway.testing._quotas import QuotaExceeded
from aigateway.testing._routes import INVALID, RequestContext
from aigateway.testing._wire import MockResponse, error_response
from aigateway.types.files import MAX_FILE_BYTES, decode_data_url

if TYPE_CHECKING:
    from aigateway.testing._accounts import Account
    from aigateway.testing._clock import MockClock
    from aigateway.testing._services import FileStore, ServiceSpec, ServiceStores

__all__ = [
    "FILES_PATH",
    "MAX_IMAGE_SIDE",
    "WORDS",
    "Plan",
    "Refusal",
    "ServiceContext",
    "image_size",
    "once",
    "refuse",
    "sentences",
]

MAX_IMAGE_SIDE = 2048
"""The largest width or height the mock draws (a 400 above it)."""
FILES_PATH = "/v1/files/"

WORDS = [
    "gateway",
    "model",
    "signal",
    "river",
    "amber",
    "quiet",
    "orbit",
    "lantern",
    "meadow",
    "copper",
    "harbor",
    "pixel",
    "summit",
    "velvet",
    "garden",
    "circuit",
    "timber",
    "echo",
    "prism",
    "falcon",
]


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


def sentences(rng: random.Random, count: int) -> str:
    out = []
    for _ in range(count):
        words = [rng.choice(WORDS) for _ in range(rng.randint(5, 10))]
        out.append(" ".join(words).capitalize() + ".")
    return " ".join(out)


def image_size(ctx: ServiceContext, default: str) -> tuple[int, int]:
    """The ``size`` input (``<width>x<height>``, checked by its type) as two numbers, each
    at most `MAX_IMAGE_SIDE` (its digits are counted before they are converted)."""
    longest = len(str(MAX_IMAGE_SIDE))
    sides = [
        int(part) if len(part) <= longest else MAX_IMAGE_SIDE + 1
        for part in str(ctx.inputs.get("size", default)).split("x")
    ]
    if max(sides) > MAX_IMAGE_SIDE:
        raise refuse(
            400,
            f"{ctx.param('size')}: the mock draws at most {MAX_IMAGE_SIDE}x{MAX_IMAGE_SIDE}",
            "size_too_large",
            ctx.param("size"),
        )
    width, height = sides
    return width, height


def once(quantity: float | int | Decimal, perform: Callable[[], dict[str, Any]]) -> Plan:
    return Plan(to_decimal(quantity), perform)
