"""A read that brings many events at once: its chunks are parsed one at a time, as they are
asked for (so they do not wait in memory), and an error event among them is raised after the
chunks before it, which reach the caller."""

from __future__ import annotations

import json
from typing import Any

import pytest

from aigateway import AsyncClient, Client, RateLimitError

from .conftest import API_KEY, BASE_URL
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


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)
