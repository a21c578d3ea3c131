"""Streams and unread replies dropped unclosed, on a real socket: released without a deadlock, a
leaked connection or a warning, whether reference counting or the garbage collector meets them.

The collector is forced where it once did harm: it runs whenever httpcore's pool takes its
lock (and, automatic collections off, nowhere else), so a stream dropped inside a reference
cycle is collected in the thread that holds the pool's lock. Before streams were kept out of
reference cycles and released outside the collector, the first such collection deadlocked.
Two concurrency slots (``max_concurrency=2``: one for the request, one for the stream dropped
in a cycle and not collected yet) make any stream that fails to give its slot back hang the
requests after it.
"""

from __future__ import annotations

import gc
import os
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from aigateway import AsyncClient, Client
from aigateway.testing import MockGateway

from .._stack import core

HELLO = [{"role": "user", "content": "Tell me a long story"}]
STREAMS = 1_000
"""Streams abandoned per test."""


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[MockGateway, str]]:
    gateway = MockGateway(seed=1, credits=1_000_000, rate_limits="unlimited")
    with gateway.serve() as url:
        yield gateway, url


@pytest.fixture
def collector_in_the_pool_lock(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Collections run only inside the client's pools' lock (httpcore's, or httpcore2's on the
    httpx2 lane: both pools' section under their lock starts with
    ``_assign_requests_to_connections``)."""
    for pool in (core.ConnectionPool, core.AsyncConnectionPool):
        monkeypatch.setattr(
            pool,
            "_assign_requests_to_connections",
            collecting(pool._assign_requests_to_connections),
        )
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def collecting(assign: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def assign_after_a_collection(pool: Any) -> Any:
        gc.collect(1)
        return assign(pool)

    return assign_after_a_collection


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def in_a_cycle(obj: object) -> None:
    """Tie ``obj`` into a reference cycle, so that only the garbage collector frees it."""
    box: list[object] = [obj]
    box.append(box)


@pytest.mark.timeout(180)
@pytest.mark.usefixtures("collector_in_the_pool_lock")
def test_a_thousand_sync_streams_dropped_after_one_chunk(served: tuple[MockGateway, str]) -> None:
    gateway, url = served
    with Client(api_key=gateway.api_key, base_url=url, max_retries=0, max_concurrency=2) as client:
        completions = client.chat.completions
        fds = open_fds()
        for index in range(STREAMS):
            way = index % 4
            if way == 3:  # an unread reply of with_streaming_response
                reply: Any = completions.with_streaming_response.create(
                    model="gpt-4o", messages=HELLO, stream=True
                )
            elif way == 2:  # the stream() helper
                reply = completions.stream(model="gpt-4o", messages=HELLO)
                next(iter(reply))
            else:
                reply = completions.create(model="gpt-4o", messages=HELLO, stream=True)
                next(iter(reply))
            if way % 2:
                in_a_cycle(reply)
                del reply  # left to the next collection, inside the pool's lock
            else:
                dropped = weakref.ref(reply)
                del reply
                assert dropped() is None  # in no reference cycle: gone at once
        assert completions.create(model="gpt-4o", messages=HELLO).text  # collects the last
        assert client.models.list()  # releases it
        leases = client._pipeline.state.leases
        assert len(leases) == 0  # every connection released
        assert not leases.abandoned
        pool = client._pipeline.http_client._transport._pool  # type: ignore[attr-defined]
        assert len(pool.connections) <= 2
        assert open_fds() <= fds + 4


@pytest.mark.timeout(180)
@pytest.mark.usefixtures("collector_in_the_pool_lock")
async def test_a_thousand_async_streams_dropped_after_one_chunk(
    served: tuple[MockGateway, str], anyio_backend: str
) -> None:
    """On asyncio (aiohttp's pool, no lock) the collector runs after each drop too; on trio
    (httpx's pool) inside its lock. Every dropped stream is released by a task of the loop."""
    gateway, url = served
    async with AsyncClient(
        api_key=gateway.api_key, base_url=url, max_retries=0, max_concurrency=2
    ) as client:
        completions = client.chat.completions
        fds = open_fds()
        for index in range(STREAMS):
            way = index % 4
            if way == 3:
                reply: Any = await completions.with_streaming_response.create(
                    model="gpt-4o", messages=HELLO, stream=True
                )
            else:
                if way == 2:
                    reply = await completions.stream(model="gpt-4o", messages=HELLO)
                else:
                    reply = await completions.create(model="gpt-4o", messages=HELLO, stream=True)
                async for _ in reply:
                    break
            if way % 2:
                in_a_cycle(reply)
                del reply
            else:
                dropped = weakref.ref(reply)
                del reply
                assert dropped() is None
            if anyio_backend == "asyncio":
                gc.collect(1)
        assert (await completions.create(model="gpt-4o", messages=HELLO)).text
        gc.collect(1)
        assert await client.models.list()  # the loop ran the last release meanwhile
        assert len(client._pipeline.state.leases) == 0
        assert open_fds() <= fds + 4


async def test_a_stream_looped_over_without_a_name_lives_as_long_as_its_loop(
    served: tuple[MockGateway, str], kind: str, anyio_backend: str
) -> None:
    """``for chunk in create(stream=True)`` holds no reference to the stream but the loop's:
    it must not count as dropped (and be closed) before the loop ends."""
    gateway, url = served
    params: dict[str, Any] = {"model": "gpt-4o", "messages": HELLO, "stream": True}
    if kind == "sync":
        with Client(api_key=gateway.api_key, base_url=url) as client:
            texts = [c.choices[0].delta.content for c in client.chat.completions.create(**params)]
            whole = client.chat.completions.create(model="gpt-4o", messages=HELLO).text
    else:
        async with AsyncClient(api_key=gateway.api_key, base_url=url) as aclient:
            stream = aclient.chat.completions.create(**params)
            texts = [c.choices[0].delta.content async for c in await stream]
            whole = (await aclient.chat.completions.create(model="gpt-4o", messages=HELLO)).text
    assert len(texts) > 2
    assert "".join(text or "" for text in texts) == whole


async def test_a_stream_dropped_while_a_call_waits_for_its_slot_gives_the_slot_back(
    served: tuple[MockGateway, str], anyio_backend: str
) -> None:
    """The waiting call started before the drop, so no later request would release the
    stream: its release is a task of the event loop, started by the drop."""
    import anyio

    gateway, url = served
    async with AsyncClient(
        api_key=gateway.api_key, base_url=url, max_retries=0, max_concurrency=1
    ) as client:
        stream: Any = await client.chat.completions.create(
            model="gpt-4o", messages=HELLO, stream=True
        )
        async for _ in stream:
            break
        waited: list[str] = []

        async def wait_for_the_slot() -> None:
            waited.append(
                (await client.chat.completions.create(model="gpt-4o", messages=HELLO)).text
            )

        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                group.start_soon(wait_for_the_slot)
                await anyio.wait_all_tasks_blocked()  # waiting for the slot
                del stream
        assert waited[0]
