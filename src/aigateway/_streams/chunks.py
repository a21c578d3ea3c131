"""Events of a streamed reply in, typed chunks out: the sans-io `ChunkDecoder`.

Both ways a reply streams go through it: the server-sent events of an HTTP reply (bytes fed
as they arrive, decoded by `aigateway._streams.sse`) and the frames of a WebSocket (one chunk
each). It knows the end of a stream (``data: [DONE]``, the done frame), turns an error event or
frame into the matching API error, checks the stream's timers (`StreamTimer`) as data arrives,
and keeps only the count of chunks and the last `TAIL` of them, so memory stays flat however
long the stream. It reads nothing itself: the pipeline opening a stream, the streams and the
sockets hand it what they read.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

from aigateway._call.classify import error_event, read_json, request_failed
from aigateway._call.timeouts import StreamTimer
from aigateway._stacks import failure_kind
from aigateway._streams.sse import (
    DEFAULT_MAX_EVENT_SIZE,
    ServerSentEvent,
    SSEDecodeError,
    SSEDecoder,
    SSEEventTooLargeError,
)
from aigateway.errors import (
    APIError,
    APIResponseValidationError,
    IncompleteStreamError,
    ResponseTooLargeError,
    StreamConnectionError,
    StreamTimeoutError,
)

if TYPE_CHECKING:
    from aigateway._stacks import Response

__all__ = ["DONE", "DONE_OBJECT", "TAIL", "ChunkDecoder"]

DONE = "[DONE]"
"""The data of the event that ends a stream of server-sent events."""
_DONE_BYTES = DONE.encode()
DONE_OBJECT = "chat.completion.done"
"""The ``object`` of the WebSocket frame that ends a stream."""
TAIL = 16
"""How many of the last chunks a stream keeps, for the error of a stream cut short."""


def _object_of(text: str) -> object:
    body = read_json(text)
    return body.get("object") if isinstance(body, dict) else None


T = TypeVar("T")


class ChunkDecoder(Generic[T]):
    """Bytes of an event stream in, typed chunks out; no I/O.

    ``data: [DONE]`` marks the end; an event whose data is ``{"error": {...}}`` raises the
    matching API error; a chunk that does not parse raises `APIResponseValidationError`; a
    passed idle timeout or deadline raises `StreamTimeoutError`. Only the count of chunks and
    the last `TAIL` of them are kept.
    """

    def __init__(
        self,
        parse: Callable[[bytes], T],
        response: Response,
        *,
        timer: StreamTimer | None = None,
    ) -> None:
        self._parse = parse
        self.response = response
        self._sse = SSEDecoder()
        self._timer = timer
        self.done = False
        self.received = 0
        self.size = 0
        """Bytes fed so far (decompressed): what a stream over its event limit had received."""
        self.tail: deque[T] = deque(maxlen=TAIL)
        self.on_last: Callable[[Response, object], None] | None = None
        """Called with the last chunk `next_chunk` gives of the events fed so far (the stream
        notes the reply's credits with it)."""
        self.waiting: deque[ServerSentEvent | bytes] = deque()
        """Events fed whose chunks `next_chunk` has not given yet (of a data-only one, its data)."""

    def feed(self, data: bytes) -> bool:
        """Take the next bytes of the body; true when events are waiting for `next_chunk`.

        A chunk is parsed when it is asked for, not when its bytes arrive: one read can bring
        hundreds of events, and chunks parsed ahead would wait in memory (and each collection
        of the garbage collector would go through them) while the reader works through them."""
        self.size += len(data)
        try:
            simple = self._sse.feed_data_only(data)
            events = self._sse.feed(data) if simple is None else []
        except SSEDecodeError as exc:
            raise self._undecodable(exc, data) from exc
        if simple is not None:  # the common case: events of one data line each
            if self._timer is not None:
                self._check_time(True)
            if not self.done:
                if _DONE_BYTES in simple:
                    del simple[simple.index(_DONE_BYTES) :]
                    self.done = True
                self.waiting.extend(simple)
            return bool(self.waiting)
        if self._timer is not None:
            self._check_time(bool(events))  # before counting them: a late event trips the limit
        waiting = self.waiting
        for event in events:
            if event.data == DONE or self.done:
                self.done = True
                break
            waiting.append(event)
        return bool(waiting)

    def next_chunk(self) -> T | None:
        """The chunk of the next event fed, None when none is waiting. An error event raises
        its API error here, after the chunks before it."""
        waiting = self.waiting
        if not waiting:
            return None
        event = waiting.popleft()
        # The data of a data-only event, not decoded (`feed`), is parsed here as it came: the
        # hot path. Not `in`: bytes in bytes first tries its operand as an int, which raises
        # (and clears) a TypeError, as costly as the rest of this check.
        if isinstance(event, bytes):
            if event.find(b'"error"', 0, 32) >= 0:  # maybe an error object: the general path
                chunk = self._chunk_of(event.decode("utf-8", "replace"))
            else:
                try:
                    chunk = self._parse(event)
                except ValueError:  # invalid UTF-8 (replaced, as in any event) or not a chunk
                    chunk = self._chunk_of(event.decode("utf-8", "replace"))
                else:
                    self.received += 1
                    self.tail.append(chunk)
        else:
            chunk = self._chunk_of(event.data, error=event.event == "error")
        if not waiting and self.on_last is not None:
            self.on_last(self.response, chunk)
        return chunk

    def feed_frame(self, message: str | bytes) -> T | None:
        """The chunk of one WebSocket frame; None for the done frame."""
        text = message.decode("utf-8", "replace") if isinstance(message, bytes) else message
        if DONE_OBJECT in text[:64] and _object_of(text) == DONE_OBJECT:
            self.done = True
            return None
        self._check_time(True)
        return self._chunk_of(text)

    def _chunk_of(self, data: str, *, error: bool = False) -> T:
        """The typed chunk of one event's (or frame's) data, counted and kept in the tail; an
        error object (or an ``event: error``) raises its API error instead."""
        if error or '"error"' in data[:32]:
            self._raise_error_object(data)
        try:
            # model_validate_json takes str too: the text is not encoded again
            chunk = self._parse(data)  # type: ignore[arg-type]
        except ValueError as exc:
            raise self._not_a_chunk(data, exc) from exc
        self.received += 1
        self.tail.append(chunk)
        return chunk

    def _raise_error_object(self, text: str) -> None:
        """Raise the API error an ``{"error": {...}}`` event stands for (if it is one)."""
        error = error_event(text, self.response.request, self.response.headers)
        if error is not None:
            raise error

    def _not_a_chunk(self, text: str, exc: ValueError) -> APIResponseValidationError:
        return self._invalid(f"a stream chunk is not of the expected shape ({exc})", text.encode())

    def _check_time(self, progressed: bool) -> None:
        if self._timer is not None and not self.done:
            overdue = self._timer.overdue(progressed)
            if overdue is not None:
                raise self._timed_out(overdue, self._timer.passed)

    def next_wait(self) -> float | None:
        """How long the next wait for an event may last (None: no limit)."""
        return None if self._timer is None else self._timer.next_wait()

    def stalled(self, exc: BaseException | None = None) -> StreamTimeoutError:
        """The error for a wait that brought nothing (``exc``: the read timeout that ended it):
        the limit passed by now, else a stall."""
        timer = self._timer
        why = timer.overdue(False) if timer is not None else None
        if timer is not None and why is not None:
            return self._timed_out(why, timer.passed)
        detail = "" if exc is None else f": nothing arrived in time ({exc!r})"
        return self._timed_out(f"the stream stalled{detail}", None)

    def _timed_out(self, why: str, passed: tuple[str, float] | None) -> StreamTimeoutError:
        """A `StreamTimeoutError` naming the limit ``passed`` (its name and seconds; None: a
        read timeout)."""
        error = self.incomplete(why, StreamTimeoutError)
        assert isinstance(error, StreamTimeoutError)
        if passed is not None:
            error.limit_name, error.limit = passed
        return error

    def end(self) -> None:
        """The body ended: raise unless ``[DONE]`` was seen, also as the body's last line
        without the blank line after it (servers may end the body right after that line)."""
        if self.done:
            return
        cut = " in the middle of an event" if self._sse.pending else ""
        try:
            last = self._sse.close(dispatch_unfinished=True)
        except SSEDecodeError as exc:
            raise self._undecodable(exc, b"") from exc
        # only [DONE] is taken from an event cut short: any other may have lost its end
        if any(event.data == DONE for event in last):
            self.done = True
            return
        raise self.incomplete(f"the stream ended{cut} before data: [DONE]")

    def transport_failure(self, exc: Exception) -> APIError:
        """The error for a read that failed mid-stream: a read timeout is a stall, a lost
        connection a cut, a body that cannot be decoded a reply of the wrong shape."""
        kind = failure_kind(exc)
        if kind == "timeout":
            error: APIError = self.stalled(exc)
        elif kind == "connection":
            why = f"the connection was cut mid-stream ({exc!r})"
            error = self.incomplete(why, StreamConnectionError)
        else:
            error = request_failed(exc, self.response.request)
        error.__cause__ = exc
        return error

    def incomplete(
        self, why: str, cls: type[IncompleteStreamError] = IncompleteStreamError
    ) -> IncompleteStreamError:
        """A stream-cut-short error carrying the count and the last chunks received."""
        return cls(
            f"{why}, after {self.received} chunks",
            chunks=list(self.tail),
            received=self.received,
            request=self.response.request,
        )

    def _undecodable(self, exc: SSEDecodeError, raw: bytes) -> APIError:
        """The error for bytes the event decoder refused: an event over its size limit (the
        bound on a stream's memory, also against a compressed "bomb"), or malformed bytes."""
        if not isinstance(exc, SSEEventTooLargeError):
            return self._invalid(str(exc), raw)
        request = self.response.request
        return ResponseTooLargeError(
            f"an event of the stream in reply to {request.method} {request.url.path} is "
            f"larger than max_event_size={DEFAULT_MAX_EVENT_SIZE} bytes, counted after "
            f"decompression, after {self.received} chunks and {self.size} bytes; the "
            "connection was closed",
            limit=DEFAULT_MAX_EVENT_SIZE,
            limit_name="max_event_size",
            received=self.size,
            status_code=self.response.status_code,
            headers=self.response.headers,
            request=request,
        )

    def _invalid(self, message: str, raw: bytes) -> APIResponseValidationError:
        return APIResponseValidationError(
            message,
            body=raw,
            status_code=self.response.status_code,
            headers=self.response.headers,
            request=self.response.request,
        )
