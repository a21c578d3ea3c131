"""What the client-side reliability tests at the wire (respx) share: canned replies, the
``gateway`` router, the ``policy`` (recorded sleeps, no jitter, clock fixed at NOW), the
``reliable`` client, and streamed reply bodies that can lose their connection.

Test modules import the fixtures under their function names (``*_fixture``); pytest knows them
by ``name``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import respx

from aigateway import AsyncClient, Client, RetryPolicy

from ..conftest import BASE_URL, Sleeps, resolve

NOW = 1_800_000_000.0
USER = [{"role": "user", "content": "Hello"}]
OK = {
    "id": "chatcmpl-1",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}],
}
FAIL = {"error": {"message": "boom", "type": "server_error", "code": "server_error"}}


def failing(status: int, code: str = "x", **headers: str) -> respx.MockResponse:
    body = {"error": {"message": "no", "type": "t", "code": code}}
    return respx.MockResponse(status, json=body, headers=headers)


@pytest.fixture(name="gateway")
def gateway_fixture() -> Iterator[respx.Router]:
    with respx.mock(base_url=BASE_URL, assert_all_called=False) as router:
        yield router


@pytest.fixture(name="policy")
def policy_fixture(sleeps: Sleeps) -> RetryPolicy:
    """Recorded sleeps, no jitter (random 0.5), and a fixed clock at NOW."""
    return sleeps.policy().with_changes(now=lambda: NOW)


@pytest.fixture(name="reliable")
def reliable_fixture(client: Client | AsyncClient, policy: RetryPolicy) -> Client | AsyncClient:
    return client.with_options(retry_policy=policy)


def create(client: Client | AsyncClient, **options: Any) -> Any:
    return resolve(client.chat.completions.create(model="m", messages=USER, **options))


CHUNK = (
    b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}\n\n'
)
LAST = (
    b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
)


class Body(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A reply body that yields ``chunks`` and then, when ``drop``, loses the connection."""

    def __init__(self, *chunks: bytes, drop: bool = False) -> None:
        self.chunks = chunks
        self.drop = drop

    def __iter__(self) -> Iterator[bytes]:
        yield from self.chunks
        if self.drop:
            raise httpx.ReadError("connection dropped")

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk
        if self.drop:
            raise httpx.ReadError("connection dropped")


def sse(body: Body) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=body)


async def consume(stream: Any, into: list[Any] | None = None) -> list[Any]:
    """Every chunk of a sync or async stream, appended to ``into`` as they arrive."""
    received = [] if into is None else into
    if hasattr(stream, "__aiter__"):
        async for chunk in stream:
            received.append(chunk)
    else:
        received.extend(stream)
    return received
