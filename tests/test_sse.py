"""Tests of the sans-io Server-Sent Events decoder in `aigateway._sse` (WHATWG rules)."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import AsyncIterator, Iterable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aigateway._sse import (
    DEFAULT_MAX_EVENT_SIZE,
    ServerSentEvent,
    SSEDecodeError,
    SSEDecoder,
    SSEEventTooLargeError,
    SSEIncompleteStreamError,
    aiter_events,
    iter_events,
)

E = ServerSentEvent


def decode(*chunks: bytes, max_event_size: int = DEFAULT_MAX_EVENT_SIZE) -> list[ServerSentEvent]:
    """Feed the chunks in order and close; return every event."""
    decoder = SSEDecoder(max_event_size=max_event_size)
    events: list[ServerSentEvent] = []
    for chunk in chunks:
        events.extend(decoder.feed(chunk))
    events.extend(decoder.close())
    return events


def decode_all(
    chunks: Iterable[bytes], max_event_size: int = DEFAULT_MAX_EVENT_SIZE
) -> tuple[list[ServerSentEvent], bool, str | None, int | None]:
    """Feed the chunks and close; return (events, pending, last_event_id, retry)."""
    decoder = SSEDecoder(max_event_size=max_event_size)
    events: list[ServerSentEvent] = []
    for chunk in chunks:
        events.extend(decoder.feed(chunk))
    events.extend(decoder.close())
    return events, decoder.pending, decoder.last_event_id, decoder.retry


# --- basics and the event object ------------------------------------------------------------


def test_single_event() -> None:
    assert decode(b"data: hello\n\n") == [E("hello", "message", None, None)]


def test_several_events_in_one_chunk() -> None:
    assert decode(b"data: 1\n\ndata: 2\n\ndata: 3\n\n") == [E("1"), E("2"), E("3")]


def test_event_defaults_and_immutability() -> None:
    event = decode(b"data: x\n\n")[0]
    assert (event.data, event.event, event.id, event.retry) == ("x", "message", None, None)
    assert event == E("x")
    assert hash(event) == hash(E("x"))
    assert repr(event) == "ServerSentEvent(data='x', event='message', id=None, retry=None)"
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.data = "y"  # type: ignore[misc]
    assert not hasattr(event, "__dict__")


def test_empty_input() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"") == []
    assert decoder.close() == []
    assert not decoder.pending


# --- line ends ------------------------------------------------------------------------------


@pytest.mark.parametrize("eol", [b"\n", b"\r", b"\r\n"], ids=["LF", "CR", "CRLF"])
def test_line_end_styles(eol: bytes) -> None:
    stream = eol.join([b"event: e", b"data: a", b"data: b", b"", b"data: c", b"", b""])
    assert decode(stream) == [E("a\nb", "e"), E("c")]


def test_mixed_line_ends() -> None:
    assert decode(b"data: a\rdata: b\r\ndata: c\n\r\n") == [E("a\nb\nc")]


def test_cr_and_lf_are_two_line_ends_when_reversed() -> None:
    # LF then CR is two line ends: the CR ends an empty line, which dispatches.
    assert decode(b"data: a\n\rdata: b\n\n") == [E("a"), E("b")]


def test_crlf_split_across_chunks_is_one_line_end() -> None:
    # If the CR and the LF counted twice, the LF would be a blank line dispatching "a" alone.
    assert decode(b"data: a\r", b"\ndata: b\r\n\r\n") == [E("a\nb")]
    assert decode(b"data: a\r", b"\n", b"data: b\r", b"\n\r", b"\n") == [E("a\nb")]


def test_crlf_split_with_empty_chunks_between() -> None:
    assert decode(b"data: a\r", b"", b"", b"\ndata: b\n\n") == [E("a\nb")]


def test_cr_at_chunk_end_followed_by_other_bytes() -> None:
    assert decode(b"data: a\r", b"data: b\r", b"\r") == [E("a\nb")]
    # CR, then CRLF in the next chunk: two line ends, so the event is dispatched.
    assert decode(b"data: a\r", b"\r\n") == [E("a")]


def test_lone_cr_then_lf_chunk_only_swallows_one_lf() -> None:
    # "\r" | "\n\n": the first LF completes the CRLF, the second is a blank line.
    assert decode(b"data: a\r", b"\n\n") == [E("a")]


# --- BOM ------------------------------------------------------------------------------------


def test_leading_bom_is_skipped() -> None:
    assert decode(b"\xef\xbb\xbfdata: x\n\n") == [E("x")]


def test_leading_bom_split_across_chunks() -> None:
    assert decode(b"\xef", b"\xbb", b"\xbfdata: x\n\n") == [E("x")]
    assert decode(b"\xef\xbb", b"\xbf", b"data: x\n\n") == [E("x")]


def test_bom_only_at_the_very_start() -> None:
    # A second BOM is part of the field name, so "\ufeffdata" is an unknown field.
    assert decode(b"\xef\xbb\xbf\xef\xbb\xbfdata: x\n\n") == []
    assert decode(b"data: x\n\n\xef\xbb\xbfdata: y\n\n") == [E("x")]
    assert decode(b"data: x\n\n", b"\xef\xbb\xbfdata: y\n\n") == [E("x")]


def test_bom_inside_a_value_is_kept() -> None:
    assert decode(b"data: \xef\xbb\xbfx\n\n") == [E("\ufeffx")]


def test_partial_bom_prefix_that_is_not_a_bom() -> None:
    # "\xef\xbb" followed by something else is not a BOM: those bytes stay (and are invalid).
    assert decode(b"\xef\xbb", b"data: x\n\n") == []  # field name "\ufffddata" is unknown
    assert decode(b"\xefdata: x\n\n\xef\xbb\xbfdata: y\n\n") == []


# --- fields ---------------------------------------------------------------------------------


def test_multi_line_data_joined_and_trailing_newline_removed_once() -> None:
    assert decode(b"data: a\ndata: b\n\n") == [E("a\nb")]
    assert decode(b"data: a\ndata: b\ndata:\n\n") == [E("a\nb\n")]
    assert decode(b"data:\ndata:\n\n") == [E("\n")]


def test_empty_data_field_dispatches_an_empty_event() -> None:
    assert decode(b"data:\n\n") == [E("")]
    assert decode(b"data: \n\n") == [E("")]


def test_comments_are_ignored() -> None:
    assert decode(b": hello\ndata: x\n:\n: more\n\n") == [E("x")]
    assert decode(b":keep-alive\n\n:keep-alive\n\n") == []


def test_field_without_colon_has_empty_value() -> None:
    assert decode(b"data\n\n") == [E("")]
    assert decode(b"data\ndata\n\n") == [E("\n")]
    assert decode(b"event\ndata: x\n\n") == [E("x", "message")]
    assert decode(b"id: 1\ndata: a\n\nid\ndata: b\n\n") == [E("a", id="1"), E("b", id="")]


def test_only_one_leading_space_is_removed() -> None:
    assert decode(b"data:x\n\n") == [E("x")]
    assert decode(b"data: x\n\n") == [E("x")]
    assert decode(b"data:  x \n\n") == [E(" x ")]
    assert decode(b"data:\tx\n\n") == [E("\tx")]
    assert decode(b"event:  spaced\ndata: x\n\n") == [E("x", " spaced")]


def test_value_may_contain_colons() -> None:
    assert decode(b'data: {"a": "b:c"}\n\n') == [E('{"a": "b:c"}')]
    assert decode(b"data::x\n\n") == [E(":x")]


def test_event_type() -> None:
    assert decode(b"event: update\ndata: x\n\n") == [E("x", "update")]
    assert decode(b"event: a\nevent: b\ndata: x\n\n") == [E("x", "b")]
    assert decode(b"event:\ndata: x\n\n") == [E("x", "message")]
    # The type does not carry over to the next event.
    assert decode(b"event: a\ndata: x\n\ndata: y\n\n") == [E("x", "a"), E("y")]


def test_event_without_data_is_not_dispatched_and_resets_type() -> None:
    assert decode(b"event: foo\n\n") == []
    assert decode(b"event: foo\n\ndata: x\n\n") == [E("x", "message")]
    assert decode(b"id: 1\nretry: 5\n\n") == []


def test_id_persists_across_events() -> None:
    stream = b"id: 7\ndata: a\n\ndata: b\n\nid: 8\ndata: c\n\n"
    assert decode(stream) == [E("a", id="7"), E("b", id="7"), E("c", id="8")]


def test_id_with_nul_is_ignored() -> None:
    stream = b"id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n"
    assert decode(stream) == [E("a", id="1"), E("b", id="1")]
    assert decode(b"id: \x00\ndata: a\n\n") == [E("a", id=None)]


def test_id_with_other_text_is_kept_as_is() -> None:
    assert decode("id: ünï 1 \ndata: a\n\n".encode()) == [E("a", id="ünï 1 ")]


def test_last_event_id_property() -> None:
    decoder = SSEDecoder()
    assert decoder.last_event_id is None
    # An event without data still updates the last event id at its blank line...
    assert decoder.feed(b"id: 9\n\n") == []
    assert decoder.last_event_id == "9"
    # ...but an id line is only applied once its event ends.
    decoder.feed(b"id: 10\ndata: x\n")
    assert decoder.last_event_id == "9"
    assert decoder.feed(b"\n") == [E("x", id="10")]
    assert decoder.last_event_id == "10"
    decoder.feed(b"id: 11\ndata: y\n")
    decoder.close()
    assert decoder.last_event_id == "10"


def test_retry_is_exposed_on_the_event_that_set_it() -> None:
    assert decode(b"retry: 1500\ndata: a\n\ndata: b\n\n") == [E("a", retry=1500), E("b")]
    assert decode(b"retry: 000123\ndata: a\n\n") == [E("a", retry=123)]
    assert decode(b"retry: 1\nretry: 2\ndata: a\n\n") == [E("a", retry=2)]
    assert decode(b"retry: 0\ndata: a\n\n") == [E("a", retry=0)]


@pytest.mark.parametrize(
    "value",
    [
        b"",
        b"15x",
        b"-1",
        b"+1",
        b"1.5",
        b" 15",
        b"15 ",
        b"1e3",
        "\u0661\u0662".encode(),
        "\uff11\uff12".encode(),
    ],
)
def test_retry_must_be_ascii_digits(value: bytes) -> None:
    assert decode(b"retry: 7\ndata: a\n\nretry: " + value + b"\ndata: b\n\n") == [
        E("a", retry=7),
        E("b"),
    ]


def test_retry_property_keeps_the_last_valid_value() -> None:
    decoder = SSEDecoder()
    assert decoder.retry is None
    decoder.feed(b"retry: 3000\n\n")  # not dispatched, but the reconnection time is set
    assert decoder.retry == 3000
    decoder.feed(b"retry: x\ndata: a\n\n")
    assert decoder.retry == 3000


def test_absurdly_long_retry_is_ignored_without_crashing() -> None:
    stream = b"retry: " + b"9" * 10_000 + b"\ndata: a\n\n"
    assert decode(stream) == [E("a")]
    stream = b"retry: " + b"0" * 10_000 + b"42\ndata: a\n\n"
    assert decode(stream) == [E("a", retry=42)]


def test_unknown_fields_are_ignored() -> None:
    stream = b"foo: bar\ndata: x\nDATA: y\nData: z\ndata : w\nbaz\n\n"
    assert decode(stream) == [E("x")]
    assert decode(b"foo: bar\n\n") == []


# --- UTF-8 ----------------------------------------------------------------------------------


def test_multibyte_character_split_at_every_byte() -> None:
    text = "héllo € 😀 日本"
    stream = b"event: \xc3\xa9v\ndata: " + text.encode() + b"\n\n"
    for cut in range(len(stream) + 1):
        assert decode(stream[:cut], stream[cut:]) == [E(text, "év")], cut
    assert decode(*(stream[i : i + 1] for i in range(len(stream)))) == [E(text, "év")]


def test_invalid_utf8_is_replaced() -> None:
    assert decode(b"data: a\xffb\n\n") == [E("a\ufffdb")]
    # A sequence cut short by the line end is replaced; it does not swallow the LF.
    assert decode(b"data: \xe2\x82\ndata: x\n\n") == [E("\ufffd\nx")]
    assert decode(b"event: \xff\ndata: x\n\n") == [E("x", "\ufffd")]


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


# --- property tests -------------------------------------------------------------------------

_NO_EOL = st.characters(exclude_characters="\r\n", exclude_categories=["Cs"])
_TEXT = st.one_of(
    st.text(st.sampled_from("ab :x0"), max_size=6),
    st.text(_NO_EOL, max_size=10),  # any Unicode, multi-byte included
)
_NAME = st.text(
    st.characters(exclude_characters="\r\n:\ufeff", exclude_categories=["Cs"]),
    min_size=1,
    max_size=6,
).filter(lambda name: name not in {"data", "event", "id", "retry"})
_RETRY = st.one_of(
    st.integers(0, 10**12).map(str),
    st.from_regex(r"0*[0-9]{1,4}", fullmatch=True),
    _TEXT,
)
_ITEM = st.one_of(
    st.tuples(st.just("data"), _TEXT),
    st.tuples(st.just("data"), _TEXT),  # twice as likely: most lines are data
    st.tuples(st.just("event"), _TEXT),
    st.tuples(st.just("id"), st.one_of(_TEXT, _TEXT.map(lambda t: t + "\x00"))),
    st.tuples(st.just("retry"), _RETRY),
    st.tuples(st.just(":"), _TEXT),  # comment
    st.tuples(_NAME, _TEXT),  # unknown field
)
_EVENT = st.lists(_ITEM, max_size=5)
_EOL = st.sampled_from(["\n", "\r", "\r\n"])


@dataclasses.dataclass
class Stream:
    raw: bytes
    events: list[ServerSentEvent]
    pending: bool
    last_event_id: str | None
    retry: int | None
    lines: list[tuple[int, bool]]  # (byte length, is comment) of each line; (0, False) = blank
    partial: int  # byte length of the unterminated last line


def _line(draw: Any, name: str, value: str) -> str:
    if name == ":":
        return ":" + value
    forms = [f"{name}: {value}"]
    if not value.startswith(" "):
        forms.append(f"{name}:{value}")
    if value == "":
        forms.append(name)
    return str(draw(st.sampled_from(forms)))


@st.composite
def streams(draw: Any) -> Stream:
    """A random event stream, plus what a correct decoder must make of it."""
    complete = draw(st.lists(_EVENT, max_size=6))
    unfinished = draw(st.one_of(st.just([]), _EVENT))
    partial_item = draw(st.one_of(st.none(), _ITEM))
    partial = "" if partial_item is None else _line(draw, *partial_item)

    out = ["\ufeff"] if draw(st.booleans()) else []
    lines: list[tuple[int, bool]] = []
    previous_eol = ""

    def emit(text: str) -> None:
        nonlocal previous_eol
        eol = draw(_EOL)
        if previous_eol == "\r" and text == "" and eol == "\n":
            eol = "\r"  # "\r" + "\n" would be one CRLF and swallow this blank line
        out.append(text + eol)
        previous_eol = eol
        lines.append((len(text.encode()), text.startswith(":")))

    events: list[ServerSentEvent] = []
    last_id: str | None = None
    last_retry: int | None = None
    for items in complete:
        data: list[str] = []
        event_type = ""
        retry: int | None = None
        for name, value in items:
            emit(_line(draw, name, value))
            if name == "data":
                data.append(value)
            elif name == "event":
                event_type = value
            elif name == "id" and "\x00" not in value:
                last_id = value
            elif name == "retry" and value and all(c in "0123456789" for c in value):
                retry = last_retry = int(value)
        emit("")
        if data:
            events.append(ServerSentEvent("\n".join(data), event_type or "message", last_id, retry))
    for name, value in unfinished:
        emit(_line(draw, name, value))
        if name == "retry" and value and all(c in "0123456789" for c in value):
            last_retry = int(value)  # applied at once, even though the event is dropped
    out.append(partial)

    pending = bool(partial) or any(name != ":" for name, _ in unfinished)
    raw = "".join(out).encode()
    return Stream(raw, events, pending, last_id, last_retry, lines, len(partial.encode()))


def _split(raw: bytes, cuts: list[int]) -> list[bytes]:
    bounds = [0, *sorted(cuts), len(raw)]
    return [raw[a:b] for a, b in itertools.pairwise(bounds)]


_FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_FAST
@given(stream=streams(), data=st.data())
def test_any_split_decodes_like_the_whole_stream(stream: Stream, data: st.DataObject) -> None:
    expected = (stream.events, stream.pending, stream.last_event_id, stream.retry)
    assert decode_all([stream.raw]) == expected
    assert decode_all(stream.raw[i : i + 1] for i in range(len(stream.raw))) == expected
    cuts = data.draw(st.lists(st.integers(0, len(stream.raw)), max_size=12), label="cuts")
    assert decode_all(_split(stream.raw, cuts)) == expected


@_FAST
@given(stream=streams(), limit=st.integers(1, 40), data=st.data())
def test_size_limit_does_not_depend_on_the_split(
    stream: Stream, limit: int, data: st.DataObject
) -> None:
    # Expected: some event's field lines add up to more than the limit, or one line alone
    # (a comment, or the unterminated last line) is longer than the limit.
    too_large = stream.partial > limit
    size = 0
    for length, is_comment in stream.lines:
        if is_comment:
            too_large |= length > limit
        elif length == 0:
            size = 0
        else:
            size += length
            too_large |= size > limit

    cuts = data.draw(st.lists(st.integers(0, len(stream.raw)), max_size=12), label="cuts")
    for chunks in ([stream.raw], _split(stream.raw, cuts)):
        if too_large:
            with pytest.raises(SSEEventTooLargeError):
                decode_all(chunks, max_event_size=limit)
        else:
            assert decode_all(chunks, max_event_size=limit)[0] == stream.events
