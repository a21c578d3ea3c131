"""The SSE decoder in `aigateway._streams.sse` over a whole stream: the end of a stream (pending
events, close), the event size limit, and the `iter_events`/`aiter_events` helpers that
report an incomplete stream and pass the limit on."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable

import pytest

from aigateway._streams.sse import (
    _BOM,
    DEFAULT_MAX_EVENT_SIZE,
    ServerSentEvent,
    SSEDecodeError,
    SSEDecoder,
    SSEEventTooLargeError,
    SSEIncompleteStreamError,
    aiter_events,
    iter_events,
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
    assert issubclass(SSEIncompleteStreamError, SSEDecodeError)


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


# --- iteration helpers ----------------------------------------------------------------------


def test_iter_events() -> None:
    chunks = [b"data: a\n", b"\nevent: e\ndata: b\n\n", b"data: c\n\n"]
    assert list(iter_events(chunks)) == [E("a"), E("b", "e"), E("c")]
    assert list(iter_events(iter(chunks))) == [E("a"), E("b", "e"), E("c")]
    assert list(iter_events([])) == []


def test_iter_events_is_lazy_and_reports_an_incomplete_stream() -> None:
    seen: list[ServerSentEvent] = []
    with pytest.raises(SSEIncompleteStreamError):
        seen.extend(iter_events([b"data: a\n\n", b"data: b\n"]))
    assert seen == [E("a")]

    fed: list[bytes] = []

    def source() -> Iterable[bytes]:
        for chunk in [b"data: 1\n\n", b"data: 2\n\n"]:
            fed.append(chunk)
            yield chunk

    iterator = iter_events(source())
    assert next(iterator) == E("1")
    assert fed == [b"data: 1\n\n"]


def test_iter_events_passes_the_size_limit() -> None:
    with pytest.raises(SSEEventTooLargeError):
        list(iter_events([b"data: 0123456789\n\n"], max_event_size=8))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _achunks(chunks: list[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


@pytest.mark.anyio
async def test_aiter_events() -> None:
    chunks = [b"data: a\n", b"\nevent: e\ndata: b\n\n", b"data: c\r", b"\n\r\n"]
    events = [event async for event in aiter_events(_achunks(chunks))]
    assert events == [E("a"), E("b", "e"), E("c")]


@pytest.mark.anyio
async def test_aiter_events_reports_an_incomplete_stream() -> None:
    events = aiter_events(_achunks([b"data: a\n\n", b"data: b"]))
    assert await events.__anext__() == E("a")
    with pytest.raises(SSEIncompleteStreamError):
        await events.__anext__()


@pytest.mark.anyio
async def test_aiter_events_passes_the_size_limit() -> None:
    with pytest.raises(SSEEventTooLargeError):
        async for _ in aiter_events(_achunks([b"data: 0123456789\n\n"]), max_event_size=8):
            pass


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
