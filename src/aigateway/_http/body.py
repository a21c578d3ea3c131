"""A reply's body read in bounded pieces: its Content-Encoding undone a piece at a time, and
its size checked against a limit counted after decompression.

httpx's decoders turn each network read into all the bytes it decompresses to, at once: one
64 KiB read of a gzip "bomb" becomes 64 MiB, a 1.6 KB brotli body 1 GiB, before anything can
count them. Here each read is decompressed into pieces of at most `PIECE_SIZE` bytes (zlib's
``max_length``, brotli's ``output_buffer_limit``), handed out one by one as the reader asks
for them, so a reader that stops at its limit never holds more than one piece beyond it. The
request path counts the pieces of a reply read into memory against ``max_response_bytes``
(`too_large`); a stream hands them to its event decoder, whose per-event limit stops an
endless event; a file download writes them out against its own limit.

Decoded: ``gzip``, ``deflate`` (zlib-wrapped or raw, as httpx reads it) and, with the
``brotli`` or ``brotlicffi`` package at version 1.2 or later (the first with a bounded
output), ``br``; several encodings are undone in reverse order. The client asks for these
only (`accept_encoding`); any other value is passed through undecoded, as httpx does.
"""

from __future__ import annotations

import contextlib
import functools
import zlib
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

from aigateway._stacks import DEFAULT_STACK, get, stack_of
from aigateway.errors import ResponseTooLargeError

if TYPE_CHECKING:
    from aigateway._stacks import Headers, Response

__all__ = [
    "DEFAULT_MAX_DOWNLOAD_BYTES",
    "PIECE_SIZE",
    "WRITE_SIZE",
    "AsyncDecodedBody",
    "DecodedBody",
    "accept_encoding",
    "adecoded_body",
    "content_decoder",
    "decoded_body",
    "declared_too_large",
    "too_large",
    "with_body",
]

DEFAULT_MAX_DOWNLOAD_BYTES = 2 * 1024 * 1024 * 1024
"""Default ``max_bytes`` of a file result's ``save()``: 2 GiB written, decompressed."""
PIECE_SIZE = 65_536
"""The most bytes one decompression step gives out (brotli may go up to twice this)."""
WRITE_SIZE = 1024 * 1024
"""Bytes a file download gathers before each write (an async write is a worker thread's)."""


@functools.cache
def _bounded_brotli() -> Any:
    """The brotli module whose decompressor bounds its output (``brotli`` or ``brotlicffi``
    1.2 or later), or None: an older one would decompress a whole read at once."""
    for name in ("brotli", "brotlicffi"):
        try:
            module = __import__(name)
        except ImportError:
            continue
        if hasattr(module.Decompressor, "can_accept_more_data"):
            return module
    return None


@functools.cache
def accept_encoding() -> str:
    """The ``Accept-Encoding`` the client sends: the encodings it decodes in bounded pieces."""
    return "gzip, deflate, br" if _bounded_brotli() is not None else "gzip, deflate"


class _Inflate:
    """``gzip`` (``wbits`` 31) or zlib-wrapped ``deflate`` (15), a piece at a time; bytes
    that are not of the encoding raise ``error`` (the reply's HTTP stack's DecodingError)."""

    def __init__(self, wbits: int, error: type[Exception]) -> None:
        self._zlib = zlib.decompressobj(wbits)
        self._error = error

    def decode(self, data: bytes) -> Iterator[bytes]:
        """The pieces ``data`` decompresses to, each made when it is asked for."""
        decompressor = self._zlib
        try:
            piece = decompressor.decompress(data, PIECE_SIZE)
            while True:
                if piece:
                    yield piece
                # a short piece with no input left means zlib has nothing more to give
                if len(piece) < PIECE_SIZE and not decompressor.unconsumed_tail:
                    return
                piece = decompressor.decompress(decompressor.unconsumed_tail, PIECE_SIZE)
        except zlib.error as exc:
            raise self._error(str(exc)) from exc

    def flush(self) -> Iterator[bytes]:
        try:
            rest = self._zlib.flush()
        except zlib.error as exc:  # pragma: no cover - zlib's flush does not check the data
            raise self._error(str(exc)) from exc
        if rest:
            yield rest


class _Deflate(_Inflate):
    """``deflate``: zlib-wrapped as the standard says, or raw as some servers send it (its
    first two bytes tell, a zlib header or not)."""

    def __init__(self, error: type[Exception]) -> None:
        super().__init__(zlib.MAX_WBITS, error)
        self._head: bytes | None = b""
        """The body's first bytes until there are two (None once the kind is known)."""

    def decode(self, data: bytes) -> Iterator[bytes]:
        if self._head is not None:
            data = self._head + data
            if len(data) < 2:
                self._head = data
                return iter(())
            self._head = None
            try:
                zlib.decompressobj(zlib.MAX_WBITS).decompress(data[:2])
            except zlib.error:
                self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
        return super().decode(data)


class _Brotli:
    """``br``, a piece at a time (``output_buffer_limit``)."""

    def __init__(self, brotli: Any, error: type[Exception]) -> None:
        self._brotli = brotli
        self._decompressor = brotli.Decompressor()
        self._error = error

    def decode(self, data: bytes) -> Iterator[bytes]:
        decompressor = self._decompressor
        try:
            piece = decompressor.process(data, output_buffer_limit=PIECE_SIZE)
            while True:
                if piece:
                    yield piece
                # more may come from the input taken already, also once it can take more
                if len(piece) < PIECE_SIZE and decompressor.can_accept_more_data():
                    return
                piece = decompressor.process(b"", output_buffer_limit=PIECE_SIZE)
        except self._brotli.error as exc:
            raise self._error(str(exc)) from exc

    def flush(self) -> Iterator[bytes]:
        return iter(())


class _Chain:
    """Several encodings (``Content-Encoding: gzip, br``), undone last first, each piece of
    one passed through the next as it is made."""

    def __init__(self, decoders: list[Any]) -> None:
        self._decoders = decoders

    def decode(self, data: bytes) -> Iterator[bytes]:
        pieces: Iterator[bytes] = iter((data,))
        for decoder in self._decoders:
            pieces = _through(decoder, pieces)
        return pieces

    def flush(self) -> Iterator[bytes]:
        pieces: Iterator[bytes] = iter(())
        for decoder in self._decoders:
            pieces = _then_flush(decoder, _through(decoder, pieces))
        return pieces


def _through(decoder: Any, pieces: Iterator[bytes]) -> Iterator[bytes]:
    for piece in pieces:
        yield from decoder.decode(piece)


def _then_flush(decoder: Any, pieces: Iterator[bytes]) -> Iterator[bytes]:
    yield from pieces
    yield from decoder.flush()


def _decoder_for(encoding: str, error: type[Exception]) -> Any:
    if encoding == "gzip":
        return _Inflate(zlib.MAX_WBITS | 16, error)
    if encoding == "deflate":
        return _Deflate(error)
    if encoding == "br":
        brotli = _bounded_brotli()
        return None if brotli is None else _Brotli(brotli, error)
    return None  # identity, or an encoding not asked for: the bytes as they came


def content_decoder(headers: Headers) -> Any:
    """The decoder of a reply's ``Content-Encoding`` (``decode(data)`` and ``flush()``, each
    giving pieces of at most about `PIECE_SIZE` bytes, raising the DecodingError of the
    reply's HTTP stack); None when there is nothing to undo."""
    value = headers.get("content-encoding")
    if value is None:
        return None
    error = (stack_of(headers) or get(DEFAULT_STACK)).module.DecodingError
    decoders = [
        decoder
        for encoding in reversed(value.lower().split(","))
        if (decoder := _decoder_for(encoding.strip(), error)) is not None
    ]
    if not decoders:
        return None
    return decoders[0] if len(decoders) == 1 else _Chain(decoders)


class _PieceSource:
    """What both readers share: the pieces of the read being decoded, then of the next."""

    __slots__ = ("_decoder", "_pieces", "_raw")

    def __init__(self, raw: Any, decoder: Any) -> None:
        self._raw = raw
        self._decoder = decoder
        self._pieces: Iterator[bytes] = iter(())

    def _take(self, data: bytes | None) -> None:
        """Decode the next read (None: the body ended, flush the decoder)."""
        if data is None:
            self._raw = None
            self._pieces = self._decoder.flush()
        else:
            self._pieces = self._decoder.decode(data)


class DecodedBody(_PieceSource):
    """A body's decoded pieces over its raw reads (``response.iter_raw()``). An iterator
    object, not a generator: dropped unfinished, it leaves nothing for the garbage collector
    to close (closing it, `close`, closes the raw reads)."""

    __slots__ = ()

    def __iter__(self) -> DecodedBody:
        return self

    def __next__(self) -> bytes:
        while True:
            piece = next(self._pieces, None)
            if piece is not None:
                return piece
            if self._raw is None:
                raise StopIteration
            self._take(next(self._raw, None))

    def close(self) -> None:
        raw, self._raw = self._raw, None
        close = getattr(raw, "close", None)
        if close is not None:
            close()


class AsyncDecodedBody(_PieceSource):
    """`DecodedBody` over ``response.aiter_raw()``, for ``async for``."""

    __slots__ = ()

    def __aiter__(self) -> AsyncDecodedBody:
        return self

    async def __anext__(self) -> bytes:
        while True:
            piece = next(self._pieces, None)
            if piece is not None:
                return piece
            if self._raw is None:
                raise StopAsyncIteration
            self._take(await anext(self._raw, None))

    async def aclose(self) -> None:
        from aigateway._http.leases import finish

        raw, self._raw = self._raw, None
        await finish(raw)  # httpx's inner generators ended too, not left to the collector


def decoded_body(response: Response) -> Iterator[bytes]:
    """A reply's body in decoded pieces: its raw reads when there is nothing to decode (one
    layer less on every read of a stream), the body itself when it was read already."""
    if response.is_stream_consumed:
        return response.iter_bytes()
    decoder = content_decoder(response.headers)
    raw = response.iter_raw()
    return raw if decoder is None else DecodedBody(raw, decoder)


def adecoded_body(response: Response) -> AsyncIterator[bytes]:
    """`decoded_body` for an async reply."""
    if response.is_stream_consumed:
        return response.aiter_bytes()
    decoder = content_decoder(response.headers)
    raw = response.aiter_raw()
    return raw if decoder is None else AsyncDecodedBody(raw, decoder)


def too_large(
    response: Response,
    limit: int,
    limit_name: str,
    received: int,
    declared: str | None = None,
) -> ResponseTooLargeError:
    """The error for a reply whose body went over ``limit``: ``received`` bytes had arrived
    (decoded), or its ``declared`` Content-Length was over it before any did."""
    request = response.request
    encoding = response.headers.get("content-encoding")
    encoded = f" (Content-Encoding: {encoding})" if encoding else ""
    seen = f"its Content-Length is {declared}" if declared else f"{received} bytes had arrived"
    return ResponseTooLargeError(
        f"the reply to {request.method} {request.url.path} is larger than {limit_name}="
        f"{limit} bytes, counted after decompression{encoded}: {seen}, and the connection "
        f"was closed; raise {limit_name} if such a reply is expected",
        limit=limit,
        limit_name=limit_name,
        received=received,
        status_code=response.status_code,
        headers=response.headers,
        request=request,
    )


def declared_too_large(
    response: Response, limit: int, limit_name: str
) -> ResponseTooLargeError | None:
    """The error for a reply whose ``Content-Length`` alone says it is over ``limit`` (when
    it is not compressed), before any of its body is read; else None."""
    length = response.headers.get("content-length")
    if length is None or not length.isdigit() or int(length) <= limit:
        return None
    if content_decoder(response.headers) is not None:
        return None  # the decoded size is not known before decoding
    return too_large(response, limit, limit_name, 0, declared=length)


def with_body(response: Response, content: bytes) -> Response:
    """``response`` whose ``content`` (``.text``, ``.json()``) is ``content``, its body as the
    request path read it, in bounded pieces: made anew, with the same status, headers,
    request, extensions, history and time taken, from the HTTP stack's public API (neither
    stack lets a body read another way be set on a response). Made only for a reply that
    reaches the caller (an error's ``response``, a raw response's ``http_response``): it costs
    about as much as the rest of a call's own work, which a plain call is spared."""
    stack = stack_of(response) or get(DEFAULT_STACK)
    undecoded = [(n, v) for n, v in response.headers.raw if n.lower() != b"content-encoding"]
    rebuilt = stack.Response(
        response.status_code,
        headers=undecoded,
        content=content,  # decoded already: the encoding is left out, or it would be undone again
        request=response.request,  # type: ignore[arg-type]
        extensions=response.extensions,
        history=response.history,  # type: ignore[arg-type]
        default_encoding=response.default_encoding,  # type: ignore[arg-type]
    )
    rebuilt.headers = response.headers
    with contextlib.suppress(RuntimeError):  # not set when the reply was not closed
        rebuilt.elapsed = response.elapsed
    return rebuilt
