"""Shared fixtures: every client test runs against both `Client` and `AsyncClient`."""

from __future__ import annotations

import contextlib
import inspect
import os
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from aigateway import AsyncClient, Client, RetryPolicy
from aigateway.testing import MockGateway

from .redis_server import RedisServer
from .transports import use_test_transport

use_test_transport(os.environ.get("AIGATEWAY_TEST_TRANSPORT"))

BASE_URL = "http://gateway.test/v1"
API_KEY = "sk-test-5ecret-KEY"


CHAT_REPLY = {
    "id": "c",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
    ],
}
"""A minimal whole chat completion, as a gateway sends it."""


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    """``"sync"`` or ``"async"``: a test that builds its own client runs with each."""
    return str(request.param)


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Async tests run on asyncio and on trio: the client must not assume an event loop."""
    return request.param


async def resolve(value: Any) -> Any:
    """The result of a client call, awaited when the client is async."""
    return await value if inspect.isawaitable(value) else value


class Sleeps(list[float]):
    """Records retry waits instead of sleeping."""

    def sleep(self, seconds: float) -> None:
        self.append(seconds)

    async def async_sleep(self, seconds: float) -> None:
        self.append(seconds)

    def policy(self) -> RetryPolicy:
        return RetryPolicy(sleep=self.sleep, async_sleep=self.async_sleep, random=lambda: 0.5)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture(params=["sync", "async"])
async def client(
    request: pytest.FixtureRequest, sleeps: Sleeps
) -> AsyncIterator[Client | AsyncClient]:
    """A client of each kind on BASE_URL (mock it with respx), retries recorded, not slept."""
    if request.param == "sync":
        with Client(
            api_key=API_KEY, base_url=BASE_URL, retry_policy=sleeps.policy()
        ) as sync_client:
            yield sync_client
    else:
        async with AsyncClient(
            api_key=API_KEY, base_url=BASE_URL, retry_policy=sleeps.policy()
        ) as async_client:
            yield async_client


@pytest.fixture
def gateway() -> MockGateway:
    """A fresh mock gateway (20 credits, seed 3)."""
    return MockGateway(seed=3)


@contextlib.asynccontextmanager
async def in_process_client(
    kind: str, gateway: MockGateway, **options: Any
) -> AsyncIterator[Client | AsyncClient]:
    """A ``"sync"`` or ``"async"`` client wired to ``gateway`` in-process, closed afterwards."""
    if kind == "sync":
        with gateway.client(**options) as client:
            yield client
    else:
        async with gateway.async_client(**options) as async_client:
            yield async_client


@pytest.fixture(params=["sync", "async"])
async def mock_client(
    request: pytest.FixtureRequest, gateway: MockGateway
) -> AsyncIterator[Client | AsyncClient]:
    """A client of each kind wired to ``gateway`` in-process, without retries."""
    async with in_process_client(request.param, gateway, max_retries=0) as client:
        yield client


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """A real redis-server on a free loopback port, for the whole run (see redis_server.py)."""
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """The URL of the shared redis-server, emptied for this test."""
    redis_server.flush()
    return redis_server.url
