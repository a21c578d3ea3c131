"""Opening a WebSocket like every call: a line on the ``aigateway`` logger per attempt, the
attempts counted on the error, and an async socket on trio refused plainly before sending."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from aigateway import (
    APIConnectionError,
    APIError,
    AsyncClient,
    Client,
    RetryPolicy,
    ServiceUnavailableError,
)
from aigateway.testing import MockGateway

from .._local_servers import running
from ..conftest import API_KEY, in_process_client, resolve

pytest.importorskip("websockets")
pytestmark = pytest.mark.anyio
HELLO = [{"role": "user", "content": "hi"}]


async def socket_chunks(client: Client | AsyncClient) -> list[Any]:
    opened = await resolve(client.chat.completions.connect(model="gpt-4o", messages=HELLO))
    if isinstance(client, Client):
        with opened:
            return list(opened)
    async with opened:
        return [chunk async for chunk in opened]


def aigateway_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == "aigateway"]


async def test_a_socket_logs_its_handshake_like_a_call(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    gateway = MockGateway()
    with caplog.at_level(logging.DEBUG, logger="aigateway"):
        async with in_process_client(kind, gateway, max_retries=0) as client:
            chunks = await socket_chunks(client)
    assert chunks
    assert aigateway_lines(caplog) == ["GET /v1/stream -> 101 (attempt 1)"]


async def test_a_socket_counts_its_attempts(kind: str, caplog: pytest.LogCaptureFixture) -> None:
    gateway = MockGateway()
    gateway.faults.fail(503, times=3)  # an error frame after each handshake
    with caplog.at_level(logging.DEBUG, logger="aigateway"):
        async with in_process_client(kind, gateway, max_retries=2) as client:
            with pytest.raises(ServiceUnavailableError) as caught:
                await socket_chunks(client)
    assert caught.value.attempts == 3
    assert "attempts=3" in str(caught.value)
    lines = aigateway_lines(caplog)
    assert [line for line in lines if "->" in line] == [
        f"GET /v1/stream -> 101 (attempt {n})" for n in (1, 2, 3)
    ]


@pytest.fixture
def refusing_port() -> Iterator[int]:
    """A loopback port where nothing listens (bound, never listening: connections are refused)."""
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        yield unused.getsockname()[1]


def test_a_refused_connection_is_logged_and_counted(
    refusing_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    sleeps: list[float] = []
    policy = RetryPolicy(sleep=sleeps.append, random=lambda: 0.5)
    url = f"http://127.0.0.1:{refusing_port}/v1"
    with (
        caplog.at_level(logging.DEBUG, logger="aigateway"),
        Client(api_key=API_KEY, base_url=url, retry_policy=policy, max_retries=2) as client,
        pytest.raises(APIConnectionError, match="could not open the WebSocket") as caught,
    ):
        client.chat.completions.connect(model="gpt-4o", messages=HELLO)
    assert caught.value.attempts == 3  # type: ignore[attr-defined]
    assert sleeps == [1.0, 2.0]
    assert [line for line in aigateway_lines(caplog) if "->" in line] == [
        f"GET /v1/stream -> APIConnectionError (attempt {n})" for n in (1, 2, 3)
    ]


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[MockGateway, str]]:
    gateway = MockGateway(seed=4)
    with gateway.serve() as url:
        yield gateway, url


@pytest.fixture
def listening() -> Iterator[socket.socket]:
    """A loopback server socket nobody accepts on: a connection attempt would wait in it."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.setblocking(False)
        yield server


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_async_connect_on_trio_says_it_needs_asyncio_and_sends_nothing(
    listening: socket.socket,
) -> None:
    url = f"http://127.0.0.1:{listening.getsockname()[1]}/v1"
    async with AsyncClient(api_key=API_KEY, base_url=url, max_retries=2) as client:
        with pytest.raises(APIError, match="needs asyncio") as caught:
            await client.chat.completions.connect(model="gpt-4o", messages=HELLO)
    assert not isinstance(caught.value, APIConnectionError)  # not retried, not misleading
    assert "create(stream=True)" in str(caught.value)
    with pytest.raises(BlockingIOError):
        listening.accept()  # no connection was ever made


async def test_async_connect_works_on_asyncio_and_in_process_on_trio(
    anyio_backend: str, served: tuple[MockGateway, str]
) -> None:
    gateway, url = served
    if anyio_backend == "asyncio":
        async with AsyncClient(api_key=gateway.api_key, base_url=url, max_retries=0) as client:
            assert await socket_chunks(client)
    async with in_process_client("async", MockGateway(), max_retries=0) as mock_client:
        assert await socket_chunks(mock_client)  # no websockets library: any event loop


@pytest.fixture
def busy_server() -> Iterator[str]:
    """A WebSocket server that refuses every handshake with 503."""
    sync_server = pytest.importorskip("websockets.sync.server")

    def process_request(connection: Any, request: Any) -> Any:
        return connection.respond(503, "busy\n")

    server = sync_server.serve(
        lambda connection: None, "127.0.0.1", 0, process_request=process_request
    )
    with running(server):
        yield f"http://127.0.0.1:{server.socket.getsockname()[1]}/v1"


def test_a_refused_handshake_is_logged_and_counted(
    busy_server: str, caplog: pytest.LogCaptureFixture
) -> None:
    policy = RetryPolicy(sleep=lambda seconds: None)
    with (
        caplog.at_level(logging.DEBUG, logger="aigateway"),
        Client(api_key=API_KEY, base_url=busy_server, retry_policy=policy, max_retries=1) as c,
        pytest.raises(ServiceUnavailableError) as caught,
    ):
        c.chat.completions.connect(model="gpt-4o", messages=HELLO)
    assert caught.value.attempts == 2
    assert [line for line in aigateway_lines(caplog) if "->" in line] == [
        f"GET /v1/stream -> 503 (attempt {n})" for n in (1, 2)
    ]
