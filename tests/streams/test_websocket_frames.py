"""A socket's I/O without a network (`aigateway._streams.sockets`): the request frame written,
the chunk read while opening handed out first, the done frame as the end, and each failed
wait for a frame as our error: a failed attempt while opening, a stream cut short after."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from aigateway import APIConnectionError, StreamConnectionError, StreamTimeoutError
from aigateway._streams.chunks import ChunkDecoder
from aigateway._streams.sockets import AsyncSocketChunks, SocketChunks
from aigateway.types.chat import ChatCompletionChunk

pytestmark = pytest.mark.anyio

DONE = '{"object": "chat.completion.done"}'


def frame(text: str, credits: float | None = None) -> str:
    chunk: dict[str, Any] = {
        "id": "c",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"content": text}}],
    }
    if credits is not None:
        chunk["_remaining_credits"] = credits
    return json.dumps(chunk)


class Connection:
    """Answers each ``recv`` with the next of ``frames``: a frame, or an exception to raise."""

    def __init__(self, frames: list[str | BaseException]) -> None:
        self.frames = frames
        self.sent: list[str] = []
        self.waits: list[float | None] = []

    def send(self, text: str) -> None:
        self.sent.append(text)

    def recv(self, timeout: float | None = None) -> str:
        self.waits.append(timeout)
        item = self.frames.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item


class AsyncConnection(Connection):
    async def send(self, text: str) -> None:  # type: ignore[override]
        Connection.send(self, text)

    async def recv(self) -> str:  # type: ignore[override]
        return Connection.recv(self)


def socket_io(kind: str, frames: list[str | BaseException]) -> SocketChunks | AsyncSocketChunks:
    request = httpx.Request("GET", "ws://gateway.test/v1/stream")
    decoder = ChunkDecoder(
        ChatCompletionChunk.model_validate_json, httpx.Response(101, request=request)
    )
    if kind == "sync":
        return SocketChunks(Connection(frames), decoder)
    return AsyncSocketChunks(AsyncConnection(frames), decoder)


async def next_chunk(chunks: SocketChunks | AsyncSocketChunks) -> ChatCompletionChunk:
    if isinstance(chunks, SocketChunks):
        return next(chunks)
    return await chunks.__anext__()


async def rest(chunks: SocketChunks | AsyncSocketChunks) -> list[str | None]:
    if isinstance(chunks, SocketChunks):
        return [chunk.choices[0].delta.content for chunk in chunks]
    return [chunk.choices[0].delta.content async for chunk in chunks]


async def test_the_chunk_read_while_opening_comes_first_with_its_credits_noted_then(
    kind: str,
) -> None:
    chunks = socket_io(kind, [frame("a", credits=9.5), frame("b", credits=9.0), DONE])
    write = chunks.write(b'{"model": "m"}')
    if write is not None:
        await write
    assert chunks.connection.sent == ['{"model": "m"}']  # a text frame
    chunks.ahead = await next_chunk(chunks)  # what the request path does while opening
    noted: list[float] = []
    chunks.observe = lambda response, chunk: noted.append(chunk.remaining_credits)  # type: ignore[attr-defined]
    assert noted == []  # nothing reached the caller yet
    assert await rest(chunks) == ["a", "b"]
    assert noted == [9.5, 9.0]
    assert chunks.decoder.received == 2
    assert len(chunks.connection.waits) == 3  # no read after the done frame


async def test_a_close_while_opening_is_a_failed_attempt(kind: str) -> None:
    chunks = socket_io(kind, [ConnectionResetError("gone")])
    with pytest.raises(APIConnectionError, match="cut before the done frame") as caught:
        await next_chunk(chunks)
    assert not isinstance(caught.value, StreamConnectionError)
    assert isinstance(caught.value.__cause__, ConnectionResetError)


async def test_a_close_after_chunks_is_a_stream_cut_short(kind: str) -> None:
    chunks = socket_io(kind, [frame("a"), ConnectionResetError("gone")])
    chunks.observe = lambda response, chunk: None
    with pytest.raises(StreamConnectionError, match="after 1 chunks") as caught:
        await rest(chunks)
    assert caught.value.received == 1
    assert [chunk.choices[0].delta.content for chunk in caught.value.chunks] == ["a"]


async def test_a_wait_that_times_out_is_a_stall(kind: str) -> None:
    chunks = socket_io(kind, [frame("a"), TimeoutError()])
    chunks.observe = lambda response, chunk: None
    with pytest.raises(StreamTimeoutError, match="stalled"):
        await rest(chunks)


async def test_other_failures_pass_as_they_are(kind: str) -> None:
    chunks = socket_io(kind, [RuntimeError("a bug")])
    with pytest.raises(RuntimeError, match="a bug"):
        await next_chunk(chunks)
