"""The sans-io Server-Sent Events decoder in `aigateway._streams.sse`, line by line (WHATWG rules):
the event object, line ends, the byte order mark, the fields (data, event, id, retry, comments,
unknown ones) and UTF-8 decoding."""

from __future__ import annotations

import dataclasses

import pytest

from aigateway._streams.sse import SSEDecoder

from ._sse_helpers import E, decode

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
