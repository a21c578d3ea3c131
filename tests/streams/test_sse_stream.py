"""The SSE decoder in `aigateway._streams.sse` over a whole stream: the end of a stream (pending
events, close), the event size limit, and a stream's events into typed chunks through the
`ChunkDecoder` every stream uses: chunks as their events complete, ``[DONE]``, a stream cut
short, an event over the limit."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from aigateway import IncompleteStreamError, ResponseTooLargeError
from aigateway._streams.chunks import ChunkDecoder
from aigateway._streams.sse import (
    _BOM,
    DEFAULT_MAX_EVENT_SIZE,
    SSEDecodeError,
    SSEDecoder,
    SSEEventTooLargeError,
)

from ._sse_helpers import E, decode, decode_all

# --- end of stream --------------------------------------------------------------------------


def test_incomplete_event_is_not_dispatched_and_reported() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: x\n\ndata: y\n") == [E("x")]
    assert decoder.pending
    assert decoder.close() == []
    assert decoder.pending  # still tells, after close


def test_stream_cut_mid_line() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b'data: x\n\ndata: {"half') == [E("x")]
    assert decoder.pending
    assert decoder.close() == []
    assert decoder.pending


def test_complete_stream_is_not_pending() -> None:
    for stream in [b"data: x\n\n", b"data: x\r\r", b"data: x\r\n\r\n", b": ping\n", b"\n", b""]:
        _, pending, _, _ = decode_all([stream])
        assert not pending, stream


def test_pending_tracks_progress() -> None:
    decoder = SSEDecoder()
    assert not decoder.pending
    decoder.feed(b"da")
    assert decoder.pending  # mid-line
    decoder.feed(b"ta: x\n")
    assert decoder.pending  # mid-event
    decoder.feed(b"\n")
    assert not decoder.pending
    decoder.feed(b": comment\n")
    assert not decoder.pending  # comments alone start no event
    decoder.feed(b"event: e\n")
    assert decoder.pending
    decoder.feed(b"\n")
    assert not decoder.pending
    decoder.feed(b"\xef")
    assert decoder.pending  # maybe a BOM, maybe not: bytes are buffered


def test_feed_after_close_raises_and_close_is_idempotent() -> None:
    decoder = SSEDecoder()
    decoder.feed(b"data: x\n\n")
    assert decoder.close() == []
    assert decoder.close() == []
    with pytest.raises(RuntimeError):
        decoder.feed(b"data: y\n\n")


# --- size limit -----------------------------------------------------------------------------


def test_errors_are_value_errors() -> None:
    assert issubclass(SSEDecodeError, ValueError)
    assert issubclass(SSEEventTooLargeError, SSEDecodeError)


def test_one_line_over_one_mib_raises() -> None:
    stream = b"data: " + b"x" * DEFAULT_MAX_EVENT_SIZE + b"\n\n"
    with pytest.raises(SSEEventTooLargeError, match="1048576 bytes") as info:
        decode(stream)
    assert "exceeded" in str(info.value)
    with pytest.raises(SSEEventTooLargeError):
        decode(*(stream[i : i + 65536] for i in range(0, len(stream), 65536)))
    # The limit also applies to a line that never ends.
    with pytest.raises(SSEEventTooLargeError):
        decode(stream[:-2])


def test_many_data_lines_over_one_mib_raise() -> None:
    line = b"data: " + b"y" * 1000 + b"\n"
    stream = line * 1100 + b"\n"  # about 1.1 MB in one event, no line over 1 KB
    with pytest.raises(SSEEventTooLargeError):
        decode(stream)
    with pytest.raises(SSEEventTooLargeError):
        decode(*(stream[i : i + 4096] for i in range(0, len(stream), 4096)))


def test_many_events_totalling_over_the_limit_are_fine() -> None:
    line = b"data: " + b"y" * 1000 + b"\n\n"
    assert len(decode(line * 1100)) == 1100


def test_just_under_one_mib_is_accepted() -> None:
    payload = b"z" * (DEFAULT_MAX_EVENT_SIZE - len(b"data: "))
    assert decode(b"data: " + payload + b"\n\n") == [E(payload.decode())]


def test_limit_boundaries_with_a_small_limit() -> None:
    assert decode(b"data: 0123456789\n\n", max_event_size=16) == [E("0123456789")]
    with pytest.raises(SSEEventTooLargeError, match="16 bytes"):
        decode(b"data: 0123456789a\n\n", max_event_size=16)
    # The event's field lines add up (line ends are not counted): 8 + 8 fits, 8 + 9 does not.
    assert decode(b"data: ab\ndata: cd\n\n", max_event_size=16) == [E("ab\ncd")]
    with pytest.raises(SSEEventTooLargeError):
        decode(b"data: ab\ndata: cde\n\n", max_event_size=16)
    # The count restarts with each event.
    assert len(decode(b"data: ab\n\ndata: cd\n\ndata: ef\n\n", max_event_size=8)) == 3
    # Comment lines do not add up, but each one is held to the limit.
    assert decode(b":" + b"c" * 15 + b"\n" + b":" * 16 + b"\ndata: x\n\n", max_event_size=16)
    with pytest.raises(SSEEventTooLargeError):
        decode(b":" + b"c" * 16 + b"\n\n", max_event_size=16)


def test_endless_line_in_tiny_chunks_stops_at_the_limit() -> None:
    decoder = SSEDecoder(max_event_size=100)
    for _ in range(100):
        assert decoder.feed(b"x") == []
    with pytest.raises(SSEEventTooLargeError):
        decoder.feed(b"x")


def test_invalid_max_event_size() -> None:
    with pytest.raises(ValueError, match="max_event_size"):
        SSEDecoder(max_event_size=0)


# --- a whole stream into typed chunks (`ChunkDecoder`, what streams and sockets use) --------


def chunk_decoder() -> ChunkDecoder[Any]:
    """A decoder whose chunks are the events' JSON, parsed."""
    request = httpx.Request("POST", "https://gateway.test/v1/chat/completions")
    return ChunkDecoder(json.loads, httpx.Response(200, request=request))


def chunks_of(decoder: ChunkDecoder[Any], data: bytes) -> list[Any]:
    """Feed one read; return the chunks it completes, as a stream hands them out."""
    chunks = []
    if decoder.feed(data):
        while (chunk := decoder.next_chunk()) is not None:
            chunks.append(chunk)
    return chunks


def test_chunks_come_as_their_events_complete_across_reads() -> None:
    decoder = chunk_decoder()
    assert chunks_of(decoder, b'data: {"n"') == []
    assert chunks_of(decoder, b": 1}\n") == []  # the line is complete, the event is not
    assert chunks_of(decoder, b'\nevent: e\ndata: {"n": 2}\r') == [{"n": 1}]
    assert chunks_of(decoder, b'\n\r\ndata: {"n": 3}\n\ndata: [DONE]\n\n') == [{"n": 2}, {"n": 3}]
    assert decoder.done
    assert decoder.received == 3
    decoder.end()  # the end after [DONE] is no error


def test_nothing_after_done_is_a_chunk() -> None:
    decoder = chunk_decoder()
    assert chunks_of(decoder, b'data: {"n": 1}\n\ndata: [DONE]\n\ndata: {"n": 2}\n\n') == [{"n": 1}]
    assert chunks_of(decoder, b'data: {"n": 3}\n\n') == []
    assert decoder.received == 1


@pytest.mark.parametrize("last", [b"data: [DONE]", b"data: [DONE]\n", b"data: [DONE]\r"])
def test_done_as_the_last_line_of_the_body_ends_the_stream(last: bytes) -> None:
    decoder = chunk_decoder()
    assert chunks_of(decoder, b'data: {"n": 1}\n\n' + last) == [{"n": 1}]
    decoder.end()
    assert decoder.done


@pytest.mark.parametrize(
    ("reads", "cut"),
    [
        ([b'data: {"n": 1}\n\n', b'data: {"n": 2}\n'], "in the middle of an event"),
        ([b'data: {"n": 1}\n\n', b'data: {"n": 2'], "in the middle of an event"),
        ([b'data: {"n": 1}\n\n'], "the stream ended before"),
        ([b'data: {"n": 1}\n\n', b"data: [DON"], "in the middle of an event"),
    ],
)
def test_a_stream_cut_short_raises_after_its_complete_chunks(reads: list[bytes], cut: str) -> None:
    decoder = chunk_decoder()
    received = [chunk for data in reads for chunk in chunks_of(decoder, data)]
    assert received == [{"n": 1}]
    with pytest.raises(IncompleteStreamError, match=cut) as caught:
        decoder.end()
    assert caught.value.received == 1
    assert caught.value.chunks == [{"n": 1}]


def test_an_event_over_the_limit_is_a_reply_too_large() -> None:
    decoder = chunk_decoder()
    assert chunks_of(decoder, b'data: {"n": 1}\n\n') == [{"n": 1}]
    with pytest.raises(ResponseTooLargeError, match="max_event_size") as caught:
        decoder.feed(b"data: " + b"x" * DEFAULT_MAX_EVENT_SIZE + b"\n\n")
    assert caught.value.limit == DEFAULT_MAX_EVENT_SIZE
    assert caught.value.received > DEFAULT_MAX_EVENT_SIZE  # the bytes fed, counted


def test_feed_data_only_takes_reads_whose_events_are_each_one_data_line() -> None:
    decoder = SSEDecoder(max_event_size=16)
    assert decoder.feed_data_only(b"data: a\n\n") == [b"a"]
    assert decoder.feed_data_only(b"data: bc\n\n") == [b"bc"]
    assert decoder.feed_data_only(b"data: d\n\ndata: {}\n\ndata: e") == [b"d", b"{}"]
    assert decoder.pending  # the unfinished line was fed
    assert decoder.feed_data_only(b"f\n\ndata: g") == [b"ef"]  # it ends in the next read
    assert decoder.feed_data_only(b"\n") is None  # no event completed
    assert decoder.feed(b"\n\n") == [E("g")]
    for other in (
        b"data: b\ndata: c\n\n",  # two lines
        b"data: b\n\nevent: x\ndata: c\n\n",  # an event of another type
        b"data: b\n\n\n\ndata: c\n\n",  # a blank line between events
        b"data: b\rc\n\n",  # a CR ends a line
        b"id: 1\n\n",
        b"data: 0123456789a\n\n",  # over the limit: feed raises
        b"data: partial",  # no event completed
    ):
        assert decoder.feed_data_only(other) is None
        assert not decoder.pending  # nothing consumed
    with pytest.raises(SSEEventTooLargeError):
        decoder.feed(b"data: 0123456789a\n\n")


def test_feed_data_only_leaves_a_byte_order_mark_to_feed() -> None:
    decoder = SSEDecoder()
    assert decoder.feed_data_only(_BOM + b"data: a\n\n") is None
    assert decoder.feed(_BOM[:1]) == []  # maybe the start of a BOM: held back
    assert decoder.feed_data_only(b"data: a\n\n") is None
    assert decoder.feed(b"data: a\n\n") == []  # "\xefdata" is a field of another name
    assert decoder.feed_data_only(b"data: b\n\n") == [b"b"]


def test_feed_data_only_waits_while_an_event_is_under_way() -> None:
    decoder = SSEDecoder()
    decoder.feed(b"data: a\n\n")
    assert decoder.feed(b"event: b\n") == []
    assert decoder.feed_data_only(b"data: c\n\n") is None  # its type came in an earlier read
    assert decoder.feed(b"data: c\n\n") == [E("c", "b")]
    assert decoder.feed(b"data: d\r") == []
    assert decoder.feed_data_only(b"\ndata: e\n\n") is None  # a CR ended the last read
    assert decoder.feed(b"\n") == []  # the LF of that CRLF
    assert decoder.feed(b"\n") == [E("d")]
    assert decoder.feed_data_only(b"data: e\n\n") == [b"e"]
    decoder.close()
    assert decoder.feed_data_only(b"data: f\n\n") is None  # closed: feed raises
