"""The mock's request log: what it was sent, bounded whatever a caller sends.

A request is logged once it is answered, so the log knows how: a request with a valid key
that got past the gateway's limits (a body within its size limit, within the key's rate
limits: routed, or replayed for its idempotency key) or that an injected fault answered (the
test's own doing: it reads what was sent) keeps the first ``max_body_bytes`` of its body
(`MockRequest.body_cut` tells). One refused (a 401, 413 or 429) keeps its metadata only:
method, path, query, headers (without an unknown key's ``Authorization``), the body's
length, the status.
The log holds the latest ``size`` requests; `MockGateway.requests` and the admin API's
``GET /_mock/requests`` read it.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import deque
from dataclasses import dataclass

from aigateway.testing._core.wire import MockRequest, MockResponse

__all__ = [
    "LOG_BODY_BYTES",
    "LOG_SIZE",
    "UNKNOWN_FIELDS_HEADER",
    "LoggedRequest",
    "RequestLog",
    "unknown_fields",
]

LOG_SIZE = 1_000
"""How many requests the log keeps by default (the oldest are forgotten first)."""
LOG_BODY_BYTES = 16 * 1024
"""How much of each body the log keeps by default."""
UNKNOWN_FIELDS_HEADER = "x-mock-unknown-fields"
"""The reply header listing the request's unknown body fields (absent when there are none):
the chat route writes it, the log reads it."""


@dataclass(frozen=True)
class LoggedRequest:
    """One request as the admin API shows it: never a header, a body or a key."""

    method: str
    path: str
    status: int | None
    """None when no reply was sent (an injected connection drop)."""
    request_id: str
    time: float
    """When it was answered, on the gateway's clock."""
    received: float
    """When it arrived (and its rate limits were checked), on the gateway's clock."""
    unknown_fields: tuple[str, ...] = ()
    """The body fields of a chat request the gateway did not know, as the reply's
    ``X-Mock-Unknown-Fields`` named them."""


class RequestLog:
    """The latest ``size`` requests answered, oldest first, each body cut to
    ``max_body_bytes``; thread-safe."""

    def __init__(self, size: int = LOG_SIZE, max_body_bytes: int = LOG_BODY_BYTES) -> None:
        if size < 0 or max_body_bytes < 0:
            raise ValueError(
                "max_logged_requests and max_logged_body_bytes are at least 0, got "
                f"{size!r} and {max_body_bytes!r}"
            )
        self.size = size
        self.max_body_bytes = max_body_bytes
        self._entries: deque[tuple[LoggedRequest, MockRequest]] = deque(maxlen=size)
        self._lock = threading.Lock()

    def add(
        self,
        request: MockRequest,
        request_id: str,
        status: int,
        time: float,
        received: float,
        *,
        known_key: bool,
        refused: bool,
        unknown_fields: tuple[str, ...] = (),
    ) -> None:
        """Log ``request``, answered with ``status``: its body (cut) only with a ``known_key``
        and not ``refused`` (for its size or rate limits), an unknown key's ``Authorization``
        never."""
        entry = LoggedRequest(
            request.method,
            request.path[:1000],
            status or None,
            request_id,
            time,
            received,
            unknown_fields,
        )
        headers = request.headers
        if not known_key:
            headers = {name: value for name, value in headers.items() if name != "authorization"}
        body = request.body[: self.max_body_bytes] if known_key and not refused else b""
        if body is not request.body or headers is not request.headers:
            request = dataclasses.replace(
                request, headers=headers, body=body, body_size=request.body_size
            )
        with self._lock:
            self._entries.append((entry, request))

    def requests(self) -> list[MockRequest]:
        """The logged requests, oldest first (a copy)."""
        with self._lock:
            return [request for _, request in self._entries]

    def latest(self, limit: int) -> list[LoggedRequest]:
        """The metadata of the latest ``limit`` requests, oldest first."""
        with self._lock:
            entries = list(self._entries)[-limit:]
        return [entry for entry, _ in entries]


def unknown_fields(response: MockResponse) -> tuple[str, ...]:
    """The unknown body fields a chat reply's ``X-Mock-Unknown-Fields`` names (for the log)."""
    named = response.headers.get(UNKNOWN_FIELDS_HEADER)
    return tuple(named.split(", ")) if named else ()
