"""Typed streams end to end against the mock: in-process and over a real socket, sync and async."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from aigateway import AsyncClient, AuthenticationError, Client
from aigateway._streams.chat_stream import accumulate
from aigateway.testing import MockGateway

from ..conftest import resolve
from ..testing._helpers import LOOKUP_TOOL

pytestmark = pytest.mark.anyio
HELLO = [{"role": "user", "content": "Stream me something"}]
TOOL = LOOKUP_TOOL


@pytest.fixture
def gateway() -> MockGateway:
    return MockGateway(seed=5)


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[MockGateway, str]]:
    """One gateway served over HTTP for the module (each test uses its own account)."""
    gateway = MockGateway(seed=5)
    with gateway.serve() as url:
        yield gateway, url


@pytest.fixture(params=["in-process-sync", "in-process-async", "socket-sync", "socket-async"])
async def stream_client(
    request: pytest.FixtureRequest, gateway: MockGateway, served: tuple[MockGateway, str]
) -> AsyncIterator[tuple[Client | AsyncClient, MockGateway]]:
    """A client of each kind, on the in-process transport and over a real socket."""
    where, kind = request.param.rsplit("-", 1)
    options: dict[str, Any] = {"max_retries": 0}
    if where == "socket":
        gateway, url = served
        options |= {"api_key": gateway.create_account().key, "base_url": url}
        client: Client | AsyncClient = (Client if kind == "sync" else AsyncClient)(**options)
    else:
        client = gateway.client(**options) if kind == "sync" else gateway.async_client(**options)
    if isinstance(client, Client):
        with client:
            yield client, gateway
    else:
        async with client:
            yield client, gateway


async def chunks_of(stream: Any) -> list[Any]:
    if hasattr(stream, "__aiter__"):
        async with stream:
            return [chunk async for chunk in stream]
    with stream:
        return list(stream)


async def test_create_stream_yields_typed_chunks_adding_up_to_the_reply(
    stream_client: tuple[Client | AsyncClient, MockGateway],
) -> None:
    client, _ = stream_client
    whole = await resolve(client.chat.completions.create(model="gpt-4o", messages=HELLO, seed=1))
    stream = await resolve(
        client.chat.completions.create(model="gpt-4o", messages=HELLO, seed=1, stream=True)
    )
    chunks = await chunks_of(stream)
    assert [type(c).__name__ for c in chunks] == ["ChatCompletionChunk"] * len(chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == whole.text
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert chunks[-1].remaining_credits is not None
    assert chunks[-1].balance_warning is False
    assert client.remaining_credits == chunks[-1].remaining_credits
    assert stream.response.is_closed


async def test_stream_helper_rebuilds_the_whole_completion(
    stream_client: tuple[Client | AsyncClient, MockGateway],
) -> None:
    client, _ = stream_client
    whole = await resolve(client.chat.completions.create(model="gpt-4o", messages=HELLO, seed=2))
    manager = await resolve(client.chat.completions.stream(model="gpt-4o", messages=HELLO, seed=2))
    if isinstance(client, Client):
        with manager as stream:
            texts = list(stream.text_stream)
            final = stream.get_final_completion()
    else:
        async with manager as stream:
            texts = [text async for text in stream.text_stream]
            final = await stream.get_final_completion()
    assert len(texts) > 3
    assert "".join(texts) == whole.text == final.text
    assert final.id.startswith("chatcmpl-")
    assert final.model == whole.model
    assert final.choices[0].message.role == "assistant"
    assert final.choices[0].finish_reason == "stop"
    assert final.remaining_credits is not None
    assert stream.stream.response.is_closed


async def test_stream_helper_assembles_tool_calls_and_usage(
    stream_client: tuple[Client | AsyncClient, MockGateway],
) -> None:
    client, _ = stream_client
    whole = await resolve(
        client.chat.completions.create(model="gpt-4o", messages=HELLO, tools=[TOOL], seed=3)
    )
    manager = await resolve(
        client.chat.completions.stream(
            model="gpt-4o",
            messages=HELLO,
            tools=[TOOL],
            seed=3,
            extra_body={"stream_options": {"include_usage": True}},
        )
    )
    if isinstance(client, Client):
        with manager as stream:
            final = stream.get_final_completion()
    else:
        async with manager as stream:
            final = await stream.get_final_completion()
    assert final.choices[0].finish_reason == "tool_calls"
    (call,) = final.choices[0].message.tool_calls
    (expected,) = whole.choices[0].message.tool_calls
    assert call.function == expected.function  # ids differ: each request gets its own
    assert call.id.startswith("call_")
    assert call.type == "function"
    assert json.loads(final.choices[0].message.tool_calls[0].function.arguments).keys() == {
        "term",
        "limit",
    }
    assert final.usage == whole.usage


async def test_a_refused_stream_raises_before_iteration(
    stream_client: tuple[Client | AsyncClient, MockGateway],
) -> None:
    client, _ = stream_client
    bad = client.with_options(default_headers={"Authorization": "Bearer sk-wrong"})
    with pytest.raises(AuthenticationError) as caught:
        await resolve(bad.chat.completions.create(model="gpt-4o", messages=HELLO, stream=True))
    assert caught.value.code == "invalid_api_key"
    with pytest.raises(AuthenticationError):
        await resolve(bad.chat.completions.stream(model="gpt-4o", messages=HELLO))


async def test_breaking_out_releases_the_connection(
    stream_client: tuple[Client | AsyncClient, MockGateway],
) -> None:
    client, _ = stream_client
    stream = await resolve(
        client.chat.completions.create(model="gpt-4o", messages=HELLO, stream=True)
    )
    if isinstance(client, Client):
        with stream:
            for _ in stream:
                break
    else:
        async with stream:
            async for _ in stream:
                break
    assert stream.response.is_closed
    assert stream.received >= 1


async def test_an_exception_in_the_loop_releases_the_connection(
    stream_client: tuple[Client | AsyncClient, MockGateway],
) -> None:
    client, _ = stream_client
    stream = await resolve(
        client.chat.completions.create(model="gpt-4o", messages=HELLO, stream=True)
    )

    async def fail_in_the_loop() -> None:
        if isinstance(client, Client):
            with stream:
                for _ in stream:
                    raise KeyError("consumer failed")
        else:
            async with stream:
                async for _ in stream:
                    raise KeyError("consumer failed")

    with pytest.raises(KeyError):
        await fail_in_the_loop()
    assert stream.response.is_closed


def test_the_accumulator_works_on_any_chunk_iterable(gateway: MockGateway) -> None:
    with gateway.client() as client:
        whole = client.chat.completions.create(model="gpt-4o", messages=HELLO, seed=9)
        chunks = list(
            client.chat.completions.create(model="gpt-4o", messages=HELLO, seed=9, stream=True)
        )
    rebuilt = accumulate(chunks)
    assert rebuilt.text == whole.text
    assert rebuilt.choices[0].finish_reason == whole.choices[0].finish_reason
    assert rebuilt.remaining_credits == chunks[-1].remaining_credits


def test_completed_streams_reuse_one_pooled_connection(served: tuple[MockGateway, str]) -> None:
    gateway, url = served
    with Client(api_key=gateway.create_account().key, base_url=url) as client:
        pool = client._pipeline.http_client._transport._pool  # type: ignore[attr-defined]
        seen = set()
        for _ in range(5):
            with client.chat.completions.create(
                model="gpt-4o-mini", messages=HELLO, stream=True
            ) as stream:
                assert list(stream)
            seen.update(id(connection) for connection in pool.connections)
        assert len(seen) == 1
        assert len(pool.connections) == 1
        assert pool.connections[0].is_idle()
