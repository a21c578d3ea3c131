"""httpx-aiohttp's transport given explicitly (``transport=AiohttpTransport()``, as before it
was the default on asyncio): the async client's behaviour over it, against the mock served on a
real socket. aiohttp runs on asyncio only."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from aigateway import AsyncClient, AuthenticationError, IncompleteStreamError, NotFoundError
from aigateway.testing import MockGateway

httpx_aiohttp = pytest.importorskip("httpx_aiohttp")
pytestmark = pytest.mark.anyio
HELLO = [{"role": "user", "content": "Hello"}]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[MockGateway, str]]:
    gateway = MockGateway(seed=2, rate_limits="unlimited", credits=1_000)
    with gateway.serve() as url:
        yield gateway, url


@pytest.fixture
async def client(served: tuple[MockGateway, str]) -> AsyncIterator[AsyncClient]:
    gateway, url = served
    async with AsyncClient(
        api_key=gateway.api_key,
        base_url=url,
        max_retries=0,
        transport=httpx_aiohttp.AiohttpTransport(),
    ) as async_client:
        yield async_client


async def test_completion_models_and_errors(client: AsyncClient) -> None:
    reply = await client.chat.completions.create(model="gpt-4o-mini", messages=HELLO)
    assert reply.text
    assert reply.remaining_credits is not None
    assert len(await client.models.list()) == 11
    with pytest.raises(NotFoundError, match="gpt-4o"):
        await client.models.retrieve("gpt-4oo")
    with pytest.raises(AuthenticationError):
        await client.with_options(default_headers={"Authorization": "Bearer nope"}).models.list()


async def test_a_stream_matches_the_whole_reply(client: AsyncClient) -> None:
    whole = await client.chat.completions.create(model="gpt-4o-mini", messages=HELLO, seed=4)
    stream = await client.chat.completions.create(
        model="gpt-4o-mini", messages=HELLO, seed=4, stream=True
    )
    async with stream:
        text = "".join(
            [chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices]
        )
    assert text == whole.text


async def drain(stream: AsyncIterator[object]) -> None:
    async for _ in stream:
        pass


async def test_a_stream_cut_mid_way_raises(
    client: AsyncClient, served: tuple[MockGateway, str]
) -> None:
    gateway, _ = served
    gateway.faults.drop_mid_stream(after_events=2)
    stream = await client.chat.completions.create(model="gpt-4o-mini", messages=HELLO, stream=True)
    async with stream:
        with pytest.raises(IncompleteStreamError):
            await drain(stream)


async def test_leaving_a_stream_early_frees_the_connection(client: AsyncClient) -> None:
    for _ in range(30):
        stream = await client.chat.completions.create(
            model="gpt-4o-mini", messages=HELLO, stream=True
        )
        async with stream:
            async for _ in stream:
                break
    reply = await client.chat.completions.create(model="gpt-4o-mini", messages=HELLO)
    assert reply.text
