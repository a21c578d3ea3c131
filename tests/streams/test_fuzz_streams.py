"""Whatever a streamed reply holds, iterating it yields chunks or raises an `AIGatewayError`.

Event streams cut into arbitrary pieces, mixing chunks, junk, error events, ``[DONE]`` or not,
cut mid-event, oversized lines, and replies that are no event stream at all; WebSocket frames
through the decoder that reads them. Helpers come from
``tests/call/test_fuzz_replies.py``.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from aigateway import (
    AIGatewayError,
    APIResponseValidationError,
    APIStatusError,
    RateLimitError,
)
from aigateway._streams.chunks import ChunkDecoder
from aigateway.types import ChatCompletionChunk

from ..call.test_fuzz_replies import (
    FUZZ,
    KINDS,
    Handler,
    call,
    deep,
    error_bodies,
    json_values,
    outcome,
    pytestmark,  # noqa: F401  (the same warning filter)
)

CHUNK = (
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
)
DONE = b"data: [DONE]\n\n"
HTML = b"<!DOCTYPE html><html><body>502 Bad Gateway</body></html>"
HELLO = [{"role": "user", "content": "hi"}]
STREAM_OPERATIONS = ("stream", "helper")


class Pieces(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A reply body arriving in the given pieces."""

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = pieces

    def __iter__(self) -> Iterator[bytes]:
        yield from self.pieces

    def __aiter__(self) -> AsyncIterator[bytes]:
        return _AsyncPieces(iter(self.pieces))


class _AsyncPieces:
    """The pieces as a plain async iterator (a generator left unfinished makes trio warn)."""

    def __init__(self, pieces: Iterator[bytes]) -> None:
        self.pieces = pieces

    def __aiter__(self) -> _AsyncPieces:
        return self

    async def __anext__(self) -> bytes:
        for piece in self.pieces:
            return piece
        raise StopAsyncIteration


def streaming(
    pieces: list[bytes], headers: list[tuple[bytes, bytes]], status: int = 200
) -> Handler:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, headers=headers, stream=Pieces(pieces))

    return handler


def error_event(body: bytes, named: bool) -> bytes:
    return (b"event: error\n" if named else b"") + b"data: " + body + b"\n\n"


segments = st.one_of(
    st.just(CHUNK),
    st.just(DONE),
    st.just(b": keep-alive\n\n"),
    st.binary(max_size=40),
    st.text(max_size=40).map(lambda text: text.encode()),
    st.builds(
        lambda value: b"data: " + json.dumps(value).encode() + b"\n\n",
        json_values,
    ),
    st.builds(
        error_event,
        error_bodies.map(lambda value: json.dumps(value).encode()),
        st.booleans(),
    ),
    st.builds(error_event, st.just(deep('{"error": ', "}", 3000)), st.booleans()),
    st.just(b"data: " + b"x" * 1_100_000 + b"\n\n"),  # over the 1 MiB event limit
    st.just(HTML),
)
stream_content_types = st.sampled_from(
    [
        "text/event-stream",
        "text/event-stream; charset=nonsense",
        "text/plain",
        "text/html",
        "application/json",
        "",
    ]
)


@st.composite
def streams(draw: st.DrawFn) -> tuple[list[bytes], list[tuple[bytes, bytes]]]:
    """An event stream (or not), possibly cut short, in arbitrary pieces, with headers."""
    body = b"".join(draw(st.lists(segments, max_size=8)))
    if draw(st.booleans()):
        body = body[: draw(st.integers(0, len(body)))]
    headers: list[tuple[bytes, bytes]] = []
    content_type = draw(stream_content_types)
    if content_type:
        headers.append((b"content-type", content_type.encode()))
    encoding = draw(st.sampled_from(["", "gzip", "gzip-label-only", "garbage"]))
    if encoding == "gzip":
        body = gzip.compress(body)
    if encoding:
        headers.append((b"content-encoding", encoding.removesuffix("-label-only").encode()))
    cuts = sorted(draw(st.lists(st.integers(0, len(body)), max_size=6)))
    pieces = [body[start:end] for start, end in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    return pieces, headers


@FUZZ
@given(
    stream=streams(),
    operation=st.sampled_from(STREAM_OPERATIONS),
    kind=st.sampled_from(KINDS),
)
@example(  # an error event in a gzip stream escaped as httpx.DecodingError
    stream=(
        [gzip.compress(b'data: {"error": {"message": "no"}}\n\n')],
        [(b"content-type", b"text/event-stream"), (b"content-encoding", b"gzip")],
    ),
    operation="stream",
    kind="sync",
)
def test_any_stream_gives_chunks_or_a_gateway_error(
    stream: tuple[list[bytes], list[tuple[bytes, bytes]]], operation: str, kind: str
) -> None:
    """Any body in any pieces: the chunks, or an `AIGatewayError`, never another error."""
    outcome(kind, streaming(*stream), operation)


@FUZZ
@given(
    stream=streams(),
    operation=st.sampled_from(STREAM_OPERATIONS),
)
def test_a_stream_of_chunks_then_done_gives_every_chunk_in_any_pieces(
    stream: tuple[list[bytes], list[tuple[bytes, bytes]]], operation: str
) -> None:
    """Valid chunks then ``[DONE]``, cut anywhere: exactly the chunks, whatever the pieces."""
    pieces, _ = stream
    body = CHUNK * 3 + DONE
    cuts = sorted({len(piece) % len(body) for piece in pieces})
    split = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    headers = [(b"content-type", b"text/event-stream")]
    result = call("sync", streaming(split, headers), operation)
    if operation == "stream":
        assert [chunk.choices[0].delta.content for chunk in result] == ["hi"] * 3  # type: ignore[attr-defined]
    else:
        assert result.choices[0].message.content == "hihihi"  # type: ignore[attr-defined]


# WebSocket frames


def frame_decoder() -> ChunkDecoder[ChatCompletionChunk]:
    request = httpx.Request("GET", "ws://gateway.test/v1/stream")
    return ChunkDecoder(
        ChatCompletionChunk.model_validate_json, httpx.Response(101, request=request)
    )


frames = st.one_of(
    st.text(max_size=60),
    st.binary(max_size=60),
    json_values.map(json.dumps),
    error_bodies.map(json.dumps),
    st.just(CHUNK[6:-2].decode()),
    st.just('{"object": "chat.completion.done"}'),
    st.just(deep('{"error": ', "}", 3000).decode()),
    st.just(deep('{"error": ', "}", 3000)),
)


@FUZZ
@given(messages=st.lists(frames, max_size=6))
def test_any_websocket_frame_gives_a_chunk_the_end_or_a_gateway_error(
    messages: list[str | bytes],
) -> None:
    """Each frame: a chunk, None (the done frame), or an `AIGatewayError`."""
    decoder = frame_decoder()
    for message in messages:
        try:
            result = decoder.feed_frame(message)
        except AIGatewayError:
            continue
        assert result is None or isinstance(result, ChatCompletionChunk)


# Regressions


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


SSE = [(b"content-type", b"text/event-stream")]


@pytest.mark.parametrize("named", [True, False])
def test_an_error_event_nested_very_deep_is_a_typed_error(kind: str, named: bool) -> None:
    """An error event nested 100000 deep cannot be parsed: a typed error, no RecursionError."""
    body = CHUNK + error_event(deep('{"error": ', "}", 100_000), named)
    error = outcome(kind, streaming([body], SSE), "stream")
    assert isinstance(error, AIGatewayError)


def test_an_error_event_in_a_gzip_stream_is_its_status_error(kind: str) -> None:
    """The event is decoded once, not again as gzip: the error its type stands for."""
    event = b'data: {"error": {"message": "slow down", "type": "rate_limit_error"}}\n\n'
    headers = [*SSE, (b"content-encoding", b"gzip")]
    error = outcome(kind, streaming([gzip.compress(CHUNK + event)], headers), "stream")
    assert isinstance(error, RateLimitError)
    assert error.message == "slow down"


def test_an_already_read_event_stream_streams_its_chunks(kind: str) -> None:
    """A transport handing back a reply already read (``content=``) still streams."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers=SSE, content=CHUNK * 2 + DONE)

    chunks = call(kind, handler, "stream")
    assert [chunk.choices[0].delta.content for chunk in chunks] == ["hi", "hi"]  # type: ignore[attr-defined]


def test_an_html_page_in_reply_to_a_stream_shows_its_content_type_and_start(kind: str) -> None:
    """A proxy's HTML page is not an event stream: the error shows what it is."""
    headers = [(b"content-type", b"text/html; charset=utf-8")]
    error = outcome(kind, streaming([HTML], headers), "stream")
    assert isinstance(error, APIResponseValidationError)
    assert "text/html; charset=utf-8" in str(error)
    assert error.body.startswith(b"<!DOCTYPE html>")


def test_a_deeply_nested_error_frame_is_a_typed_error() -> None:
    """An ``{"error": ...}`` frame nested too deep to parse: a typed error, not RecursionError."""
    with pytest.raises(AIGatewayError):
        frame_decoder().feed_frame(deep('{"error": ', "}", 100_000).decode())


def test_an_error_frame_with_odd_fields_is_a_status_error() -> None:
    """Error fields of any JSON type still give the status error (status 500 by default)."""
    frame = json.dumps({"error": {"message": 5, "code": [1], "type": None, "param": {}}})
    with pytest.raises(APIStatusError) as caught:
        frame_decoder().feed_frame(frame)
    assert caught.value.status_code == 500


def test_a_deeply_nested_error_frame_over_a_served_socket_is_a_typed_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Over a real socket, a frame nested 30000 deep (under the 1 MiB frame limit)."""
    pytest.importorskip("websockets")
    import aigateway.testing._serving.asgi as asgi
    from aigateway import Client
    from aigateway.testing import MockGateway

    frame = deep('{"error": ', "}", 30_000).decode()
    monkeypatch.setattr(asgi, "event_frame", lambda event: frame)
    gateway = MockGateway(seed=8)
    with gateway.serve() as url:
        key = gateway.create_account().key
        with (
            Client(api_key=key, base_url=url, max_retries=0) as client,
            pytest.raises(APIResponseValidationError),
            client.chat.completions.connect(model="gpt-4o", messages=HELLO) as socket,
        ):
            list(socket)
