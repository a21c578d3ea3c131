"""The served mock as users meet it: real time, and every fault acted out over real HTTP.

Each test serves the gateway with uvicorn and talks to it through a socket, with raw httpx
where the exact wire behaviour matters and with our clients (sync and async) as users would.
Every served test also checks the server's log: no traceback, no ``socket.send()`` noise.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from aigateway import (
    APIConnectionError,
    APIResponseValidationError,
    APITimeoutError,
    AsyncClient,
    Client,
    IncompleteStreamError,
    RetryPolicy,
    ServiceUnavailableError,
)
from aigateway.testing import MockClock, MockGateway
from aigateway.testing._core.clock import DEFAULT_START

from ._helpers import parse_sse, user

pytest.importorskip("uvicorn")

LATENCY = 0.05
"""A real delay short enough to keep the file fast, long enough to measure."""
BODY = {"model": "gpt-4o", "messages": user(), "max_tokens": 3}


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class _Recorder(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.name}: {record.getMessage()} exc_info={record.exc_info!r}")


@pytest.fixture
def server_log(capfd: pytest.CaptureFixture[str]) -> Iterator[list[str]]:
    """What the server logged at WARNING and above (it must stay empty), checked at the end
    with what reached stderr."""
    recorder = _Recorder()
    root = logging.getLogger()
    root.addHandler(recorder)
    try:
        yield recorder.lines
    finally:
        root.removeHandler(recorder)
    stderr = capfd.readouterr().err
    assert recorder.lines == []
    assert "Traceback" not in stderr
    assert "socket.send" not in stderr


@pytest.fixture
def gateway() -> MockGateway:
    return MockGateway(seed=7, credits=1_000, rate_limits="unlimited")


@pytest.fixture
def url(gateway: MockGateway, server_log: list[str]) -> Iterator[str]:
    with gateway.serve() as base_url:
        yield base_url


@pytest.fixture
def http(gateway: MockGateway, url: str) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {gateway.api_key}"}
    with httpx.Client(base_url=url, headers=headers) as client:
        yield client


class Waits(list[float]):
    """Retry waits, recorded instead of slept."""

    def policy(self) -> RetryPolicy:
        async def async_sleep(seconds: float) -> None:
            self.append(seconds)

        return RetryPolicy(sleep=self.append, async_sleep=async_sleep, random=lambda: 0.5)


def wait_until(condition: Any, timeout: float = 2.0) -> None:
    """Poll ``condition`` until true: the server sees a client leave a moment later."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.005)


# -- the clock ------------------------------------------------------------------------------


def test_a_served_key_that_spent_its_window_waits_at_most_a_real_minute(
    server_log: list[str],
) -> None:
    gateway = MockGateway(rate_limits="free_plan")  # 10 requests a minute
    headers = {"Authorization": f"Bearer {gateway.api_key}"}
    with gateway.serve() as url, httpx.Client(base_url=url, headers=headers) as http:
        first = http.get("/models")
        replies = [http.get("/models") for _ in range(20)]  # a minute may turn once meanwhile
        now = time.time()
    refused = next(reply for reply in replies if reply.status_code == 429)
    assert first.status_code == 200
    assert now - 1 <= int(first.headers["x-ratelimit-reset"]) <= now + 60
    reset = int(refused.headers["x-ratelimit-reset"])
    assert now - 1 <= reset <= now + 60
    assert refused.headers["x-ratelimit-remaining"] == "0"
    retry_after = int(refused.headers["retry-after"])
    assert 1 <= retry_after <= 60
    assert reset - now - 1 <= retry_after <= max(1, math.ceil(reset - now)) + 1


def test_a_served_reply_is_dated_now(gateway: MockGateway, http: httpx.Client) -> None:
    created = http.post("/chat/completions", json=BODY).json()["created"]
    assert abs(created - time.time()) < 5


def test_serving_puts_the_clock_on_wall_time_then_stops_it_where_it_is(
    gateway: MockGateway, server_log: list[str]
) -> None:
    assert gateway.clock.manual
    assert gateway.clock.now() == DEFAULT_START
    with gateway.serve():
        assert not gateway.clock.manual
        assert abs(gateway.clock.now() - time.time()) < 1
    stopped = gateway.clock.now()
    assert gateway.clock.manual
    assert abs(stopped - time.time()) < 1  # no jump back to 2023
    time.sleep(0.01)
    assert gateway.clock.now() == stopped
    gateway.clock.advance(60)  # settable in-process again
    assert gateway.clock.now() == stopped + 60


def test_serve_on_a_manual_clock_keeps_mock_time(server_log: list[str]) -> None:
    gateway = MockGateway(rate_limits="free_plan")
    headers = {"Authorization": f"Bearer {gateway.api_key}"}
    with gateway.serve(clock="manual") as url, httpx.Client(base_url=url, headers=headers) as h:
        replies = [h.get("/models") for _ in range(11)]
        gateway.clock.advance(60)  # the test moves time: the next window opens
        after = h.get("/models")
    assert [r.status_code for r in replies] == [200] * 10 + [429]
    assert replies[-1].headers["retry-after"] == "40"  # 2023-11-14T22:13:20Z + 40 s
    assert replies[-1].headers["x-ratelimit-reset"] == str(int(DEFAULT_START) + 40)
    assert after.status_code == 200
    assert gateway.clock.now() == DEFAULT_START + 60


def test_serve_refuses_an_unknown_clock_mode(gateway: MockGateway) -> None:
    with pytest.raises(ValueError, match="manual"), gateway.serve(clock="real"):  # type: ignore[arg-type]
        pass


def test_a_clock_following_the_wall_clock_is_still_settable() -> None:
    wall = [1_800_000_000.0]  # the real clock it follows, moved by the test instead of waiting
    clock = MockClock(wall=lambda: wall[0])
    clock.follow_wall_clock()
    assert not clock.manual
    assert abs(clock.now() - wall[0]) < 1
    clock.advance(100)
    assert abs(clock.now() - (wall[0] + 100)) < 1
    clock.set(5)
    first = clock.now()
    wall[0] += 0.01
    assert 5 <= first < clock.now() < 6  # set, then time flows on
    clock.freeze()
    frozen = clock.now()
    wall[0] += 0.01
    assert clock.now() == frozen
    assert "manual" in repr(clock)


# -- faults over the wire -------------------------------------------------------------------


def test_drop_closes_the_connection_without_a_reply(
    gateway: MockGateway, http: httpx.Client
) -> None:
    gateway.faults.drop()
    with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
        http.post("/chat/completions", json=BODY)
    assert gateway.charges == []
    gateway.faults.drop(after_processing=True)
    with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
        http.post("/chat/completions", json=BODY)
    assert len(gateway.charges) == 1  # performed and charged; only the reply was lost
    assert http.post("/chat/completions", json=BODY).status_code == 200  # the server lives on


def test_drop_mid_stream_cuts_the_chunked_body_after_n_events(
    gateway: MockGateway, http: httpx.Client
) -> None:
    gateway.faults.drop_mid_stream(after_events=2)
    lines: list[str] = []
    with (
        http.stream("POST", "/chat/completions", json={**BODY, "stream": True}) as response,
        pytest.raises(httpx.RemoteProtocolError, match="incomplete chunked read"),
    ):
        lines.extend(line for line in response.iter_lines() if line)
    assert response.status_code == 200
    assert len(lines) == 2
    assert all(line.startswith("data: {") for line in lines)
    wait_until(lambda: gateway.rate_limits.in_flight(gateway.api_key) == 0)


def test_latency_is_a_real_delay_and_past_the_read_timeout_a_timeout(
    gateway: MockGateway, http: httpx.Client
) -> None:
    gateway.faults.latency(LATENCY, times=1)
    start = time.monotonic()
    assert http.post("/chat/completions", json=BODY).status_code == 200
    assert time.monotonic() - start >= LATENCY
    gateway.faults.latency(4 * LATENCY, times=1)
    with pytest.raises(httpx.ReadTimeout):
        http.post("/chat/completions", json=BODY, timeout=LATENCY)


def test_latency_between_chunks_delays_every_event(
    gateway: MockGateway, http: httpx.Client
) -> None:
    gateway.faults.latency(LATENCY / 5, between_chunks=True, times=1)
    arrivals: list[float] = []
    with http.stream("POST", "/chat/completions", json={**BODY, "stream": True}) as response:
        start = time.monotonic()
        for line in response.iter_lines():
            if line:
                arrivals.append(time.monotonic() - start)
    assert len(arrivals) >= 4
    assert arrivals[-1] >= (len(arrivals) - 1) * LATENCY / 5
    assert http.post("/chat/completions", json={**BODY, "stream": True}).status_code == 200


def test_truncate_and_malformed_as_in_process(gateway: MockGateway, http: httpx.Client) -> None:
    gateway.faults.truncate(times=2)
    cut = http.post("/chat/completions", json=BODY)
    assert cut.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        cut.json()
    cut_stream = http.post("/chat/completions", json={**BODY, "stream": True}).text
    assert "[DONE]" not in cut_stream
    assert not cut_stream.endswith("\n\n")
    gateway.faults.malformed()
    page = http.post("/chat/completions", json=BODY)
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html"
    assert page.text.startswith("<html>")


@pytest.mark.parametrize("status", [408, 409, 500, 503])
def test_failures_carry_their_status_and_headers(
    gateway: MockGateway, http: httpx.Client, status: int
) -> None:
    gateway.faults.fail(status, retry_after=3)
    reply = http.post("/chat/completions", json=BODY)
    assert reply.status_code == status
    assert reply.headers["retry-after"] == "3"
    assert reply.json()["error"]["code"]
    assert gateway.charges == []


def test_an_injected_429_resets_in_real_time(gateway: MockGateway, http: httpx.Client) -> None:
    gateway.faults.fail(429, retry_after=7)
    reply = http.get("/models")
    assert reply.status_code == 429
    assert reply.headers["retry-after"] == "7"
    assert reply.headers["x-ratelimit-remaining"] == "0"
    assert abs(int(reply.headers["x-ratelimit-reset"]) - (time.time() + 7)) <= 2


# -- our clients against the served mock -----------------------------------------------------


def test_client_sees_each_fault_as_in_process(gateway: MockGateway, url: str) -> None:
    waits = Waits()
    with Client(api_key=gateway.api_key, base_url=url, retry_policy=waits.policy()) as client:
        gateway.faults.drop()
        with pytest.raises(APIConnectionError):
            client.chat.completions.create(**BODY, max_retries=0)
        gateway.faults.drop(after_processing=True)
        reply = client.chat.completions.with_raw_response.create(
            **BODY, idempotency_key="op-1", max_retries=1
        )
        assert reply.headers["idempotent-replayed"] == "true"
        assert len(gateway.charges) == 1
        gateway.faults.drop_mid_stream(after_events=2)
        with pytest.raises(IncompleteStreamError) as cut:
            list(client.chat.completions.create(**BODY, stream=True, max_retries=0))
        assert len(cut.value.chunks) == 2
        gateway.faults.fail(503, retry_after=2)
        assert client.chat.completions.create(**BODY, max_retries=1).text
        assert waits[-1] == 2
        gateway.faults.fail(503)
        with pytest.raises(ServiceUnavailableError):
            client.chat.completions.create(**BODY, max_retries=0)
        gateway.faults.latency(LATENCY, times=1)
        start = time.monotonic()
        client.chat.completions.create(**BODY)
        assert time.monotonic() - start >= LATENCY
        gateway.faults.latency(4 * LATENCY, times=1)
        with pytest.raises(APITimeoutError):
            client.chat.completions.create(**BODY, timeout=LATENCY, max_retries=0)


@pytest.mark.anyio
async def test_async_client_sees_each_fault_as_in_process(gateway: MockGateway, url: str) -> None:
    waits = Waits()
    client = AsyncClient(api_key=gateway.api_key, base_url=url, retry_policy=waits.policy())
    async with client:
        gateway.faults.drop()
        with pytest.raises(APIConnectionError):
            await client.chat.completions.create(**BODY, max_retries=0)
        gateway.faults.drop()
        assert (await client.chat.completions.create(**BODY, max_retries=1)).text
        gateway.faults.drop_mid_stream(after_events=3)
        chunks: list[Any] = []
        stream = await client.chat.completions.create(**BODY, stream=True, max_retries=0)
        with pytest.raises(IncompleteStreamError):
            await collect(stream, chunks)
        assert len(chunks) == 3
        gateway.faults.latency(LATENCY, between_chunks=True, times=1)
        start = time.monotonic()
        stream = await client.chat.completions.create(**BODY, stream=True)
        received = [chunk async for chunk in stream]
        assert time.monotonic() - start >= len(received) * LATENCY
        gateway.faults.latency(4 * LATENCY, times=1)
        with pytest.raises(APITimeoutError):
            await client.chat.completions.create(**BODY, timeout=LATENCY, max_retries=0)


async def collect(stream: Any, into: list[Any]) -> None:
    async for chunk in stream:
        into.append(chunk)


# -- clients that leave early ----------------------------------------------------------------


def test_clients_leaving_streams_early_leave_no_noise_and_no_slot(
    gateway: MockGateway, url: str
) -> None:
    body = {"model": "gpt-4o", "messages": user(), "stream": True}
    headers = {"Authorization": f"Bearer {gateway.api_key}"}
    with httpx.Client(base_url=url, headers=headers) as http:
        for _ in range(30):
            with http.stream("POST", "/chat/completions", json=body) as response:
                next(response.iter_raw())
    with Client(api_key=gateway.api_key, base_url=url) as client:
        for _ in range(30):
            with client.chat.completions.create(**body) as stream:
                next(iter(stream))
    wait_until(lambda: gateway.rate_limits.in_flight(gateway.api_key) == 0)


def test_leaving_a_paced_stream_frees_its_concurrency_slot_at_once(
    server_log: list[str],
) -> None:
    gateway = MockGateway(rate_limits="free_plan", token_delay=0.2)  # 2 concurrent requests
    body = {"model": "gpt-4o", "messages": user(), "stream": True}
    headers = {"Authorization": f"Bearer {gateway.api_key}"}
    start = time.monotonic()
    with gateway.serve() as url, httpx.Client(base_url=url, headers=headers) as http:
        for _ in range(4):
            with http.stream("POST", "/chat/completions", json=body) as response:
                assert response.status_code == 200
                next(response.iter_raw())
            wait_until(lambda: gateway.rate_limits.in_flight(gateway.api_key) == 0)
    assert time.monotonic() - start < 2  # a whole paced stream would take longer


def test_websocket_drop_closes_with_a_reason(gateway: MockGateway, url: str) -> None:
    ws_client = pytest.importorskip("websockets.sync.client")
    gateway.faults.drop()
    ws_url = url.replace("http://", "ws://") + "/stream"
    with ws_client.connect(ws_url, subprotocols=["Authorization", gateway.api_key]) as ws:
        ws.send(json.dumps({"model": "gpt-4o", "messages": user()}))
        with pytest.raises(Exception, match="1011"):
            ws.recv()
    assert gateway.charges == []


def test_a_served_stream_still_ends_with_done(gateway: MockGateway, http: httpx.Client) -> None:
    events = parse_sse(http.post("/chat/completions", json={**BODY, "stream": True}).content)
    assert events[-1] == "[DONE]"


def test_small_replies_are_not_held_back(gateway: MockGateway, http: httpx.Client) -> None:
    http.get("/models")
    start = time.monotonic()
    for _ in range(20):
        http.get("/models")
    # a listening socket not marked as TCP would leave Nagle's algorithm on: ~40 ms a reply
    assert time.monotonic() - start < 0.4


def test_a_malformed_chunk_reaches_our_client_as_a_typed_error_in_process_and_served() -> None:
    gateway = MockGateway()
    gateway.faults.malformed_chunk(after_events=2, times=2)
    with gateway.client() as client, pytest.raises(APIResponseValidationError) as caught:
        for _ in client.chat.completions.create(model="gpt-4o", messages=user(), stream=True):
            pass
    assert b"chatcmpl-broken" in caught.value.body
    with gateway.serve() as url, Client(api_key=gateway.api_key, base_url=url) as served:
        stream = served.chat.completions.create(model="gpt-4o", messages=user(), stream=True)
        with stream, pytest.raises(APIResponseValidationError):
            list(stream)
        assert stream.received == 2
