"""Idempotency keys in the mock gateway: a repeated POST is answered, not performed again.

A POST carrying ``Idempotency-Key`` is remembered per account for 24 hours of the mock's
clock. Within that time:

* the same key with the same method, path and body gets the first reply again, byte for byte
  (a stream replays its events), with ``idempotent-replayed: true``, and is not charged;
* the same key with another body (or path) is a **409** ``idempotency_key_reused``: the key
  names one operation, and a different one under the same name is a client bug;
* the same key while its first request is still being answered is a **409**
  ``idempotency_key_in_progress`` (retry later).

Only successful (2xx) replies are remembered: a failed request performed nothing, so trying
it again with the same key is allowed to perform it. What an account keeps is bounded
(`MAX_KEYS_PER_ACCOUNT` keys, `MAX_REPLY_BYTES_PER_ACCOUNT` of replies, both settable on the
store): past either, its oldest keys are forgotten first.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from aigateway.testing._core.clock import MockClock
from aigateway.testing._core.wire import MockRequest, MockResponse, error_response

__all__ = [
    "IDEMPOTENCY_TTL",
    "MAX_KEYS_PER_ACCOUNT",
    "MAX_REPLY_BYTES_PER_ACCOUNT",
    "IdempotencyStore",
]

IDEMPOTENCY_TTL = 24 * 3600.0
"""How long (mock seconds) a key is remembered."""
MAX_KEYS_PER_ACCOUNT = 1_000
"""How many keys an account keeps (the oldest are forgotten first)."""
MAX_REPLY_BYTES_PER_ACCOUNT = 8 * 1024 * 1024
"""How many bytes of remembered replies an account keeps (the oldest forgotten first)."""
_INVALID = "invalid_request_error"


@dataclass
class _Entry:
    fingerprint: str
    created: float
    reply: tuple[int, dict[str, str], bytes | list[bytes]] | None = None
    """None while the first request is being answered."""
    size: int = 0
    """The bytes of the reply's body."""


def fingerprint(request: MockRequest) -> str:
    digest = hashlib.sha256(request.method.encode() + b" " + request.path.encode() + b"\n")
    digest.update(request.body)  # not concatenated: a body can be megabytes
    return digest.hexdigest()


class IdempotencyStore:
    """Keys per account, with the first reply to each; thread-safe. An account keeps at
    most ``max_keys`` keys and ``max_bytes`` of replies: past either, its oldest keys are
    forgotten first (a reply larger than ``max_bytes`` is not remembered)."""

    def __init__(
        self,
        clock: MockClock,
        *,
        max_keys: int = MAX_KEYS_PER_ACCOUNT,
        max_bytes: int = MAX_REPLY_BYTES_PER_ACCOUNT,
    ) -> None:
        self._clock = clock
        self.max_keys = max_keys
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._accounts: dict[str, dict[str, _Entry]] = {}
        """Account id -> key -> entry, oldest first."""

    def __len__(self) -> int:
        with self._lock:
            return sum(len(entries) for entries in self._accounts.values())

    def begin(self, account_id: str, key: str, request: MockRequest) -> MockResponse | None:
        """The reply to give without performing the request (a replay or a 409), or None when
        the request is to be performed (the key is then held until `finish` or `abandon`)."""
        now = self._clock.now()
        print_ = fingerprint(request)
        with self._lock:
            entries = self._accounts.setdefault(account_id, {})
            entry = entries.get(key)
            if entry is not None and now - entry.created >= IDEMPOTENCY_TTL:
                entry = None
            if entry is None:
                entries.pop(key, None)
                self._make_room(entries, now, 1, 0)
                entries[key] = _Entry(print_, now)
                return None
            if entry.fingerprint != print_:
                return error_response(
                    409,
                    "this Idempotency-Key was used with another request (method, path or body); "
                    "use a new key for a new operation",
                    _INVALID,
                    "idempotency_key_reused",
                )
            if entry.reply is None:
                return error_response(
                    409,
                    "a request with this Idempotency-Key is still being answered; retry later",
                    _INVALID,
                    "idempotency_key_in_progress",
                )
            status, headers, body = entry.reply
        replayed = body if isinstance(body, bytes) else iter(list(body))
        return MockResponse(status, {**headers, "idempotent-replayed": "true"}, replayed)

    def finish(self, account_id: str, key: str, response: MockResponse) -> MockResponse:
        """Remember a 2xx reply (forget the key otherwise); returns the reply to send."""
        if not 200 <= response.status < 300:
            self.abandon(account_id, key)
            return response
        body: bytes | list[bytes]
        if isinstance(response.body, bytes):
            body = response.body
            sent: bytes | Iterator[bytes] = body
            size = len(body)
        else:
            body = list(response.body)
            sent = iter(body)
            size = sum(len(event) for event in body)
        with self._lock:
            entries = self._accounts.get(account_id, {})
            entry = entries.get(key)
            if entry is not None:
                if size > self.max_bytes:
                    del entries[key]
                else:
                    entry.reply = (response.status, dict(response.headers), body)
                    self._make_room(entries, self._clock.now(), 0, size)  # counts it as 0 yet
                    entry.size = size
        return MockResponse(response.status, response.headers, sent)

    def abandon(self, account_id: str, key: str) -> None:
        """Forget a key whose request failed."""
        with self._lock:
            self._accounts.get(account_id, {}).pop(key, None)

    def _make_room(self, entries: dict[str, _Entry], now: float, keys: int, size: int) -> None:
        """Forget expired keys, then the oldest, until ``keys`` more keys and ``size`` more
        bytes fit (call under the lock)."""
        used = sum(entry.size for entry in entries.values())
        for key, entry in list(entries.items()):
            expired = now - entry.created >= IDEMPOTENCY_TTL
            if (
                not expired
                and len(entries) + keys <= self.max_keys
                and used + size <= self.max_bytes
            ):
                break
            del entries[key]
            used -= entry.size
