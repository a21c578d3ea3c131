"""The one request path as users meet it: stream timeouts, streams opened the usual ways,
unread replies, sockets retried like calls, the key in no log line, the plain-http warning."""

from __future__ import annotations

import ast
import logging
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import aigateway
from aigateway import (
    AsyncClient,
    Client,
    InsecureBaseURLWarning,
    NotFoundError,
    RateLimitInfo,
    RetryPolicy,
    StreamTimeoutError,
)
from aigateway._call.timeouts import StreamTimer
from aigateway._pipeline.limits import RateLimiter
from aigateway.testing import MockGateway

from .._stack import http
from ..conftest import API_KEY, BASE_URL, resolve

pytestmark = pytest.mark.anyio

HELLO = [{"role": "user", "content": "hello"}]


def mock_client(gateway: MockGateway, kind: str, **options: Any) -> Client | AsyncClient:
    return gateway.client(**options) if kind == "sync" else gateway.async_client(**options)


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def read_stream(client: Client | AsyncClient, **params: Any) -> list[Any]:
    stream = await resolve(client.chat.completions.create(stream=True, **params))
    if isinstance(client, Client):
        with stream:
            return list(stream)
    async with stream:
        return [chunk async for chunk in stream]


async def close(client: Client | AsyncClient) -> None:
    await resolve(client.close())


# -- the first-event timeout --------------------------------------------------------------


async def test_a_late_first_event_fails_the_attempt_and_is_retried_in_process(kind: str) -> None:
    gateway = MockGateway()
    gateway.faults.latency(5.0, times=1, path="/chat/completions")  # 5 s of mock time
    client = mock_client(gateway, kind, stream_first_event_timeout=2)
    try:
        raw = await resolve(
            client.chat.completions.with_raw_response.create(
                model="gpt-4o", messages=HELLO, stream=True
            )
        )
        stream = raw.parse()
        chunks = [c async for c in stream] if isinstance(client, AsyncClient) else list(stream)
    finally:
        await close(client)
    assert raw.attempts == 2  # the late first attempt was retried: nothing had reached us
    assert chunks
    assert len(gateway.requests) == 2


async def test_a_first_event_always_late_raises_a_stream_timeout(kind: str) -> None:
    gateway = MockGateway()
    gateway.faults.latency(5.0, path="/chat/completions")
    client = mock_client(gateway, kind, stream_first_event_timeout=2, max_retries=1)
    try:
        with pytest.raises(StreamTimeoutError, match="stream_first_event_timeout") as caught:
            await read_stream(client, model="gpt-4o", messages=HELLO)
    finally:
        await close(client)
    assert caught.value.received == 0
    assert len(gateway.requests) == 2


async def test_the_first_event_timeout_is_a_per_call_option_too(kind: str) -> None:
    gateway = MockGateway()
    gateway.faults.latency(5.0, path="/chat/completions")
    client = mock_client(gateway, kind, max_retries=0)
    try:
        assert await read_stream(client, model="gpt-4o", messages=HELLO)  # 300 s by default
        with pytest.raises(StreamTimeoutError, match="no first event for more than 4 s"):
            await read_stream(client, model="gpt-4o", messages=HELLO, stream_first_event_timeout=4)
    finally:
        await close(client)


async def test_a_paced_stream_slower_than_the_idle_limit_times_out_in_process(kind: str) -> None:
    from aigateway.testing._core.pacing import StreamPacing

    waited: list[float] = []

    async def async_wait(seconds: float) -> None:
        waited.append(seconds)

    gateway = MockGateway()
    gateway.stream_pacing = StreamPacing(0.0, 5.0, sleep=waited.append, async_sleep=async_wait)
    client = mock_client(gateway, kind, stream_idle_timeout=2)
    start = gateway.clock.now()
    try:
        with pytest.raises(StreamTimeoutError, match="stalled") as caught:
            await read_stream(client, model="gpt-4o", messages=HELLO)
    finally:
        await close(client)
    assert caught.value.received >= 1  # the first chunk came at once, the second too late
    assert waited == [2.0]  # the wait a socket would have made: the idle limit, not 5 s
    assert gateway.clock.now() - start == pytest.approx(2.0)


@pytest.fixture(scope="module")
def slow_server() -> Iterator[tuple[str, str]]:
    """The URL of a served mock whose streams start late, and its key."""
    gateway = MockGateway(time_to_first_token=0.3)
    with gateway.serve() as url:
        yield url, gateway.api_key


async def test_a_late_first_event_over_a_socket(kind: str, slow_server: tuple[str, str]) -> None:
    url, key = slow_server
    options: dict[str, Any] = {"api_key": key, "base_url": url}
    client: Client | AsyncClient = (
        Client(**options, max_retries=0)
        if kind == "sync"
        else AsyncClient(**options, max_retries=0)
    )
    try:
        with pytest.raises(StreamTimeoutError, match="stream_first_event_timeout"):
            await read_stream(
                client, model="gpt-4o", messages=HELLO, stream_first_event_timeout=0.1
            )
        assert await read_stream(client, model="gpt-4o", messages=HELLO)
    finally:
        await close(client)


def test_an_event_arriving_after_the_idle_limit_trips_it() -> None:
    now = [0.0]
    timer = StreamTimer(3.0, None, lambda: now[0])
    now[0] = 1.0
    assert timer.overdue(progressed=True) is None
    now[0] = 5.0  # four seconds after the last event, and an event arrives
    assert "stream_idle_timeout" in (timer.overdue(progressed=True) or "")


# -- opening streams as the official SDKs do ----------------------------------------------


async def test_async_with_stream_works_with_and_without_await() -> None:
    gateway = MockGateway(seed=3)
    async with gateway.async_client() as client:
        async with client.chat.completions.stream(model="gpt-4o", messages=HELLO) as stream:
            first = await stream.get_final_completion()
        async with await client.chat.completions.stream(model="gpt-4o", messages=HELLO) as s:
            second = await s.get_final_completion()
        opened = await client.chat.completions.stream(model="gpt-4o", messages=HELLO)
        third = await opened.get_final_completion()
    assert [bool(c.text) for c in (first, second, third)] == [True, True, True]
    assert len(gateway.requests) == 3


async def test_a_stream_never_entered_sends_nothing() -> None:
    gateway = MockGateway()
    async with gateway.async_client() as client:
        client.chat.completions.stream(model="gpt-4o", messages=HELLO)
    assert gateway.requests == []


async def test_with_streaming_response_gives_the_reply_unread(kind: str) -> None:
    gateway = MockGateway(seed=5)
    client = mock_client(gateway, kind)
    try:
        opened = await resolve(
            client.chat.completions.with_streaming_response.create(
                model="gpt-4o", messages=HELLO, stream=True
            )
        )
        assert opened.status_code == 200
        assert opened.headers["content-type"].startswith("text/event-stream")
        assert not opened.http_response.is_stream_consumed
        if isinstance(client, Client):
            with opened:
                lines = list(opened.iter_lines())
        else:
            async with opened:
                lines = [line async for line in opened.iter_lines()]
        assert "data: [DONE]" in lines
        plain = await resolve(
            client.chat.completions.with_streaming_response.create(model="gpt-4o", messages=HELLO)
        )
        completion = await resolve(plain.parse())
        assert completion.text
        with pytest.raises(NotFoundError):
            await resolve(
                client.chat.completions.with_streaming_response.create(
                    model="no-such-model", messages=HELLO
                )
            )
    finally:
        await close(client)


# -- WebSocket connect goes through the same retries ---------------------------------------


@pytest.fixture
def flaky_socket_server() -> Iterator[tuple[str, list[str]]]:
    """A WebSocket server that refuses the first handshake with 503, then streams one chunk."""
    sync_server = pytest.importorskip("websockets.sync.server")
    handshakes: list[str] = []

    def process_request(connection: Any, request: Any) -> Any:
        handshakes.append(request.path)
        if len(handshakes) == 1:
            return connection.respond(503, "busy, try again\n")
        return None

    def handler(connection: Any) -> None:
        connection.recv()
        chunk = (
            '{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o",'
            '"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}'
        )
        connection.send(chunk)
        connection.send('{"object": "chat.completion.done"}')

    server = sync_server.serve(handler, "127.0.0.1", 0, process_request=process_request)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.socket.getsockname()[1]}/v1", handshakes
    finally:
        server.shutdown()
        thread.join(5)


def test_a_socket_refused_with_503_is_retried(flaky_socket_server: tuple[str, list[str]]) -> None:
    url, handshakes = flaky_socket_server
    sleeps: list[float] = []
    policy = RetryPolicy(sleep=sleeps.append, random=lambda: 0.5)
    with (
        Client(api_key=API_KEY, base_url=url, retry_policy=policy) as client,
        client.chat.completions.connect(model="gpt-4o", messages=HELLO) as socket,
    ):
        chunks = list(socket)
    assert [c.choices[0].delta.content for c in chunks] == ["hi"]
    assert handshakes == ["/v1/stream", "/v1/stream"]
    assert sleeps == [1.0]


# -- the key in no log line ------------------------------------------------------------------


def test_the_key_is_in_no_log_line_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    pytest.importorskip("websockets")
    gateway = MockGateway(seed=2)
    key = gateway.api_key
    with caplog.at_level(logging.DEBUG), gateway.serve() as url:
        for name in ("aigateway", "httpx", "httpcore", "websockets", "websockets.client"):
            logging.getLogger(name).setLevel(logging.DEBUG)
        with Client(api_key=key, base_url=url, max_retries=1) as client:
            client.chat.completions.create(model="gpt-4o", messages=HELLO)
            with client.chat.completions.stream(model="gpt-4o", messages=HELLO) as stream:
                stream.until_done()
            with client.chat.completions.connect(model="gpt-4o", messages=HELLO) as socket:
                list(socket)
            with pytest.raises(NotFoundError):
                client.models.retrieve("no-such-model")
    lines = [record.getMessage() for record in caplog.records]
    assert any(record.name.startswith("websockets") for record in caplog.records)
    assert any(record.name.startswith("httpcore") for record in caplog.records)
    assert not [line for line in lines if key in line]
    assert key not in caplog.text


# -- plain http to the network warns once ---------------------------------------------------


def test_plain_http_to_a_network_host_warns_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import aigateway._call.settings as config

    monkeypatch.setattr(config, "_warned_hosts", set())
    with pytest.warns(InsecureBaseURLWarning, match="unencrypted"):
        Client(api_key=API_KEY, base_url="http://gateway.example.com/v1").close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Client(api_key=API_KEY, base_url="http://gateway.example.com/v1").close()  # once
        for quiet in (
            "https://gateway.example.com/v1",
            "http://localhost:8000/v1",
            "http://127.0.0.1:8000/v1",
            "http://[::1]:8000/v1",
            BASE_URL,
        ):
            Client(api_key=API_KEY, base_url=quiet).close()


# -- the client-side limiter reads resets like the retry waits do ---------------------------


@pytest.mark.parametrize(
    ("reset", "wait"),
    [(12, 12.0), (1_700_000_030, 30.0), (1_700_000_030_000, 30.0)],
    ids=["delta seconds", "unix seconds", "unix milliseconds"],
)
def test_the_limiter_reads_a_reset_by_its_magnitude(reset: int, wait: float) -> None:
    now = 1_700_000_000.0
    limiter = RateLimiter()
    limiter.observe(RateLimitInfo(limit=60, remaining=0, reset=reset), now)
    assert limiter.reserve(now) == pytest.approx(wait)


# -- the layout the request path relies on --------------------------------------------------


def test_types_import_nothing_of_the_client_side() -> None:
    types_dir = Path(aigateway.__file__).parent / "types"
    for source in types_dir.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert node.module.lstrip(".") not in {"_http", "_client"}, source.name


def test_a_with_options_copy_builds_its_own_resources() -> None:
    gateway = MockGateway()
    gateway.faults.fail(503, times=1)
    with gateway.client() as client:
        patient = client.chat.completions  # built before the copy
        hasty = client.with_options(max_retries=0)
        with pytest.raises(aigateway.ServiceUnavailableError):
            hasty.chat.completions.create(model="gpt-4o", messages=HELLO)
        gateway.faults.fail(503, times=1)
        assert patient.create(model="gpt-4o", messages=HELLO).text
    assert isinstance(hasty._pipeline.http_client, http.Client)


# -- WebSocket connect() against the in-process mock ---------------------------------------


async def test_connect_works_against_the_in_process_mock(kind: str) -> None:
    gateway = MockGateway(seed=4)
    client = mock_client(gateway, kind)
    try:
        socket = await resolve(client.chat.completions.connect(model="gpt-4o", messages=HELLO))
        if isinstance(client, Client):
            with socket:
                chunks = list(socket)
        else:
            async with socket:
                chunks = [chunk async for chunk in socket]
        text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks)
        plain = await resolve(client.chat.completions.create(model="gpt-4o", messages=HELLO))
        assert text == plain.text  # the same seeded reply over either endpoint
        assert client.remaining_credits == pytest.approx(gateway.credits())
        with pytest.raises(NotFoundError, match="no-such-model"):  # the error frame comes first
            await resolve(client.chat.completions.connect(model="no-such-model", messages=HELLO))
    finally:
        await close(client)
    assert len(gateway.charges) == 2


async def test_connect_in_process_with_a_wrong_key_is_an_authentication_error(kind: str) -> None:
    gateway = MockGateway()
    client = mock_client(gateway, kind, api_key="sk-wrong", max_retries=0)
    try:
        with pytest.raises(aigateway.AuthenticationError):
            await resolve(client.chat.completions.connect(model="gpt-4o", messages=HELLO))
    finally:
        await close(client)
