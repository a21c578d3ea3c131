"""Accounts, API keys and the credits ledger of the mock gateway.

Each account has an id, an API key and a balance in credits (20 for a new account, the
gateway's free tier). `Ledger.charge` checks and debits under one lock, so concurrent requests
can never spend the same credits twice or drive a balance below zero: a charge the balance does
not cover is refused and nothing changes. Every accepted charge is recorded (`Charge`), so tests
can sum what was billed and compare it with the balances.

Balances are kept as `decimal.Decimal` internally, so that sums of many small charges are exact;
the public API reads and writes floats, and replies round them to 6 decimals.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from decimal import Decimal

from aigateway.testing._core.ids import IdSource

__all__ = ["Account", "Charge", "ChargeResult", "Ledger", "to_decimal"]

FREE_TIER_CREDITS = 20.0
"""What a new account starts with (the gateway's free tier)."""


def to_decimal(amount: float | int | Decimal) -> Decimal:
    """A credit amount as a Decimal; floats through their shortest repr (0.1 -> Decimal('0.1'))."""
    if isinstance(amount, Decimal):
        return amount
    if isinstance(amount, bool):
        raise TypeError("a credit amount is a number, not a bool")
    return Decimal(repr(float(amount))) if isinstance(amount, float) else Decimal(amount)


def _not_negative(amount: float | Decimal, what: str) -> Decimal:
    """``amount`` as a Decimal; a ValueError naming ``what`` when it is below zero."""
    value = to_decimal(amount)
    if value < 0:
        raise ValueError(f"{what} cannot be negative, got {amount!r}")
    return value


class Account:
    """An account of the mock gateway: ``id``, ``key`` (its API key) and ``credits``.

    ``credits`` is live: it reads the current balance. Change it with
    `MockGateway.set_credits` (or `Ledger.set_credits`).
    """

    __slots__ = ("_balance", "id", "key")

    def __init__(self, id: str, key: str, balance: Decimal) -> None:
        self.id = id
        self.key = key
        self._balance = balance

    @property
    def credits(self) -> float:
        """The current balance."""
        return float(self._balance)

    @property
    def balance(self) -> Decimal:
        """The current balance, exactly."""
        return self._balance

    def __repr__(self) -> str:
        return f"Account(id={self.id!r}, key={self.key!r}, credits={self.credits!r})"


@dataclass(frozen=True)
class Charge:
    """One accepted charge: who paid how much, for which model and request."""

    account_id: str
    amount: float
    model: str
    request_id: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    balance_after: float = 0.0


@dataclass(frozen=True)
class ChargeResult:
    """What `Ledger.charge` did: ``ok`` False means "insufficient credits", nothing debited.

    ``balance`` is the balance after the charge (or the unchanged balance when refused).
    """

    ok: bool
    amount: Decimal
    balance: Decimal


class Ledger:
    """Accounts by key and every charge, guarded by one lock."""

    def __init__(self, ids: IdSource) -> None:
        self._ids = ids
        self._lock = threading.Lock()
        self._by_key: dict[str, Account] = {}
        self._charges: list[Charge] = []
        self._by_request: dict[str, Charge] = {}

    def create_account(
        self, credits: float = FREE_TIER_CREDITS, *, key: str | None = None
    ) -> Account:
        """A new account with ``credits`` (20 by default) and a fresh key (or ``key``); keys
        are random unless the ledger's `IdSource` has fixed secrets."""
        balance = _not_negative(credits, "credits")
        account_id = self._ids.next("account", "acct_", 16)
        key = key if key is not None else self._ids.secret("key", "mock-", 32)
        account = Account(account_id, key, balance)
        with self._lock:
            if key in self._by_key:
                raise ValueError("an account with this key already exists")
            self._by_key[key] = account
        return account

    def account(self, key: str) -> Account | None:
        """The account of API key ``key``, or None."""
        with self._lock:
            return self._by_key.get(key)

    @property
    def accounts(self) -> list[Account]:
        """Every account, in creation order."""
        with self._lock:
            return list(self._by_key.values())

    def _require(self, key: str) -> Account:
        account = self._by_key.get(key)
        if account is None:
            raise KeyError(f"no account has the key {key!r}")
        return account

    def credits(self, key: str) -> float:
        """The balance of the account with API key ``key``."""
        with self._lock:
            return float(self._require(key)._balance)

    def balance(self, key: str) -> Decimal:
        """The exact balance of the account with API key ``key``."""
        with self._lock:
            return self._require(key)._balance

    def set_credits(self, key: str, amount: float | Decimal) -> None:
        """Set the balance of the account with API key ``key``."""
        value = _not_negative(amount, "credits")
        with self._lock:
            self._require(key)._balance = value

    def charge(
        self,
        key: str,
        amount: float | Decimal,
        *,
        model: str = "",
        request_id: str = "",
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
    ) -> ChargeResult:
        """Debit ``amount`` if the balance covers it, atomically; else refuse and debit nothing."""
        value = _not_negative(amount, "a charge")
        with self._lock:
            account = self._require(key)
            if account._balance < value:
                return ChargeResult(False, value, account._balance)
            account._balance -= value
            charge = Charge(
                account.id,
                float(value),
                model,
                request_id,
                prompt_tokens,
                completion_tokens,
                float(account._balance),
            )
            self._charges.append(charge)
            if request_id:
                self._by_request[request_id] = charge
            return ChargeResult(True, value, account._balance)

    def charge_for(self, request_id: str) -> Charge | None:
        """The charge made for request ``request_id``, if any."""
        with self._lock:
            return self._by_request.get(request_id)

    @property
    def charges(self) -> list[Charge]:
        """Every accepted charge, oldest first (a copy)."""
        with self._lock:
            return list(self._charges)
