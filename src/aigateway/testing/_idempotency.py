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
it again with the same key is allowed to perform it.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from ._clock import MockClock
from ._wire import MockRequest, MockResponse, error_response

__all__ = ["IDEMPOTENCY_TTL", "IdempotencyStore"]

IDEMPOTENCY_TTL = 24 * 3600.0
"""How long (mock seconds) a key is remembered."""
_INVALID = "invalid_request_error"


@dataclass
class _Entry:
    fingerprint: str
    created: float
    reply: tuple[int, dict[str, str], bytes | list[bytes]] | None = None
    """None while the first request is being answered."""


def fingerprint(request: MockRequest) -> str:
    return hashlib.sha256(
        request.method.encode() + b" " + request.path.encode() + b"\n" + request.body
    ).hexdigest()


class IdempotencyStore:
    """Keys per account, with the first reply to each; thread-safe."""

    def __init__(self, clock: MockClock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, str], _Entry] = {}

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def begin(self, account_id: str, key: str, request: MockRequest) -> MockResponse | None:
        """The reply to give without performing the request (a replay or a 409), or None when
        the request is to be performed (the key is then held until `finish` or `abandon`)."""
        now = self._clock.now()
        print_ = fingerprint(request)
        with self._lock:
            entry = self._entries.get((account_id, key))
            if entry is not None and now - entry.created >= IDEMPOTENCY_TTL:
                entry = None
            if entry is None:
                self._entries[(account_id, key)] = _Entry(print_, now)
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
        else:
            body = list(response.body)
            sent = iter(body)
        with self._lock:
            entry = self._entries.get((account_id, key))
            if entry is not None:
                entry.reply = (response.status, dict(response.headers), body)
        return MockResponse(response.status, response.headers, sent)

    def abandon(self, account_id: str, key: str) -> None:
        """Forget a key whose request failed."""
        with self._lock:
            self._entries.pop((account_id, key), None)
