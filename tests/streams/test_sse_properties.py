"""Property tests (hypothesis) of the SSE decoder in `aigateway._streams.sse`: random streams, cut
into chunks anywhere, decode like the whole stream, and the size limit does not depend on
where the chunks are cut."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aigateway._streams.sse import ServerSentEvent, SSEEventTooLargeError

from ._sse_helpers import decode_all

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
def streams(draw: Any, eols: st.SearchStrategy[str] = _EOL) -> Stream:
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
        eol = draw(eols)
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
    assert decode_all(_split(stream.raw, cuts), data_only=True) == expected


@settings(_FAST, max_examples=500)
@given(stream=streams(st.sampled_from(["\n", "\n", "\n", "\r", "\r\n"])), data=st.data())
def test_reads_cut_at_line_ends_decode_alike_through_the_data_only_path(
    stream: Stream, data: st.DataObject
) -> None:
    # Reads that end at line ends, as streaming servers send them: feed_data_only takes those
    # whose events are all one data line, feed the others, and the two decode like one.
    line_ends = [i + 1 for i, byte in enumerate(stream.raw) if byte in b"\r\n"]
    keep = data.draw(st.lists(st.booleans(), min_size=len(line_ends), max_size=len(line_ends)))
    cuts = [end for end, kept in zip(line_ends, keep, strict=True) if kept]
    expected = (stream.events, stream.pending, stream.last_event_id, stream.retry)
    assert decode_all(_split(stream.raw, cuts), data_only=True) == expected


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
    for chunks, data_only in itertools.product(
        ([stream.raw], _split(stream.raw, cuts)), (False, True)
    ):
        if too_large:
            with pytest.raises(SSEEventTooLargeError):
                decode_all(chunks, max_event_size=limit, data_only=data_only)
        else:
            assert decode_all(chunks, max_event_size=limit, data_only=data_only)[0] == stream.events
