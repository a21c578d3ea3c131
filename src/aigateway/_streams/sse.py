"""An incremental, sans-io decoder for Server-Sent Events (``text/event-stream``).

Streaming endpoints of the gateway answer with an event stream. This module turns the bytes of
such a stream into `ServerSentEvent` objects and does no I/O of its own: the caller reads bytes
however it likes (the sync client, the async client, a test feeding literals) and hands them to
one `SSEDecoder`, the way h11 separates protocol logic from sockets. Streams decode their events
into typed chunks with it (`aigateway._streams.chunks`).

The decoder follows the "event stream interpretation" rules of the WHATWG HTML standard
(https://html.spec.whatwg.org/multipage/server-sent-events.html):

* lines end in LF, CR or CRLF, also when the CR and the LF arrive in different chunks;
* one UTF-8 byte order mark at the very start of the stream is skipped;
* text is UTF-8, invalid sequences become U+FFFD; chunks may split anywhere, even inside a
  character, since only complete lines are decoded;
* a blank line dispatches the event; lines starting with ``:`` are comments; a line without a
  colon is a field name with an empty value; one space after the colon is dropped;
* ``data`` lines are joined with ``\\n``; an event without any ``data`` line is not dispatched;
  ``event`` sets the type (default ``"message"``); ``id`` sets the last event id, which persists
  across events and is ignored when it contains NUL; ``retry`` is used only when it is all
  ASCII digits; other fields are ignored;
* at the end of the stream an unfinished event is dropped, not dispatched; `SSEDecoder.pending`
  tells the caller that this happened, so it can report a truncated stream (or, leniently,
  ``close(dispatch_unfinished=True)`` dispatches it, for servers that end on a line).

One event may hold at most ``max_event_size`` bytes (1 MiB by default), counting the bytes of
its field lines without line ends; any single line, comments included, is held to the same
limit. Going over raises `SSEEventTooLargeError`, so a peer sending one endless line cannot make
the decoder buffer unbounded memory.

The decoder is built for the hot path of streaming completions: it works on ``bytes`` with C
level searches (``in``, ``split``, ``replace``), never looks at a byte twice when a long line
arrives in many small chunks, and decodes UTF-8 once per event. `SSEDecoder.feed_data_only`
goes further for the events completions are made of, one ``data:`` line each: it returns
their data undecoded, for a parser that reads bytes, without building events at all.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, fields
from typing import Any

__all__ = [
    "DEFAULT_MAX_EVENT_SIZE",
    "SSEDecodeError",
    "SSEDecoder",
    "SSEEventTooLargeError",
    "ServerSentEvent",
]

DEFAULT_MAX_EVENT_SIZE = 1_048_576
"""Default limit, in bytes, on one event (and on any one line) of a stream: 1 MiB."""

_BOM = b"\xef\xbb\xbf"


class SSEDecodeError(ValueError):
    """Base class of the errors raised while decoding an event stream."""


class SSEEventTooLargeError(SSEDecodeError):
    """An event, or a single line of the stream, exceeded the decoder's ``max_event_size``."""


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    """One dispatched event of an event stream."""

    data: str
    """The ``data`` lines of the event, joined with ``\\n``."""
    event: str = "message"
    """The event type: the last ``event`` field of the event, or ``"message"``."""
    id: str | None = None
    """The last event id in effect when the event was dispatched (it persists across events);
    ``None`` if the stream has not sent any ``id`` yet, ``""`` if it reset it with an empty id."""
    retry: int | None = None
    """The reconnection time in milliseconds, if this event carried a valid ``retry`` field."""


# Hot path: ServerSentEvent's frozen-dataclass __init__ (one object.__setattr__ per field) takes
# about 0.5 us, nearly half of the decoder's time per event; setting the slots through their
# descriptors takes about 0.25 us and gives the very same instances. Built from fields(), so a
# field added to ServerSentEvent breaks the unpacking in _process loudly, not silently.
_EVENT_BUILDERS: tuple[Any, ...] = (
    object.__new__,
    *(vars(ServerSentEvent)[field.name].__set__ for field in fields(ServerSentEvent)),
)


def _too_large(limit: int) -> SSEEventTooLargeError:
    return SSEEventTooLargeError(
        f"server-sent event exceeded the limit of {limit} bytes (max_event_size)"
    )


class SSEDecoder:
    """Incremental event stream decoder: feed it bytes, get back completed events.

    ``feed()`` the chunks in order as they arrive, then call ``close()`` at the end of the input
    and check `pending` to learn whether the stream was cut short::

        decoder = SSEDecoder()
        for chunk in chunks:
            for event in decoder.feed(chunk):
                handle(event)
        decoder.close()
        if decoder.pending:
            ...  # the stream ended mid-line or mid-event

    After a decoder has raised, it must not be used again.
    """

    __slots__ = (
        "_after_cr",
        "_at_event_start",
        "_bom_buf",
        "_bom_done",
        "_closed",
        "_data",
        "_event_retry",
        "_event_size",
        "_event_type",
        "_id_buffer",
        "_last_event_id",
        "_max_event_size",
        "_partial",
        "_retry",
    )

    def __init__(self, *, max_event_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        """Create a decoder for one stream; ``max_event_size`` bounds one event, in bytes."""
        if max_event_size < 1:
            raise ValueError(f"max_event_size must be at least 1, not {max_event_size}")
        self._max_event_size = max_event_size
        self._bom_done = False  # True once the first bytes have been checked for a BOM
        self._bom_buf = b""  # the first bytes of the stream while they could still be a BOM
        self._after_cr = False  # the last chunk ended in CR: an LF starting the next is skipped
        self._partial = bytearray()  # an unterminated line
        self._data: list[bytes] = []  # the data lines of the current event
        self._event_size = 0  # bytes of the current event's field lines; 0 = no event started
        self._event_type: bytes | None = None
        self._event_retry: int | None = None
        self._id_buffer: str | None = None
        self._last_event_id: str | None = None
        self._retry: int | None = None
        self._closed = False
        # no field line of the next event read yet (a line may be unfinished), no CR pending
        self._at_event_start = True

    @property
    def pending(self) -> bool:
        """Whether an unfinished line or event is buffered.

        True after bytes of a line without its line end, or after field lines of an event
        without the blank line that dispatches it. Comment lines alone do not count. Checked
        after `close`, True means the stream ended mid-line or mid-event and that data was
        dropped, as the standard requires.
        """
        return bool(self._event_size or self._partial or self._bom_buf)

    @property
    def last_event_id(self) -> str | None:
        """The stream's last event id, as of the last blank line (``None`` if never set)."""
        return self._last_event_id

    @property
    def retry(self) -> int | None:
        """The last valid reconnection time (ms) the stream sent, even in an undispatched event."""
        return self._retry

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """Decode the next piece of the stream; return the events it completes, in order.

        Raises `SSEEventTooLargeError` when an event or a line goes over ``max_event_size``;
        events completed earlier in the same chunk are then lost with it.
        """
        if self._closed:
            raise RuntimeError("SSEDecoder.feed() called after close()")
        if not self._bom_done:
            chunk = self._bom_buf + chunk
            if len(chunk) < len(_BOM) and _BOM.startswith(chunk):
                self._bom_buf = chunk  # too short to tell yet
                self._at_event_start = False
                return []
            self._bom_done = True
            self._bom_buf = b""
            if chunk.startswith(_BOM):
                chunk = chunk[len(_BOM) :]
        if self._after_cr and chunk:
            self._after_cr = False
            if chunk[0] == 0x0A:  # the LF of a CRLF split across chunks
                chunk = chunk[1:]
        if not chunk:
            return []
        if 13 in chunk:  # CR
            self._after_cr = chunk[-1] == 0x0D
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = chunk.split(b"\n")
        tail = lines.pop()  # the unterminated rest; b"" if the chunk ends with a line end
        partial = self._partial
        if partial:
            if not lines:
                if len(partial) + len(tail) > self._max_event_size:
                    raise _too_large(self._max_event_size)
                partial += tail
                return []
            partial += lines[0]
            lines[0] = bytes(partial)
            partial.clear()
        events = self._process(lines) if lines else []
        if tail:
            if len(tail) > self._max_event_size:
                raise _too_large(self._max_event_size)
            partial += tail
        self._at_event_start = not (self._event_size or self._after_cr)
        return events

    def feed_data_only(self, chunk: bytes) -> list[bytes] | None:
        """Feed ``chunk`` if each event it completes is a single ``data:`` line and no line of
        those events came before it; return the data of those events, undecoded. Otherwise
        return None without consuming anything (call `feed`).

        This is the hot path of a streamed completion, whose events are all of this kind: the
        result is the data of the events `feed` would dispatch (type ``message``, the last
        event id unchanged), found with a few searches over the whole chunk instead of
        splitting it into lines, building each event and decoding its text.
        """
        if not self._at_event_start or 13 in chunk:  # 13: CR (as an int, the test is a memchr)
            return None
        if not self._bom_done:  # the first read: "data: " is no byte order mark
            if not chunk.startswith(b"data: "):
                return None
            self._bom_done = True  # what feed would decide of this chunk too
        partial = self._partial
        if not partial and chunk.endswith(b"\n\n") and chunk.startswith(b"data: "):
            data = chunk[6:-2]  # the commonest read: one whole event
            if 10 not in data and len(chunk) - 2 <= self._max_event_size:
                return [data]
        text = bytes(partial) + chunk if partial else chunk
        pieces = text.split(b"\n\n")
        rest = pieces.pop()  # after the last blank line: an unfinished line or event, or b""
        # each event one data line: no line end inside (10: LF, as an int the test is a memchr)
        events = [piece[6:] for piece in pieces if piece[:6] == b"data: " and 10 not in piece]
        if not events or len(events) != len(pieces) or max(map(len, pieces)) > self._max_event_size:
            return None
        partial.clear()
        if rest:
            self.feed(rest)  # completes no event: it holds no blank line
        return events

    def close(self, *, dispatch_unfinished: bool = False) -> list[ServerSentEvent]:
        """Mark the end of the input and return the events it completes.

        Under the WHATWG rules the end of the stream completes nothing: an unfinished line or
        event is dropped, so this returns an empty list (kept so callers can treat it like
        `feed`). Whether something was dropped is told by `pending`, which keeps its value
        after the call. Calling ``close()`` again is harmless; ``feed()`` after it raises.

        With ``dispatch_unfinished``, the end of the input also ends the last line and the last
        event, as if a blank line followed, and returns that event (then nothing is pending):
        some servers end the body right after a stream's final line. Whether an event cut
        short this way can be trusted is the caller's decision.
        """
        events: list[ServerSentEvent] = []
        if dispatch_unfinished and not self._closed:
            partial = self._partial
            events = self._process([bytes(partial), b""] if partial else [b""])
            partial.clear()
        self._closed = True
        self._at_event_start = False
        return events

    def _process(self, lines: list[bytes]) -> list[ServerSentEvent]:
        """Interpret complete lines (line ends already removed); return the dispatched events."""
        # The per-event state lives in locals for the loop (this is the hot path) and is
        # written back at the end.
        events: list[ServerSentEvent] = []
        limit = self._max_event_size
        data = self._data
        size = self._event_size
        event_type = self._event_type
        event_retry = self._event_retry
        id_buffer = self._id_buffer
        new, set_data, set_event, set_id, set_retry = _EVENT_BUILDERS
        for line in lines:
            if not line:  # blank line: dispatch
                if size:
                    size = 0
                    if data:
                        event = new(ServerSentEvent)
                        set_data(event, b"\n".join(data).decode("utf-8", "replace"))
                        set_event(
                            event,
                            event_type.decode("utf-8", "replace") if event_type else "message",
                        )
                        set_id(event, id_buffer)
                        set_retry(event, event_retry)
                        events.append(event)
                        data.clear()
                    event_type = event_retry = None
                    self._last_event_id = id_buffer
                continue
            if line.startswith(b"data: "):  # the common case first
                size += len(line)
                if size > limit:
                    raise _too_large(limit)
                data.append(line[6:])
                continue
            if line[0] == 0x3A:  # ":" comment
                if len(line) > limit:
                    raise _too_large(limit)
                continue
            size += len(line)
            if size > limit:
                raise _too_large(limit)
            field, colon, value = line.partition(b":")
            if colon and value[:1] == b" ":
                value = value[1:]
            if field == b"data":
                data.append(value)
            elif field == b"event":
                event_type = value
            elif field == b"id":
                if b"\x00" not in value:
                    id_buffer = value.decode("utf-8", "replace")
            elif field == b"retry" and value.isdigit():  # bytes.isdigit: ASCII digits only
                # suppress: more digits than int() converts is not a real delay either
                with contextlib.suppress(ValueError):
                    event_retry = self._retry = int(value.lstrip(b"0") or b"0")
        self._event_size = size
        self._event_type = event_type
        self._event_retry = event_retry
        self._id_buffer = id_buffer
        return events
