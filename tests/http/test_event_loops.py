"""One `AsyncClient` across event loops, on a real socket: successive ``asyncio.run`` calls, a
loop that died mid-use, two loops in turn (a notebook's and a script's), trio runs; and trio
cancellations. Never "Event loop is closed", never a connection of another loop, never a
ResourceWarning (errors here, as everywhere in the suite; collections are forced to surface
what finalizers would report)."""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest

from aigateway import APIError, AsyncClient
from aigateway._call.classify import request_failed
from aigateway.testing import MockGateway

HELLO = [{"role": "user", "content": "Tell me a story"}]


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[MockGateway, str]]:
    gateway = MockGateway(seed=5, credits=1_000_000, rate_limits="unlimited")
    with gateway.serve() as url:
        yield gateway, url


def make_client(served: tuple[MockGateway, str], **options: Any) -> AsyncClient:
    """A client made outside any event loop, as at module level."""
    gateway, url = served
    return AsyncClient(api_key=gateway.api_key, base_url=url, max_retries=0, **options)


async def call_and_stream(client: AsyncClient) -> tuple[int, str]:
    """A plain call, then a stream read to its end."""
    models = await client.models.list()
    stream = await client.chat.completions.create(model="gpt-4o", messages=HELLO, stream=True)
    async with stream:
        text = "".join([chunk.choices[0].delta.content or "" async for chunk in stream])
    return len(models), text


def pool_of(client: AsyncClient) -> object:
    """The pool of the loop of the client's last request (None once that loop ended)."""
    return client._pipeline.http_client._transport.pool  # type: ignore[attr-defined]


async def call_and_stream_and_pool(client: AsyncClient) -> tuple[tuple[int, str], object]:
    return await call_and_stream(client), pool_of(client)


def test_successive_asyncio_runs_each_get_their_own_pool(served: tuple[MockGateway, str]) -> None:
    client = make_client(served, max_concurrency=2)
    first, pool = asyncio.run(call_and_stream_and_pool(client), debug=True)
    assert pool_of(client) is None  # closed with its loop
    second, other_pool = asyncio.run(call_and_stream_and_pool(client), debug=True)
    assert second == first
    assert other_pool is not pool  # the first loop's connections were not reused
    asyncio.run(client.close(), debug=True)
    gc.collect()


def test_a_loop_that_died_mid_use(served: tuple[MockGateway, str]) -> None:
    """The loop ends with an error while streams are open (one read from, one not, an unread
    reply): its end closes them, slots given back; the next loops work, also once they are
    dropped (nothing of the dead loop is touched then)."""
    client = make_client(served, max_concurrency=3)
    left: list[Any] = []

    async def die_mid_use() -> None:
        stream = await client.chat.completions.create(model="gpt-4o", messages=HELLO, stream=True)
        async for _ in stream:
            break
        left.append(stream)
        left.append(
            await client.chat.completions.create(model="gpt-4o", messages=HELLO, stream=True)
        )
        left.append(
            await client.chat.completions.with_streaming_response.create(
                model="gpt-4o", messages=HELLO, stream=True
            )
        )
        raise RuntimeError("the loop dies")

    with pytest.raises(RuntimeError, match="the loop dies"):
        asyncio.run(die_mid_use(), debug=True)
    assert [stream.response.is_closed for stream in left[:2]] == [True, True]  # by the loop's end
    assert left[2].http_response.is_closed
    assert asyncio.run(call_and_stream(client), debug=True)[0] == 11
    left.clear()
    for _ in range(4):  # more than the slots: none was lost with the loop
        assert asyncio.run(call_and_stream(client), debug=True)[0] == 11
    assert len(client._pipeline.state.leases) == 0
    asyncio.run(client.close(), debug=True)
    gc.collect()


def test_two_loops_in_turn(served: tuple[MockGateway, str]) -> None:
    """A notebook's loop and another, both alive, used in turn: each keeps its own pool."""
    client = make_client(served)
    notebook, other = asyncio.new_event_loop(), asyncio.new_event_loop()
    try:
        for loop in (notebook, other):
            loop.set_debug(True)
        first = notebook.run_until_complete(call_and_stream(client))
        notebook_pool = pool_of(client)
        assert other.run_until_complete(call_and_stream(client)) == first
        assert pool_of(client) is not notebook_pool
        assert notebook.run_until_complete(call_and_stream(client)) == first
        assert pool_of(client) is notebook_pool  # the notebook's loop finds its own again
        notebook.run_until_complete(client.close())
    finally:
        for loop in (notebook, other):  # as asyncio.run ends a loop: its pool closes
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
    gc.collect()


def test_asyncio_and_trio_runs_in_turn(served: tuple[MockGateway, str]) -> None:
    client = make_client(served, max_concurrency=2)
    results = [
        anyio.run(call_and_stream, client, backend=backend)
        for backend in ("trio", "asyncio", "trio", "asyncio")
    ]
    assert len(set(results)) == 1
    anyio.run(client.close)
    gc.collect()


def test_a_given_http_client_on_another_loop_is_a_clear_error(
    served: tuple[MockGateway, str],
) -> None:
    """An httpx client given as ``http_client`` cannot be rebuilt for another loop: the error
    says why, in our own class."""
    first, second = asyncio.new_event_loop(), asyncio.new_event_loop()
    mine = first.run_until_complete(make_http_client())
    client = make_client(served, http_client=mine)
    try:
        assert first.run_until_complete(client.models.list())
        with pytest.raises(APIError, match="belong to another event loop") as caught:
            second.run_until_complete(client.models.list())
        assert "make it inside the loop that uses it" in str(caught.value)
        assert first.run_until_complete(client.models.list())  # still fine on its own loop
        first.run_until_complete(mine.aclose())
    finally:
        for loop in (first, second):
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()


async def make_http_client() -> httpx.AsyncClient:
    return httpx.AsyncClient()


def test_an_http_client_of_a_closed_loop_is_named_in_the_error() -> None:
    request = httpx.Request("GET", "http://gateway.test/v1/models")
    error = request_failed(RuntimeError("Event loop is closed"), request)
    assert type(error) is APIError
    assert "belong to another event loop (Event loop is closed)" in str(error)


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_five_hundred_trio_cancellations_leave_no_warning(
    served: tuple[MockGateway, str], anyio_backend: str
) -> None:
    """Cancelled at every point of a stream's life: connecting, sending, waiting, reading, with
    and without ``async with``; trio warns of every async generator collected unfinished."""
    import trio

    async def consume(client: AsyncClient, closing: bool) -> None:
        stream = await client.chat.completions.create(model="gpt-4o", messages=HELLO, stream=True)
        if closing:
            async with stream:
                async for _ in stream:
                    await trio.lowlevel.checkpoint()
        else:
            async for _ in stream:
                await trio.lowlevel.checkpoint()

    async with make_client(served) as client:
        for index in range(500):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(consume, client, index % 2 == 0)
                for _ in range(index % 40):  # the cancellation lands a little later each time
                    await trio.lowlevel.checkpoint()
                nursery.cancel_scope.cancel()
            if index % 50 == 0:
                gc.collect()
        assert len(await client.models.list()) == 11
    gc.collect()


SCRIPT = """
    import asyncio
    import sys
    from aigateway import AsyncClient
    from aigateway.testing import MockGateway

    HELLO = [{"role": "user", "content": "Tell me a story"}]
    gateway = MockGateway(seed=5, credits=1_000_000, rate_limits="unlimited")
    with gateway.serve() as url:
        client = AsyncClient(api_key=gateway.api_key, base_url=url, max_retries=0)

        async def use():
            models = await client.models.list()
            stream = await client.chat.completions.create(
                model="gpt-4o", messages=HELLO, stream=True
            )
            async with stream:
                text = "".join([c.choices[0].delta.content or "" async for c in stream])
            left = await client.chat.completions.create(model="gpt-4o", messages=HELLO, stream=True)
            async for _ in left:
                break  # left open when the loop ends
            return len(models), text

        assert sys.flags.dev_mode  # -X dev: asyncio's debug mode
        assert asyncio.run(use()) == asyncio.run(use())
        asyncio.run(client.close())
    print("ok")
"""


def test_a_module_level_client_under_debug_mode_and_warnings_as_errors() -> None:
    """The script users write, run with asyncio's debug mode and ResourceWarning as an error
    (in a process of its own: both are set when the interpreter starts)."""
    done = subprocess.run(
        [
            sys.executable,
            "-X",
            "dev",
            "-W",
            "error::ResourceWarning",
            "-c",
            textwrap.dedent(SCRIPT),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
    # (old uvicorn and websockets, in the lowest-versions lane, warn of their own deprecations)
    for warning in ("ResourceWarning", "RuntimeWarning", "was never awaited"):
        assert warning not in done.stderr, done.stderr
    assert "Event loop is closed" not in done.stderr, done.stderr
