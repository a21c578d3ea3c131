"""The mock's non-chat services as data: ids per category, prices in the gateway's units.

The API description lists the billing units: image per image, video per second, speech per 1K
characters, scraping and search per request, email per message, parsing per page. Categories
it gives no unit for (speech to text, payments, social data, storage, databases, SMS) cost a
flat price per request. Prices are in credits and small, so the 20 free credits go a long way.

`ServiceCatalogue` works like the chat `Catalogue`: a mutable mapping id -> `ServiceSpec`,
looked up in either spelling of version digits, with the closest ids for a 404. `FileStore`
holds the files the services make (served at ``/v1/files/{id}``), `ServiceStores` the objects
and SQL databases of the storage and database services.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from aigateway.testing._core.catalogue import SpecCatalogue, check_price
from aigateway.testing._core.ids import IdSource
from aigateway.testing._core.quotas import Quota, QuotaExceeded, Quotas
from aigateway.testing._sql.database import SqlDatabase
from aigateway.types.service_params import CATEGORIES

__all__ = ["FileStore", "ServiceCatalogue", "ServiceSpec", "ServiceStores", "default_services"]


@dataclass(frozen=True)
class ServiceSpec:
    """One non-chat service: its id, category (a key of ``CATEGORIES``), price per unit."""

    id: str
    category: str
    price: float
    """Credits per ``unit``."""
    unit: str = "request"
    """``image``, ``second``, ``1k_characters``, ``request``, ``message`` or ``page``."""

    def __post_init__(self) -> None:
        if not isinstance(self.category, str) or not self.category:
            raise ValueError(f"a service's category is a non-empty string, got {self.category!r}")
        check_price(self.price, "a service's price")


_UNITS = {
    "image": "image",
    "video": "second",
    "speech": "1k_characters",
    "email": "message",
    "document": "page",
}
"""The billing unit of each category the API names one for; the others cost per request."""

_DEFAULT_PRICES: dict[str, dict[str, float]] = {
    "image": {"flux-schnell": 0.003, "stability/sdxl": 0.004, "dall-e-3": 0.04},
    "video": {"runway/gen-3": 0.05, "luma/dream-machine": 0.03},
    "speech": {"tts-1": 0.015, "elevenlabs/multilingual-v2": 0.03},
    "transcription": {"whisper-1": 0.006, "deepgram/nova-2": 0.004},
    "scrape": {"firecrawl/scrape": 0.001, "jina/reader": 0.0005},
    "search": {"tavily/search": 0.005, "serper/search": 0.001},
    "email": {"resend/email": 0.001, "sendgrid/email": 0.001},
    "payment": {"stripe/payments": 0.01},
    "document": {"llamaparse/parse": 0.003, "unstructured/parse": 0.01},
    "social": {"socialdata/profile": 0.002},
    "storage": {"s3/storage": 0.0005},
    "database": {"supabase/sql": 0.0005},
    "sms": {"twilio/sms": 0.0075},
}
"""The default services: their prices (credits per unit of their category) by category and id."""


def default_services() -> list[ServiceSpec]:
    """A fresh copy of the default services, one to three per category (edit it freely)."""
    return [
        ServiceSpec(service_id, category, price, _UNITS.get(category, "request"))
        for category, prices in _DEFAULT_PRICES.items()
        for service_id, price in prices.items()
    ]


class ServiceCatalogue(SpecCatalogue[ServiceSpec]):
    """The services a gateway runs, keyed by id: add, replace or delete them like a dict;
    ids are found in either spelling, and a miss names the closest ids. A service of a
    category the gateway does not know is refused when it is added."""

    spec_type = ServiceSpec

    def __init__(
        self, specs: Iterable[ServiceSpec] = (), categories: Collection[str] = CATEGORIES
    ) -> None:
        self._categories = categories
        super().__init__(specs)

    def __setitem__(self, key: str, spec: ServiceSpec) -> None:
        if isinstance(spec, ServiceSpec) and spec.category not in self._categories:
            raise ValueError(
                f"unknown category {spec.category!r}; known: {', '.join(self._categories)} "
                "(gateway.add_service_category adds one)"
            )
        super().__setitem__(key, spec)

    def of_category(self, category: str) -> list[str]:
        """The ids of one category."""
        return [spec.id for spec in self.specs() if spec.category == category]


class FileStore:
    """Files the mock's services made or were given, by id, each owned by an account; served
    at ``/v1/files/{id}`` to that account's key only. An account's files stay within its
    `Quota` (``files``, ``storage_bytes``) when ``quotas`` is given; files without an owner
    are not counted."""

    def __init__(self, ids: IdSource, quotas: Quotas | None = None) -> None:
        self._ids = ids
        self._quotas = quotas
        self._files: dict[str, tuple[bytes, str, str | None]] = {}
        self._usage: dict[str, tuple[int, int]] = {}
        """Owner -> (files, bytes)."""
        self._lock = threading.Lock()

    def put(self, data: bytes, content_type: str, *, owner: str | None = None) -> str:
        """Keep ``data`` for account ``owner``; returns its id (``file_...``). Raises
        `QuotaExceeded` (keeping nothing) when the owner's quota has no room for it."""
        return self.put_all([(data, content_type)], owner=owner)[0]

    def put_all(
        self,
        files: Sequence[tuple[bytes, str]],
        *,
        owner: str | None = None,
        replacing: str | None = None,
    ) -> list[str]:
        """Keep ``files`` (bytes and content type) for account ``owner``, all or none; their
        ids. `QuotaExceeded` when the owner's quota has no room for them all, not counting
        the file they replace (``replacing``: one of the owner's, deleted by the caller)."""
        file_ids = [self._ids.secret("file", "file_", 24) for _ in files]
        adding = sum(len(data) for data, _ in files)
        with self._lock:
            if owner is not None:
                count, size = self._usage.get(owner, (0, 0))
                if self._quotas is not None:
                    old = self._files.get(replacing) if replacing is not None else None
                    freed = len(old[0]) if old is not None and old[2] == owner else None
                    _check_room(
                        self._quotas.of_id(owner),
                        count - (freed is not None),
                        size - (freed or 0),
                        len(files),
                        adding,
                    )
                self._usage[owner] = (count + len(files), size + adding)
            for file_id, (data, content_type) in zip(file_ids, files, strict=True):
                self._files[file_id] = (data, content_type, owner)
        return file_ids

    def get(self, file_id: str, *, owner: str | None = None) -> tuple[bytes, str] | None:
        """``(bytes, content type)`` of a file, or None (also when ``owner`` is given and the
        file belongs to another account)."""
        with self._lock:
            found = self._files.get(file_id)
        if found is None or (owner is not None and found[2] not in (None, owner)):
            return None
        return found[0], found[1]

    def delete(self, file_id: str, *, owner: str | None = None) -> bool:
        """Forget a file (only one of ``owner``'s, when given), freeing its room; whether
        there was one."""
        with self._lock:
            found = self._files.get(file_id)
            if found is None or (owner is not None and found[2] not in (None, owner)):
                return False
            del self._files[file_id]
            if found[2] is not None:
                count, size = self._usage[found[2]]
                self._usage[found[2]] = (count - 1, size - len(found[0]))
        return True

    def usage(self, owner: str) -> tuple[int, int]:
        """``(files, bytes)`` account ``owner`` keeps."""
        with self._lock:
            return self._usage.get(owner, (0, 0))

    def __len__(self) -> int:
        return len(self._files)


def _check_room(quota: Quota, count: int, size: int, files: int, adding: int) -> None:
    remedy = "delete some (a storage delete, DELETE /v1/files/{id})"
    if count + files > quota.files:
        raise QuotaExceeded("files", quota.files, count, files, remedy)
    if size + adding > quota.storage_bytes:
        raise QuotaExceeded("storage_bytes", quota.storage_bytes, size, adding, remedy)


class ServiceStores:
    """The state of the storage and database services, per account and service id.

    ``objects[(account_id, service_id)]`` maps keys to file ids in the `FileStore`;
    ``database(account_id, service_id)`` is a sandboxed in-memory SQLite database
    whose statements stop after ``statement_timeout`` seconds of wall time. With ``quotas``,
    an account has at most its `Quota`'s ``databases``, each of ``database_bytes``.
    """

    def __init__(self, *, statement_timeout: float = 1.0, quotas: Quotas | None = None) -> None:
        self.objects: dict[tuple[str, str], dict[str, str]] = {}
        self.statement_timeout = statement_timeout
        """Seconds a statement of a database created from now on may run (a 400 after)."""
        self._quotas = quotas
        self._databases: dict[tuple[str, str], SqlDatabase] = {}
        self.lock = threading.Lock()

    def bucket(self, account_id: str, service_id: str) -> dict[str, str]:
        """The key -> file id map of one account's storage service (call under ``lock``)."""
        return self.objects.setdefault((account_id, service_id), {})

    def database(self, account_id: str, service_id: str) -> SqlDatabase:
        """One account's database of a service (made on first use; `QuotaExceeded` when
        the account has its quota of databases already)."""
        quota = self._quotas.of_id(account_id) if self._quotas is not None else None
        with self.lock:
            found = self._databases.get((account_id, service_id))
            if found is None:
                if quota is not None:
                    count = self.databases_of(account_id)
                    if count + 1 > quota.databases:
                        raise QuotaExceeded(
                            "databases", quota.databases, count, 1, "use a database you have"
                        )
                found = SqlDatabase(self.statement_timeout)
                self._databases[(account_id, service_id)] = found
        if quota is not None:
            found.max_bytes = quota.database_bytes
        return found

    def databases_of(self, account_id: str) -> int:
        """How many databases account ``account_id`` has."""
        return sum(1 for owner, _ in list(self._databases) if owner == account_id)
