"""Every helper refuses the wrong kind of client before sending, naming the one to use."""

from __future__ import annotations

from typing import Any

import pytest

import aigateway
from aigateway.testing import MockGateway

pytestmark = pytest.mark.anyio
HELLO = [{"role": "user", "content": "hi"}]
ITEMS = [{"model": "gpt-4o", "messages": HELLO}]


def lookup(city: str) -> str:
    """The weather in a city."""
    return "sunny"


async def test_sync_helpers_refuse_an_async_client() -> None:
    gateway = MockGateway()
    async with gateway.async_client() as client:
        with pytest.raises(
            TypeError, match="run_batch takes a Client, not an AsyncClient: use arun_batch"
        ):
            aigateway.run_batch(client, ITEMS)
        with pytest.raises(
            TypeError, match="run_tools takes a Client, not an AsyncClient: use arun_tools"
        ):
            aigateway.run_tools(client, model="gpt-4o", messages=HELLO, tools=[lookup])
    assert gateway.requests == []


async def test_async_helpers_refuse_a_sync_client() -> None:
    gateway = MockGateway()
    with gateway.client() as client:
        with pytest.raises(
            TypeError, match="arun_batch takes an AsyncClient, not a Client: use run_batch"
        ):
            await aigateway.arun_batch(client, ITEMS)
        with pytest.raises(
            TypeError, match="arun_tools takes an AsyncClient, not a Client: use run_tools"
        ):
            await aigateway.arun_tools(client, model="gpt-4o", messages=HELLO, tools=[lookup])
    assert gateway.requests == []


async def test_something_else_is_named_too() -> None:
    with pytest.raises(TypeError, match=r"run_batch takes a Client, not a dict$"):
        aigateway.run_batch({"api_key": "sk"}, ITEMS)
    with pytest.raises(TypeError, match=r"arun_batch takes an AsyncClient, not a dict$"):
        await aigateway.arun_batch({"api_key": "sk"}, ITEMS)


def test_run_batch_refuses_an_async_call() -> None:
    gateway = MockGateway()

    async def call(client: Any, item: Any) -> Any:
        return await client.chat.completions.create(**item)

    with gateway.client() as client, pytest.raises(TypeError, match="use arun_batch"):
        aigateway.run_batch(client, ITEMS, call=call)
    assert gateway.requests == []


async def test_the_right_kind_still_works(kind: str) -> None:
    gateway = MockGateway()
    if kind == "sync":
        with gateway.client() as client:
            results = aigateway.run_batch(client, ITEMS, progress=False)
    else:
        async with gateway.async_client() as aclient:
            results = await aigateway.arun_batch(aclient, ITEMS, progress=False)
    assert len(results.ok) == 1
