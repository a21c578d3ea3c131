"""How reads of a stream become chunks. A read that brings many events at once: its chunks are
parsed one at a time, as they are asked for (so they do not wait in memory), and an error event
among them is raised after the chunks before it, which reach the caller. Events of one data
line each (what streaming servers send) take a shorter path that must give the same."""

from __future__ import annotations

import json
from typing import Any

import pytest

from aigateway import (
    APIResponseValidationError,
    AsyncClient,
    Client,
    IncompleteStreamError,
    RateLimitError,
)

from ..conftest import API_KEY, BASE_URL
from .test_stream_failures import Body, event, serving

pytestmark = pytest.mark.anyio
HELLO = [{"role": "user", "content": "hi"}]
ERROR = (
    b"data: "
    + json.dumps(
        {"error": {"message": "slow down", "type": "rate_limit_error", "code": "rate_limited"}}
    ).encode()
    + b"\n\n"
)


def one_read(*events: bytes) -> Body:
    """A body whose every event arrives in one read."""
    return Body(lambda: iter([b"".join(events)]))


async def read_all(kind: str, body: Body, seen: list[Any]) -> None:
    """Read a stream over ``body`` to its end, noting ``(chunk, stream.received)`` as each
    chunk reaches the caller."""
    params: dict[str, Any] = {"model": "m", "messages": HELLO, "stream": True}
    if kind == "sync":
        with (
            Client(
                api_key=API_KEY, base_url=BASE_URL, transport=serving(body), max_retries=0
            ) as client,
            client.chat.completions.create(**params) as stream,
        ):
            seen.extend((chunk, stream.received) for chunk in stream)
        return
    async with AsyncClient(
        api_key=API_KEY, base_url=BASE_URL, transport=serving(body), max_retries=0
    ) as aclient:
        astream = await aclient.chat.completions.create(**params)
        async with astream:
            async for chunk in astream:
                seen.append((chunk, astream.received))


async def test_chunks_of_one_read_are_parsed_as_they_are_asked_for(kind: str) -> None:
    body = one_read(*(event(f"w{i} ") for i in range(200)), b"data: [DONE]\n\n")
    seen: list[Any] = []
    await read_all(kind, body, seen)
    assert [chunk.choices[0].delta.content for chunk, _ in seen] == [f"w{i} " for i in range(200)]
    # when the caller holds chunk n, n chunks have been parsed: none waits ahead of it
    assert [received for _, received in seen] == list(range(1, 201))


async def test_an_error_event_mid_read_comes_after_the_chunks_before_it(kind: str) -> None:
    body = one_read(event("a"), event("b"), event("c"), ERROR, event("never"))
    seen: list[Any] = []
    with pytest.raises(RateLimitError, match="slow down"):
        await read_all(kind, body, seen)
    # nothing that arrived before the error is lost
    assert [chunk.choices[0].delta.content for chunk, _ in seen] == ["a", "b", "c"]


def one_event_a_read(*events: bytes) -> Body:
    """A body whose every event arrives in a read of its own."""
    return Body(lambda: iter(events))


def credits_event(content: str, credits: float) -> bytes:
    chunk = json.loads(event(content, "stop")[len(b"data: ") :])
    chunk.update(_remaining_credits=credits, _balance_warning=False)
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


async def test_events_read_one_at_a_time_give_every_chunk_and_the_credits(kind: str) -> None:
    # an id in an earlier read: the events after it keep it; a two-line event takes the
    # general decoder and still joins its lines
    body = one_event_a_read(
        b"id: 7\n\n",
        event("a"),
        b"data: " + event("b")[6:-2].replace(b", ", b",\ndata: ", 1) + b"\n\n",
        event("c"),
        credits_event("d", 12.5),
        b"data: [DONE]\n\n",
    )
    seen: list[Any] = []
    await read_all(kind, body, seen)
    assert [chunk.choices[0].delta.content for chunk, _ in seen] == ["a", "b", "c", "d"]
    assert [received for _, received in seen] == [1, 2, 3, 4]
    assert seen[-1][0].remaining_credits == 12.5


async def test_the_credits_are_the_clients_while_the_caller_holds_their_chunk(kind: str) -> None:
    body = one_event_a_read(event("a"), credits_event("b", 9.0), b"data: [DONE]\n\n")
    params: dict[str, Any] = {"model": "m", "messages": HELLO, "stream": True}
    options: dict[str, Any] = {"api_key": API_KEY, "base_url": BASE_URL, "max_retries": 0}
    held: list[float | None] = []
    if kind == "sync":
        with Client(transport=serving(body), **options) as client:
            for _ in client.chat.completions.create(**params):
                held.append(client.remaining_credits)
    else:
        async with AsyncClient(transport=serving(body), **options) as aclient:
            async for _ in await aclient.chat.completions.create(**params):
                held.append(aclient.remaining_credits)
    assert held == [None, 9.0]


async def test_invalid_utf8_in_an_event_read_alone_is_replaced(kind: str) -> None:
    body = one_event_a_read(
        event("ok"), event("caf\u00e9").replace(b"\\u00e9", b"\xe9"), event("end")
    )
    seen: list[Any] = []
    with pytest.raises(IncompleteStreamError):  # no [DONE]: the chunks before the end arrive
        await read_all(kind, body, seen)
    assert [chunk.choices[0].delta.content for chunk, _ in seen] == ["ok", "caf\ufffd", "end"]


async def test_an_error_event_read_alone_raises_after_the_chunks_before_it(kind: str) -> None:
    body = one_event_a_read(event("a"), event("b"), ERROR, event("never"))
    seen: list[Any] = []
    with pytest.raises(RateLimitError, match="slow down"):
        await read_all(kind, body, seen)
    assert [chunk.choices[0].delta.content for chunk, _ in seen] == ["a", "b"]


async def test_a_chunk_of_the_wrong_shape_read_alone_is_a_validation_error(kind: str) -> None:
    body = one_event_a_read(event("a"), b'data: {"choices": 3}\n\n', event("never"))
    seen: list[Any] = []
    with pytest.raises(APIResponseValidationError, match="not of the expected shape") as caught:
        await read_all(kind, body, seen)
    assert caught.value.body == b'{"choices": 3}'
    assert [chunk.choices[0].delta.content for chunk, _ in seen] == ["a"]
