"""Fixtures of the smoke suite: a client of each kind on a stand-in gateway.

The suite needs aigateway (installed, with any set of extras) and pytest, nothing else: the
async tests run on anyio's pytest plugin (anyio is a dependency of aigateway), on asyncio, and
on trio too where it is installed.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from aigateway import AsyncClient, Client, RetryPolicy

from ._gateway import StubGateway

KEY = "sk-smoke-5ecret-KEY"
USER = {"role": "user", "content": "Hi"}


@pytest.fixture(params=["asyncio", "trio"] if importlib.util.find_spec("trio") else ["asyncio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    """``"sync"`` (`Client`) or ``"async"`` (`AsyncClient`)."""
    return str(request.param)


@pytest.fixture
def stub() -> Iterator[StubGateway]:
    with StubGateway() as gateway:
        yield gateway


class Sleeps(list[float]):
    """The retry waits, recorded instead of slept."""

    def policy(self) -> RetryPolicy:
        async def async_sleep(seconds: float) -> None:
            self.append(seconds)

        return RetryPolicy(sleep=self.append, async_sleep=async_sleep, random=lambda: 0.5)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@contextlib.asynccontextmanager
async def opened(kind: str, **options: Any) -> AsyncIterator[Client | AsyncClient]:
    """A `Client` (``kind="sync"``) or `AsyncClient` made with ``options``, closed afterwards."""
    if kind == "sync":
        with Client(**options) as sync_client:
            yield sync_client
    else:
        async with AsyncClient(**options) as async_client:
            yield async_client


@pytest.fixture
async def client(
    kind: str, stub: StubGateway, sleeps: Sleeps
) -> AsyncIterator[Client | AsyncClient]:
    """A client of ``kind`` on the stand-in gateway, its retry waits recorded."""
    options = {"retry_policy": sleeps.policy(), "timeout": 10}
    async with opened(kind, api_key=KEY, base_url=stub.base_url, **options) as made:
        yield made


async def resolve(value: Any) -> Any:
    """A call's result, awaited when the client is async."""
    return await value if inspect.isawaitable(value) else value


async def read_all(stream: Any) -> list[Any]:
    """Every item of a sync or async stream, closed afterwards."""
    if hasattr(stream, "__aiter__"):
        async with stream:
            return [item async for item in stream]
    with stream:
        return list(stream)


def closed_port() -> int:
    """A loopback port nobody listens on (bound for a moment, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
