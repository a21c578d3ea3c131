"""Fault injection for the mock gateway: make the next requests fail the way networks do.

``gateway.faults`` is a `FaultPlan`. Each method queues a fault for the next ``times``
requests (optionally only those to one ``path``, relative to ``/v1``, e.g. ``"/chat/completions"``);
faults are used up first in, first out::

    gateway.faults.fail(503, times=2)                 # two 503s, then normal replies
    gateway.faults.fail(429, retry_after=7)           # Retry-After: 7, X-RateLimit-Remaining: 0
    gateway.faults.fail(429, rate_limit_headers=False)  # a bare 429
    gateway.faults.drop()                             # connection lost before any reply
    gateway.faults.drop(after_processing=True)        # performed and charged, reply lost
    gateway.faults.drop_mid_stream(after_events=2)    # the stream is cut after 2 events
    gateway.faults.truncate()                         # the body stops half-way
    gateway.faults.malformed(b"<html>oops</html>")    # a 200 whose body is not JSON
    gateway.faults.malformed_chunk(after_events=2)    # a stream whose third event is not JSON
    gateway.faults.latency(5.0)                       # every reply takes 5 s (of mock time)
    gateway.faults.latency(2.0, between_chunks=True)  # 2 s between stream events

A ``fail`` or ``drop`` or ``malformed`` fault answers without performing the request (nothing
is charged, no request counted); a ``fail`` reply carries the caller's ``X-RateLimit-*``
headers like any reply of the gateway (a ``malformed`` one, which stands for a proxy's page,
does not); ``drop(after_processing=True)``, ``drop_mid_stream`` and ``truncate`` perform it
(and charge it) and then spoil the delivery, which is what makes idempotency keys matter.

In-process, latency is simulated, never slept: the transport moves the mock clock forward by
it and raises the timeout httpx (or httpx2) would raise when it exceeds the request's read
timeout. Connection drops reach clients as their library's ``RemoteProtocolError`` (before a
reply) or ``ReadError`` (in a body). Served, latency is a real wait and a drop closes the
socket.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from aigateway.testing._core.wire import (
    MockRequest,
    MockResponse,
    close_body,
    error_body,
    json_response,
)

__all__ = ["ConnectionDropped", "DeliveryFault", "FaultPlan", "FaultyResponse"]

_STATUS_ERRORS = {
    429: ("rate_limit_error", "rate_limit_exceeded", "rate limit reached (injected fault)"),
    500: ("server_error", "internal_error", "internal server error (injected fault)"),
    502: ("server_error", "bad_gateway", "bad gateway (injected fault)"),
    503: ("service_unavailable", "service_unavailable", "service unavailable (injected fault)"),
    504: ("server_error", "gateway_timeout", "gateway timeout (injected fault)"),
}


class ConnectionDropped(Exception):
    """Raised by a body iterator to say: the connection is cut here."""


@dataclass
class FaultyResponse(MockResponse):
    """A reply with delivery faults the transport acts out: no reply at all (``drop``), or a
    delay before it (``latency``) or between stream events (``chunk_latency``)."""

    drop: bool = False
    latency: float = 0.0
    chunk_latency: float = 0.0


@dataclass
class DeliveryFault:
    """One queued fault."""

    kind: str
    times: int | None
    path: str | None = None
    status: int = 500
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    content_type: str = ""
    after_events: int = 1
    seconds: float = 0.0
    rate_limit_headers: bool = False

    def matches(self, path: str) -> bool:
        return self.path is None or path == "/v1" + self.path or path == self.path


_BEFORE = frozenset({"fail", "drop", "malformed"})


class FaultPlan:
    """The faults queued for the next requests; thread-safe.

    ``now`` is the mock clock and ``headers_of`` the ``X-RateLimit-*`` headers of a request's
    key, for the replies of ``fail`` faults.
    """

    def __init__(
        self,
        now: Callable[[], float] = lambda: 0.0,
        headers_of: Callable[[MockRequest], Mapping[str, str]] = lambda request: {},
    ) -> None:
        self._now = now
        self._headers_of = headers_of
        self._lock = threading.Lock()
        self._faults: list[DeliveryFault] = []

    def fail(
        self,
        status: int = 500,
        *,
        times: int = 1,
        retry_after: float | None = None,
        rate_limit_headers: bool = True,
        code: str | None = None,
        message: str | None = None,
        path: str | None = None,
    ) -> None:
        """Answer the next ``times`` requests with ``status`` and an Error body, and the
        caller's ``X-RateLimit-*`` headers unless ``rate_limit_headers`` is false. A 429's say
        remaining 0 and reset when its ``Retry-After`` ends (``retry_after``, 1 s by default);
        other statuses carry ``Retry-After`` only when ``retry_after`` is given."""
        error_type, default_code, default_message = _STATUS_ERRORS.get(
            status, ("server_error", f"http_{status}", f"HTTP {status} (injected fault)")
        )
        headers: dict[str, str] = {}
        if retry_after is not None or (status == 429 and rate_limit_headers):
            headers["retry-after"] = _seconds(1.0 if retry_after is None else retry_after)
        body = error_body(message or default_message, error_type, code or default_code)
        fault = DeliveryFault("fail", times, path, status, headers, body=_dump(body))
        fault.rate_limit_headers = rate_limit_headers
        fault.seconds = 1.0 if retry_after is None else retry_after
        self._add(fault)

    def drop(
        self, *, times: int = 1, after_processing: bool = False, path: str | None = None
    ) -> None:
        """Cut the connection before any reply; with ``after_processing`` the request is
        performed (and charged) first, so only the reply is lost."""
        self._add(DeliveryFault("drop_after" if after_processing else "drop", times, path))

    def drop_mid_stream(
        self, *, after_events: int = 1, times: int = 1, path: str | None = None
    ) -> None:
        """Cut a streamed reply after ``after_events`` events (a whole reply after half of
        its bytes)."""
        self._add(DeliveryFault("drop_mid_stream", times, path, after_events=after_events))

    def truncate(self, *, times: int = 1, path: str | None = None) -> None:
        """End the body half-way, cleanly (the connection is not reset): a JSON reply is cut,
        a stream stops in the middle of an event without ``data: [DONE]``."""
        self._add(DeliveryFault("truncate", times, path))

    def malformed(
        self,
        body: bytes = b"<html><body>502 Bad Gateway</body></html>",
        *,
        status: int = 200,
        content_type: str = "text/html",
        times: int = 1,
        path: str | None = None,
    ) -> None:
        """Answer with ``body`` as it is (not JSON, by default an HTML page) and ``status``."""
        self._add(
            DeliveryFault("malformed", times, path, status, body=body, content_type=content_type)
        )

    def malformed_chunk(
        self,
        data: bytes = b'{"id": "chatcmpl-broken", "choices": [tru',
        *,
        after_events: int = 1,
        times: int = 1,
        path: str | None = None,
    ) -> None:
        """In a streamed reply, send ``data: <data>`` (not a valid chunk) after
        ``after_events`` good events, then the rest of the stream."""
        self._add(
            DeliveryFault("malformed_chunk", times, path, body=data, after_events=after_events)
        )

    def latency(
        self,
        seconds: float,
        *,
        between_chunks: bool = False,
        times: int | None = None,
        path: str | None = None,
    ) -> None:
        """Delay replies by ``seconds`` of mock time (every reply until `clear`, or the next
        ``times``); with ``between_chunks``, delay each event of a stream instead."""
        kind = "chunk_latency" if between_chunks else "latency"
        self._add(DeliveryFault(kind, times, path, seconds=seconds))

    def clear(self) -> None:
        """Remove every queued fault."""
        with self._lock:
            self._faults.clear()

    @property
    def pending(self) -> list[DeliveryFault]:
        """The faults not used up yet (a copy)."""
        with self._lock:
            return list(self._faults)

    def _add(self, fault: DeliveryFault) -> None:
        if fault.times is not None and fault.times < 1:
            raise ValueError(f"times must be at least 1, got {fault.times!r}")
        with self._lock:
            self._faults.append(fault)

    def _take(self, path: str) -> list[DeliveryFault]:
        """The faults for one request: at most one that changes the reply, plus latencies."""
        taken: list[DeliveryFault] = []
        with self._lock:
            if not self._faults:
                return taken
            spoiler_taken = False
            for fault in list(self._faults):
                if not fault.matches(path):
                    continue
                is_latency = fault.kind in ("latency", "chunk_latency")
                if not is_latency and spoiler_taken:
                    continue
                spoiler_taken = spoiler_taken or not is_latency
                taken.append(fault)
                if fault.times is not None:
                    fault.times -= 1
                    if fault.times == 0:
                        self._faults.remove(fault)
        return taken

    def run(self, request: MockRequest, serve: Callable[[], MockResponse]) -> MockResponse:
        """Answer ``request`` with ``serve`` unless a fault says otherwise, then spoil the
        delivery as the faults for it say."""
        faults = self._take(request.path)
        if not faults:
            return serve()
        spoiler = next((f for f in faults if f.kind not in ("latency", "chunk_latency")), None)
        latency = sum(f.seconds for f in faults if f.kind == "latency")
        chunk_latency = sum(f.seconds for f in faults if f.kind == "chunk_latency")
        if spoiler is not None and spoiler.kind in _BEFORE:
            response = _before(spoiler)
            if spoiler.rate_limit_headers:
                for name, value in self._headers_of(request).items():
                    response.headers.setdefault(name, value)
                if spoiler.status == 429:
                    response.headers["x-ratelimit-remaining"] = "0"
                    reset = int(self._now() + spoiler.seconds)
                    response.headers["x-ratelimit-reset"] = str(reset)
        else:
            response = serve()
            if spoiler is not None:
                response = _after(spoiler, response)
        if isinstance(response, FaultyResponse):
            response.latency, response.chunk_latency = latency, chunk_latency
            return response
        return FaultyResponse(
            response.status,
            response.headers,
            response.body,
            latency=latency,
            chunk_latency=chunk_latency,
        )


def _before(fault: DeliveryFault) -> MockResponse:
    if fault.kind == "drop":
        return FaultyResponse(0, {}, b"", drop=True)
    if fault.kind == "malformed":
        return MockResponse(fault.status, {"content-type": fault.content_type}, fault.body)
    response = MockResponse(fault.status, {"content-type": "application/json"}, fault.body)
    response.headers.update(fault.headers)
    return response


def _after(fault: DeliveryFault, response: MockResponse) -> MockResponse:
    if fault.kind == "drop_after":
        if not isinstance(response.body, bytes):
            close_body(response.body)
        return FaultyResponse(0, {}, b"", drop=True)
    body = response.body
    if fault.kind == "truncate":
        if isinstance(body, bytes):
            return MockResponse(response.status, response.headers, body[: len(body) // 2])
        return MockResponse(response.status, response.headers, _cut_stream(body))
    if fault.kind == "malformed_chunk":
        if isinstance(body, bytes):  # not a stream: nothing to spoil
            return response
        return MockResponse(
            response.status, response.headers, _spoil_event(body, fault.after_events, fault.body)
        )
    # drop_mid_stream
    if isinstance(body, bytes):
        return MockResponse(response.status, response.headers, _then_drop([body[: len(body) // 2]]))
    return MockResponse(response.status, response.headers, _drop_after(body, fault.after_events))


def _cut_stream(events: Iterator[bytes]) -> Iterator[bytes]:
    all_events = list(events)
    kept = all_events[: max(1, len(all_events) // 2)]
    last = kept.pop()
    yield from kept
    yield last[: len(last) // 2]


def _drop_after(events: Iterator[bytes], count: int) -> Iterator[bytes]:
    try:
        for index, event in enumerate(events):
            if index >= count:
                break
            yield event
        raise ConnectionDropped(f"connection dropped after {count} events (injected fault)")
    finally:
        close_body(events)


def _spoil_event(events: Iterator[bytes], count: int, data: bytes) -> Iterator[bytes]:
    try:
        for index, event in enumerate(events):
            if index == count:
                yield b"data: " + data + b"\n\n"
            yield event
    finally:
        close_body(events)


def _then_drop(parts: list[bytes]) -> Iterator[bytes]:
    yield from parts
    raise ConnectionDropped("connection dropped mid-body (injected fault)")


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _dump(obj: object) -> bytes:
    body = json_response(200, obj).body
    assert isinstance(body, bytes)
    return body
