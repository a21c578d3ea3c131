"""Per-account quotas on what the mock keeps: files, their bytes, SQL databases.

Whatever a key sends, what the gateway keeps for its account stays within the account's
`Quota`: the files the services make or store (``files``, ``storage_bytes``) and the SQL
databases of the database services (``databases``, each holding at most ``database_bytes``).
A call that would keep more is refused before it is billed: a 403 ``quota_exceeded`` naming
the quota, what is used and how to make room. Deleting frees room at once (a storage
``delete``, ``DELETE /v1/files/{id}``, ``DROP TABLE``).

Every account has the default quota (`Quotas.default`) unless it has one of its own::

    gateway.quotas.set(Quota(files=10), account)   # one account (an Account or its key)
    gateway.quotas.set(Quota(storage_bytes=0))      # the default of all the others

or over HTTP, ``PUT /_mock/quota`` and ``PUT /_mock/accounts/{key}/quota``.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aigateway.testing._core.wire import INVALID, MockResponse, error_response
from aigateway.testing._sql.database import MAX_DATABASE_BYTES

if TYPE_CHECKING:
    from aigateway.testing._core.accounts import Account, Ledger

__all__ = ["Quota", "QuotaExceeded", "Quotas"]

_MIB = 1024 * 1024


@dataclass(frozen=True)
class Quota:
    """What one account may keep; 0 keeps nothing of that kind."""

    files: int = 1_000
    """Files: what the image, video and speech services make, and stored objects."""
    storage_bytes: int = 32 * _MIB
    """The bytes of those files, together."""
    databases: int = 4
    """SQL databases: one per database service the account uses."""
    database_bytes: int = MAX_DATABASE_BYTES
    """What one database may hold (SQLite pages, indexes included)."""

    def __post_init__(self) -> None:
        for item in dataclasses.fields(self):
            value = getattr(self, item.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"a quota's {item.name} is an integer >= 0, got {value!r}")

    def changed(self, **fields: Any) -> Quota:
        """This quota with ``fields`` replaced."""
        return dataclasses.replace(self, **fields)


class QuotaExceeded(Exception):
    """What would break ``quota`` (the name of a `Quota` field): `response` is the 403."""

    def __init__(self, quota: str, limit: int, used: int, adding: int, remedy: str) -> None:
        self.quota = quota
        self.message = (
            f"over this account's quota: {quota} is {limit}, {used} used, this call adds "
            f"{adding}; {remedy}, or raise the quota (PUT /_mock/accounts/{{key}}/quota)"
        )
        super().__init__(self.message)

    def response(self, param: str | None = None) -> MockResponse:
        return error_response(403, self.message, INVALID, "quota_exceeded", param=param)


class Quotas:
    """The default quota and each account's own, by account id; thread-safe."""

    def __init__(self, ledger: Ledger, default: Quota | None = None) -> None:
        self._ledger = ledger
        self._lock = threading.Lock()
        self._default = default if default is not None else Quota()
        self._own: dict[str, Quota] = {}

    @property
    def default(self) -> Quota:
        """The quota of every account without one of its own."""
        return self._default

    def set(self, quota: Quota, account: Account | str | None = None) -> None:
        """Set one account's quota (an `Account` or its API key), or the default."""
        if not isinstance(quota, Quota):
            raise TypeError(f"a quota is a Quota, got {type(quota).__name__}")
        with self._lock:
            if account is None:
                self._default = quota
            else:
                self._own[self._account_id(account)] = quota

    def of(self, account: Account | str) -> Quota:
        """The quota of an account (an `Account` or its API key)."""
        return self.of_id(self._account_id(account))

    def of_id(self, account_id: str) -> Quota:
        """The quota of the account with id ``account_id``."""
        with self._lock:
            return self._own.get(account_id, self._default)

    def own(self, account: Account | str) -> bool:
        """Whether an account (an `Account` or its API key) has a quota of its own."""
        account_id = self._account_id(account)
        with self._lock:
            return account_id in self._own

    def _account_id(self, account: Account | str) -> str:
        if not isinstance(account, str):
            return account.id
        found = self._ledger.account(account)
        if found is None:
            raise KeyError("no account has this key")
        return found.id
