"""``chat.completions.connect``: the WebSocket endpoint, against the served mock."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from aigateway import AsyncClient, AuthenticationError, Client, NotFoundError, StreamTimeoutError
from aigateway._streams.handshake import handshake, websocket_url
from aigateway.testing import MockGateway

from ..conftest import resolve

pytest.importorskip("websockets")
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    """The async WebSocket client runs on asyncio only (the websockets library's), not trio."""
    return "asyncio"


HELLO = [{"role": "user", "content": "Hello over a socket"}]


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[MockGateway, str]]:
    gateway = MockGateway(seed=8)
    with gateway.serve() as url:
        yield gateway, url


@pytest.fixture(params=["sync", "async"])
async def ws_client(
    request: pytest.FixtureRequest, served: tuple[MockGateway, str]
) -> AsyncIterator[Client | AsyncClient]:
    gateway, url = served
    key = gateway.create_account().key
    if request.param == "sync":
        with Client(api_key=key, base_url=url, max_retries=0) as client:
            yield client
    else:
        async with AsyncClient(api_key=key, base_url=url, max_retries=0) as async_client:
            yield async_client


async def socket_chunks(client: Client | AsyncClient, **params: Any) -> list[Any]:
    socket = await resolve(client.chat.completions.connect(**params))
    if isinstance(client, Client):
        with socket:
            return list(socket)
    async with socket:
        return [chunk async for chunk in socket]


async def test_connect_yields_the_same_chunks_as_sse(ws_client: Client | AsyncClient) -> None:
    params: dict[str, Any] = {"model": "gpt-4o", "messages": HELLO, "seed": 2}
    sse = await resolve(ws_client.chat.completions.create(**params, stream=True))
    expected = list(sse) if isinstance(ws_client, Client) else [c async for c in sse]
    chunks = await socket_chunks(ws_client, **params)
    assert [c.choices for c in chunks] == [c.choices for c in expected]
    assert type(chunks[0]).__name__ == "ChatCompletionChunk"
    assert chunks[-1].remaining_credits is not None
    assert ws_client.remaining_credits == chunks[-1].remaining_credits


async def test_an_error_frame_raises_the_matching_error(ws_client: Client | AsyncClient) -> None:
    with pytest.raises(NotFoundError, match="gpt-4o") as caught:
        await socket_chunks(ws_client, model="gpt-4o-mni", messages=HELLO)
    assert caught.value.status_code == 404
    assert caught.value.code == "model_not_found"


@pytest.mark.parametrize("key", ["sk-wrong", "c2std3Jvbmc+/w=="])
async def test_a_wrong_key_is_an_authentication_error(
    served: tuple[MockGateway, str], key: str
) -> None:
    """Both ways of sending the key: as the subprotocol, and as a header for non-token keys."""
    _, url = served
    with (
        Client(api_key=key, base_url=url) as client,
        pytest.raises(AuthenticationError) as caught,
    ):
        list(client.chat.completions.connect(model="gpt-4o", messages=HELLO))
    assert caught.value.code == "invalid_api_key"
    assert key not in str(caught.value)


def test_a_key_that_is_not_a_token_travels_as_a_header() -> None:
    def request(key: str) -> httpx.Request:
        return httpx.Request(
            "GET", "http://x/v1/stream", headers={"Authorization": f"Bearer {key}"}
        )

    assert handshake(request("sk-abc_1.2+x")) == (["Authorization", "sk-abc_1.2+x"], {})
    assert handshake(request("a/b=")) == ([], {"Authorization": "Bearer a/b="})
    assert websocket_url(httpx.URL("https://gw.test/v1/stream")) == "wss://gw.test/v1/stream"
    assert websocket_url(httpx.URL("http://gw.test/v1/stream")) == "ws://gw.test/v1/stream"


def test_a_non_token_key_of_a_real_account_works(served: tuple[MockGateway, str]) -> None:
    gateway, url = served
    gateway.ledger.create_account(key="sk/with=slash")
    with Client(api_key="sk/with=slash", base_url=url) as client:
        chunks = list(client.chat.completions.connect(model="gpt-4o", messages=HELLO))
    assert chunks[-1].choices[0].finish_reason == "stop"


async def test_nothing_is_sent_for_invalid_input(ws_client: Client | AsyncClient) -> None:
    with pytest.raises(ValueError, match="nothing was sent"):
        await resolve(ws_client.chat.completions.connect(model="gpt-4o", messages=[]))
    with pytest.raises(TypeError, match="stream"):
        await resolve(
            ws_client.chat.completions.connect(model="gpt-4o", messages=HELLO, stream=True)
        )


def test_without_websockets_the_error_names_the_extra(
    served: tuple[MockGateway, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    gateway, url = served
    monkeypatch.setitem(sys.modules, "websockets.sync.client", None)
    with (
        Client(api_key=gateway.api_key, base_url=url) as client,
        pytest.raises(ImportError, match=r"-e '\.\[ws\]'"),
    ):
        client.chat.completions.connect(model="gpt-4o", messages=HELLO)


async def test_the_deadline_applies_to_sockets(ws_client: Client | AsyncClient) -> None:
    from .test_stream_failures import fake_time

    slow = ws_client.with_options(retry_policy=fake_time())  # one second per reading
    with pytest.raises(StreamTimeoutError, match="deadline") as caught:
        await socket_chunks(slow, model="gpt-4o", messages=HELLO, deadline=6)
    assert caught.value.limit_name == "deadline"
    assert caught.value.received < 6


async def test_leaving_a_socket_early_closes_it(ws_client: Client | AsyncClient) -> None:
    socket = await resolve(ws_client.chat.completions.connect(model="gpt-4o", messages=HELLO))
    if isinstance(ws_client, Client):
        with socket:
            next(iter(socket))
    else:
        async with socket:
            await socket.__anext__()
    assert socket.received == 1
    assert socket._connection.state.name == "CLOSED"
