"""What the tests of the SSE decoder (`aigateway._streams.sse`) share: ``E``, a short name for
`ServerSentEvent`, and two ways to run a whole stream through an `SSEDecoder`."""

from __future__ import annotations

from collections.abc import Iterable

from aigateway._streams.sse import DEFAULT_MAX_EVENT_SIZE, ServerSentEvent, SSEDecoder

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
    chunks: Iterable[bytes],
    max_event_size: int = DEFAULT_MAX_EVENT_SIZE,
    *,
    data_only: bool = False,
) -> tuple[list[ServerSentEvent], bool, str | None, int | None]:
    """Feed the chunks and close; return (events, pending, last_event_id, retry). With
    ``data_only``, each chunk goes to `SSEDecoder.feed_data_only` first, as streams do."""
    decoder = SSEDecoder(max_event_size=max_event_size)
    events: list[ServerSentEvent] = []
    for chunk in chunks:
        data = decoder.feed_data_only(chunk) if data_only else None
        if data is None:
            events.extend(decoder.feed(chunk))
        else:
            events.extend(
                E(item.decode("utf-8", "replace"), id=decoder.last_event_id) for item in data
            )
    events.extend(decoder.close())
    return events, decoder.pending, decoder.last_event_id, decoder.retry
