"""Streams that go wrong: cut, malformed, oversized, endless, stalled, cancelled, abandoned."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import anyio
import httpx
import pytest

from aigateway import (
    APIResponseValidationError,
    AsyncClient,
    Client,
    IncompleteStreamError,
    RateLimitError,
    ResponseTooLargeError,
    RetryPolicy,
)
from aigateway._streams.chunks import TAIL
from aigateway.errors import APITimeoutError, StreamTimeoutError
from aigateway.testing import MockGateway

from ..conftest import API_KEY, BASE_URL

pytestmark = pytest.mark.anyio
HELLO = [{"role": "user", "content": "hi"}]


def event(content: str, finish: str | None = None) -> bytes:
    chunk = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


class Pieces(AsyncIterator[bytes]):
    """Byte pieces for ``async for``: an iterator object rather than an async generator, so a
    stream left early leaves nothing for trio to finalize; none after the body is closed, as
    from a closed connection."""

    def __init__(self, pieces: Iterator[bytes], body: Body) -> None:
        self._pieces = pieces
        self._body = body

    async def __anext__(self) -> bytes:
        if self._body.closed:
            raise StopAsyncIteration
        try:
            return next(self._pieces)
        except StopIteration:
            raise StopAsyncIteration from None


class Body(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A streamed reply body from a list of byte pieces or a generator; records its closing."""

    def __init__(self, pieces: Callable[[], Iterator[bytes]]) -> None:
        self.pieces = pieces
        self.closed = False

    def __iter__(self) -> Iterator[bytes]:
        yield from self.pieces()

    def __aiter__(self) -> AsyncIterator[bytes]:
        return Pieces(self.pieces(), self)

    def close(self) -> None:
        self.closed = True

    async def aclose(self) -> None:
        self.closed = True


def serving(body: Body, seen: list[httpx.Request] | None = None) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=body)

    return httpx.MockTransport(handler)


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def consume(
    kind: str, body: Body, *, seen: list[httpx.Request] | None = None, **options: Any
) -> list[Any]:
    """Open a stream over ``body`` with a client of ``kind`` and read it to the end."""
    policy = options.pop("retry_policy", None)
    params: dict[str, Any] = {"model": "m", "messages": HELLO, "stream": True, **options}
    transport = serving(body, seen)
    if kind == "sync":
        with (
            Client(
                api_key=API_KEY, base_url=BASE_URL, transport=transport, retry_policy=policy
            ) as client,
            client.chat.completions.create(**params) as stream,
        ):
            return list(stream)
    async with AsyncClient(
        api_key=API_KEY, base_url=BASE_URL, transport=transport, retry_policy=policy
    ) as aclient:
        astream = await aclient.chat.completions.create(**params)
        async with astream:
            return [chunk async for chunk in astream]


async def final_completion(kind: str, body: Body) -> Any:
    """The stream helper over ``body``: its final completion."""
    params: dict[str, Any] = {"model": "m", "messages": HELLO}
    if kind == "sync":
        with (
            Client(api_key=API_KEY, base_url=BASE_URL, transport=serving(body)) as client,
            client.chat.completions.stream(**params) as stream,
        ):
            return stream.get_final_completion()
    async with AsyncClient(api_key=API_KEY, base_url=BASE_URL, transport=serving(body)) as ac:
        astream = await ac.chat.completions.stream(**params)
        async with astream:
            return await astream.get_final_completion()


async def test_a_stream_cut_mid_line_is_incomplete_with_what_arrived(kind: str) -> None:
    body = Body(lambda: iter([event("Hel"), event("lo"), event("!")[:25]]))
    with pytest.raises(IncompleteStreamError, match="middle of an event") as caught:
        await consume(kind, body)
    assert caught.value.received == 2
    assert [c.choices[0].delta.content for c in caught.value.chunks] == ["Hel", "lo"]
    assert body.closed


async def test_a_stream_without_done_is_incomplete_and_keeps_only_a_tail(kind: str) -> None:
    body = Body(lambda: (event(str(i)) for i in range(40)))
    with pytest.raises(IncompleteStreamError, match="before data: \\[DONE\\]") as caught:
        await consume(kind, body)
    assert caught.value.received == 40
    assert len(caught.value.chunks) == TAIL
    assert caught.value.chunks[-1].choices[0].delta.content == "39"


async def test_the_stream_helper_attaches_the_partial_completion(kind: str) -> None:
    body = Body(lambda: iter([event("Hello"), event(", wor")]))
    with pytest.raises(IncompleteStreamError) as caught:
        await final_completion(kind, body)
    assert caught.value.partial.text == "Hello, wor"
    assert caught.value.partial.choices[0].finish_reason is None


async def test_a_chunk_that_is_not_json_is_a_validation_error(kind: str) -> None:
    body = Body(lambda: iter([event("ok"), b"data: {not json\n\n", b"data: [DONE]\n\n"]))
    with pytest.raises(APIResponseValidationError) as caught:
        await consume(kind, body)
    assert caught.value.body == b"{not json"
    assert body.closed


async def test_an_event_over_one_mebibyte_is_refused(kind: str) -> None:
    huge = b"data: " + b"x" * 600_000 + b"\ndata: " + b"y" * 600_000 + b"\n\n"
    body = Body(lambda: iter([event("a"), huge[:700_000], huge[700_000:], b"data: [DONE]\n\n"]))
    with pytest.raises(ResponseTooLargeError, match="max_event_size=1048576 bytes") as caught:
        await consume(kind, body)
    assert caught.value.limit == 1_048_576
    assert caught.value.received > 1_048_576
    assert body.closed


async def test_an_error_object_in_the_stream_raises_the_api_error(kind: str) -> None:
    error = {"error": {"message": "slow down", "type": "rate_limit_error", "code": "rate"}}
    body = Body(lambda: iter([event("a"), b"data: " + json.dumps(error).encode() + b"\n\n"]))
    with pytest.raises(RateLimitError, match="slow down") as caught:
        await consume(kind, body)
    assert caught.value.status_code == 429
    assert caught.value.code == "rate"


async def test_text_after_done_is_read_so_the_connection_can_be_reused(kind: str) -> None:
    body = Body(lambda: iter([event("a"), b"data: [DONE]\n\n", b": trailing comment\n\n"]))
    chunks = await consume(kind, body)
    assert [c.choices[0].delta.content for c in chunks] == ["a"]
    assert body.closed


def fake_time() -> RetryPolicy:
    """A policy whose stream timers read a `FakeClock`."""
    return RetryPolicy(monotonic=FakeClock())


class FakeClock:
    """Each reading is one second after the last: time passes without waiting."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


async def test_keep_alives_do_not_count_as_progress(kind: str) -> None:

    def keep_alive_forever() -> Iterator[bytes]:
        yield event("first")
        while True:
            yield b": keep-alive\n\n"

    body = Body(keep_alive_forever)
    with pytest.raises(StreamTimeoutError, match="stream_idle_timeout") as caught:
        await consume(kind, body, stream_idle_timeout=10, retry_policy=fake_time())
    assert isinstance(caught.value, APITimeoutError)
    assert (caught.value.limit_name, caught.value.limit) == ("stream_idle_timeout", 10)
    assert caught.value.received == 1
    assert body.closed


async def test_the_deadline_stops_a_stream_that_never_ends(kind: str) -> None:
    body = Body(lambda: (event("more") for _ in iter(int, 1)))
    with pytest.raises(StreamTimeoutError, match=r"deadline of 30 s \(deadline\)") as caught:
        await consume(kind, body, deadline=30, stream_idle_timeout=None, retry_policy=fake_time())
    assert (caught.value.limit_name, caught.value.limit) == ("deadline", 30)
    assert 10 < caught.value.received < 40


async def test_a_silent_server_hits_the_lowered_read_timeout(kind: str) -> None:
    def stall() -> Iterator[bytes]:
        yield event("a")
        raise httpx.ReadTimeout("timed out")

    seen: list[httpx.Request] = []
    with pytest.raises(StreamTimeoutError, match="stalled"):
        await consume(kind, Body(stall), seen=seen, stream_idle_timeout=7)
    assert seen[0].extensions["timeout"]["read"] == 7
    assert seen[0].extensions["timeout"]["connect"] == 5


async def test_a_connection_cut_mid_stream_is_incomplete(kind: str) -> None:
    def cut() -> Iterator[bytes]:
        yield event("a")
        raise httpx.RemoteProtocolError("peer closed connection")

    with pytest.raises(IncompleteStreamError, match="cut mid-stream") as caught:
        await consume(kind, Body(cut))
    assert isinstance(caught.value.__cause__, httpx.RemoteProtocolError)
    assert caught.value.received == 1


async def test_cancelling_an_async_stream_midway_releases_it() -> None:
    never = anyio.Event()

    class Hanging(Body):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            yield event("first")
            await never.wait()
            yield b""

    body = Hanging(lambda: iter(()))
    got: list[Any] = []
    async with AsyncClient(api_key=API_KEY, base_url=BASE_URL, transport=serving(body)) as client:
        stream = await client.chat.completions.create(model="m", messages=HELLO, stream=True)
        with anyio.CancelScope() as scope:
            async with stream:
                async for chunk in stream:
                    got.append(chunk)
                    scope.cancel()  # delivered while the stream waits for its next event
    assert scope.cancelled_caught
    assert len(got) == 1
    assert body.closed
    assert stream.response.is_closed


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_breaking_after_the_first_chunk_a_thousand_times_leaks_nothing() -> None:
    gateway = MockGateway(seed=1, credits=1_000_000, rate_limits="unlimited")
    with gateway.serve() as url, Client(api_key=gateway.api_key, base_url=url) as client:
        pool = client._pipeline.http_client._transport._pool  # type: ignore[attr-defined]
        for _ in range(20):  # warm up: sockets, thread pools
            with client.chat.completions.create(model="gpt-4o", messages=HELLO, stream=True) as s:
                next(iter(s))
        before = open_fds()
        for _ in range(1000):
            with client.chat.completions.create(model="gpt-4o", messages=HELLO, stream=True) as s:
                for _chunk in s:
                    break
            assert len(pool.connections) <= 1
        after = open_fds()
        # a completed stream after all that still finds a pooled connection to reuse
        assert list(client.chat.completions.create(model="gpt-4o", messages=HELLO, stream=True))
        assert len(pool.connections) == 1
    assert after - before <= 2
