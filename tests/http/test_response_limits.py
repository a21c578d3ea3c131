"""Replies are bounded: ``max_response_bytes`` for a reply read into memory, counted after
decompression; a stream's per-event limit acts on decoded pieces of bounded size; a file is
saved as it arrives under its own ``max_bytes``. Over a limit: `ResponseTooLargeError`, and the
connection is closed, not drained.

The decoder is tested alone (sans-io); the limits through the public calls of both clients
(``httpx.MockTransport`` for the exact boundaries, real sockets on 127.0.0.1 for closing the
connection and for memory: 1 GiB compressed bombs and a 200 MB body in a fresh process whose
peak memory is measured, ``_response_limits_child.py``).
"""

from __future__ import annotations

import functools
import gzip
import json
import socket
import subprocess
import sys
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import brotli
import httpx
import pytest

from aigateway import AsyncClient, Client, ConfigurationError, ResponseTooLargeError
from aigateway._http.body import PIECE_SIZE, accept_encoding, content_decoder
from aigateway._pipeline.request import client_headers
from aigateway.testing import MockGateway

from ..conftest import API_KEY, BASE_URL, Sleeps, resolve

pytestmark = pytest.mark.anyio
GIB = 1024 * 1024 * 1024
MIB = 1024 * 1024
PAYLOAD = b'{"object": "list", "data": []}' + b" " * 300_000


# -- compressed bombs: 1 GiB of zeros, built in a fraction of a second ----------------------


def zlib_bomb(wbits: int, size: int = GIB) -> bytes:
    """``size`` zeros, compressed (gzip for ``wbits`` 31, zlib-wrapped deflate for 15), made
    fast: after a full flush, each MiB of zeros compresses to the same block, repeated here,
    and the trailer's checksum is computed over the zeros without compressing them."""
    zeros = bytes(MIB)
    compressor = zlib.compressobj(9, zlib.DEFLATED, wbits)
    head = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    block = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    end = compressor.flush(zlib.Z_FINISH)
    if wbits > 15:  # gzip: CRC-32 then the size, little-endian
        crc = ZEROS_CRC32.get(size, 0)
        for _ in range(0 if size in ZEROS_CRC32 else size // MIB):
            crc = zlib.crc32(zeros, crc)
        trailer = crc.to_bytes(4, "little") + (size % 2**32).to_bytes(4, "little")
    else:  # zlib: Adler-32 (of zeros: 1, and the count in its high half), big-endian
        trailer = ((size % 65521) << 16 | 1).to_bytes(4, "big")
    return head + block * (size // MIB - 1) + end[: -len(trailer)] + trailer


ZEROS_CRC32 = {GIB: 0x5B64C2B0}
"""CRC-32 of 1 GiB of zeros (``zlib.crc32``, computed once: it takes a second on a busy machine)."""


@functools.cache
def brotli_bomb() -> bytes:
    """1 GiB of zeros in 809 bytes: ``brotli.Compressor(quality=4, lgwin=24)`` over 64 times
    16 MiB of zeros (made once per run: it takes about a second)."""
    compressor = brotli.Compressor(quality=4, lgwin=24)
    zeros = bytes(16 * MIB)
    return b"".join(compressor.process(zeros) for _ in range(64)) + compressor.finish()


@pytest.fixture(scope="session")
def bombs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bombs")
    (folder / "gzip").write_bytes(zlib_bomb(31))
    (folder / "deflate").write_bytes(zlib_bomb(15))
    (folder / "br").write_bytes(brotli_bomb())
    return folder


def test_the_bombs_are_what_they_claim() -> None:
    """The fast builder makes valid streams (checked on 8 MiB by the standard modules); the
    brotli bomb starts as it should (a whole decompression would take seconds)."""
    size = 8 * MIB
    assert gzip.decompress(zlib_bomb(31, size)) == bytes(size)
    assert zlib.decompress(zlib_bomb(15, size)) == bytes(size)
    decompressor = brotli.Decompressor()
    start = decompressor.process(brotli_bomb(), output_buffer_limit=size)
    assert start == bytes(len(start))
    assert len(start) >= size


# -- the decoder alone ----------------------------------------------------------------------


def decode_all(encoding: str, data: bytes, read_size: int) -> tuple[bytes, int]:
    """Everything ``data`` decodes to, fed in reads of ``read_size``; and the largest piece."""
    decoder = content_decoder(httpx.Headers({"content-encoding": encoding}))
    assert decoder is not None
    pieces = [
        piece
        for start in range(0, len(data), read_size)
        for piece in decoder.decode(data[start : start + read_size])
    ]
    pieces.extend(decoder.flush())
    return b"".join(pieces), max(map(len, pieces))


ENCODED = {
    "gzip": gzip.compress(PAYLOAD),
    "deflate": zlib.compress(PAYLOAD),
    "deflate-raw": zlib.compress(PAYLOAD)[2:-4],
    "br": brotli.compress(PAYLOAD),
    "gzip, br": brotli.compress(gzip.compress(PAYLOAD)),
}


@pytest.mark.parametrize("name", ENCODED)
@pytest.mark.parametrize("read_size", [1, 1000, 65_536])
def test_each_encoding_decodes_in_bounded_pieces(name: str, read_size: int) -> None:
    encoding = name.removesuffix("-raw")
    decoded, largest = decode_all(encoding, ENCODED[name], read_size)
    assert decoded == PAYLOAD
    assert largest <= 2 * PIECE_SIZE  # brotli's output buffer may pass its limit by a block


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br"])
def test_a_bomb_read_gives_one_piece_at_a_time(encoding: str, bombs: Path) -> None:
    """A whole bomb as one read: pieces are made as they are taken, never all at once."""
    decoder = content_decoder(httpx.Headers({"content-encoding": encoding}))
    pieces = decoder.decode((bombs / encoding).read_bytes())
    taken = [next(pieces) for _ in range(16)]
    assert all(0 < len(piece) <= 2 * PIECE_SIZE for piece in taken)
    assert set(b"".join(taken)) == {0}


def test_identity_and_encodings_not_asked_for_are_not_decoded() -> None:
    for value in (None, "identity", "zstd", "x-unknown"):
        headers = httpx.Headers({} if value is None else {"content-encoding": value})
        assert content_decoder(headers) is None


def test_the_client_asks_for_what_it_decodes_in_bounded_pieces() -> None:
    assert accept_encoding() == "gzip, deflate, br"  # brotli >= 1.2 is in the dev extra
    with Client(api_key=API_KEY, base_url=BASE_URL) as client:
        assert client_headers(client.config)["Accept-Encoding"] == "gzip, deflate, br"


# -- the limit of a reply read into memory, through the public calls -------------------------


class Recorded(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A reply body in reads; records how many were taken and whether it was closed; with
    ``cut_after`` reads, the connection drops there."""

    def __init__(self, data: bytes, read_size: int = 65_536, cut_after: int | None = None):
        self.reads = [data[i : i + read_size] for i in range(0, len(data), read_size)]
        self.cut_after = cut_after
        self.taken = 0
        self.closed = False

    def __iter__(self) -> Iterator[bytes]:
        for read in self.reads:
            if self.taken == self.cut_after:
                raise httpx.ReadError("connection dropped")
            self.taken += 1
            yield read

    def __aiter__(self) -> Recorded:
        self._reading = iter(self)
        return self

    async def __anext__(self) -> bytes:  # an iterator object: nothing for trio to finalize
        if self.closed:  # as from a closed connection
            raise StopAsyncIteration
        try:
            return next(self._reading)
        except StopIteration:
            raise StopAsyncIteration from None

    def close(self) -> None:
        self.closed = True

    async def aclose(self) -> None:
        self.closed = True


def replying(
    body: Recorded, status: int = 200, seen: list[httpx.Request] | None = None, **headers: str
) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)
        return httpx.Response(status, headers=headers, stream=body)

    return httpx.MockTransport(handler)


def make_client(kind: str, transport: httpx.MockTransport, **options: Any) -> Any:
    cls = Client if kind == "sync" else AsyncClient
    return cls(api_key=API_KEY, base_url=BASE_URL, transport=transport, **options)


async def list_models(kind: str, transport: httpx.MockTransport, **options: Any) -> Any:
    client = make_client(kind, transport, **options)
    try:
        return await resolve(client.models.list())
    finally:
        await resolve(client.close())


@pytest.mark.parametrize("encoding", ["identity", "gzip"])
async def test_a_reply_at_the_limit_is_read_and_one_byte_more_is_refused(
    kind: str, encoding: str
) -> None:
    def encoded(data: bytes) -> bytes:
        return gzip.compress(data) if encoding == "gzip" else data

    exact = len(PAYLOAD)
    headers = {"content-type": "application/json", "content-encoding": encoding}
    body = Recorded(encoded(PAYLOAD))
    models = await list_models(kind, replying(body, **headers), max_response_bytes=exact)
    assert models.data == []
    body = Recorded(encoded(PAYLOAD), read_size=1000)
    with pytest.raises(ResponseTooLargeError) as caught:
        await list_models(kind, replying(body, **headers), max_response_bytes=exact - 1)
    error = caught.value
    assert (error.limit, error.limit_name) == (exact - 1, "max_response_bytes")
    assert exact - 1 < error.received <= exact
    assert (error.status_code, error.headers["content-encoding"]) == (200, encoding)
    assert f"max_response_bytes={exact - 1}" in str(error)
    assert body.closed


async def test_a_compressed_reply_is_counted_decompressed(kind: str) -> None:
    compressed = gzip.compress(bytes(10 * MIB))  # about 10 KB on the wire
    body = Recorded(compressed, read_size=1024)
    with pytest.raises(ResponseTooLargeError) as caught:
        await list_models(
            kind, replying(body, **{"content-encoding": "gzip"}), max_response_bytes=MIB
        )
    assert MIB < caught.value.received <= MIB + 2 * PIECE_SIZE
    assert "Content-Encoding: gzip" in str(caught.value)


async def test_a_declared_length_over_the_limit_is_refused_before_reading(kind: str) -> None:
    body = Recorded(PAYLOAD)
    transport = replying(body, **{"content-length": str(len(PAYLOAD))})
    with pytest.raises(ResponseTooLargeError, match=f"Content-Length is {len(PAYLOAD)}"):
        await list_models(kind, transport, max_response_bytes=1000)
    assert body.taken == 0
    assert body.closed


async def test_an_error_reply_over_the_limit_is_refused_and_not_retried(kind: str) -> None:
    seen: list[httpx.Request] = []
    transport = replying(Recorded(PAYLOAD), 503, seen)
    with pytest.raises(ResponseTooLargeError) as caught:
        await list_models(kind, transport, max_response_bytes=1000, max_retries=2)
    assert caught.value.status_code == 503
    assert len(seen) == 1


@pytest.mark.parametrize("value", [0, -1, True, 1.5, "1000", None])
def test_max_response_bytes_must_be_a_positive_integer(value: object) -> None:
    with pytest.raises(ConfigurationError, match="max_response_bytes must be a number of bytes"):
        Client(api_key=API_KEY, base_url=BASE_URL, max_response_bytes=value)  # type: ignore[arg-type]


# -- streams: the event limit acts on decoded pieces ----------------------------------------


async def test_a_compressed_stream_bomb_stops_at_the_event_limit(kind: str, bombs: Path) -> None:
    body = Recorded((bombs / "br").read_bytes())
    headers = {"content-type": "text/event-stream", "content-encoding": "br"}
    client = make_client(kind, replying(body, **headers), max_retries=0)
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    try:
        with pytest.raises(ResponseTooLargeError, match="max_event_size=1048576") as caught:
            await resolve(client.chat.completions.create(**request))
    finally:
        await resolve(client.close())
    assert caught.value.limit_name == "max_event_size"
    assert MIB < caught.value.received <= MIB + 2 * PIECE_SIZE
    assert body.closed


# -- real sockets: the connection is closed, not drained; files are saved as they arrive ---


class BigBodyServer:
    """On 127.0.0.1: every request gets ``size`` bytes of body in chunks; counts what each
    connection could send before the client closed it."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.sent: list[int] = []
        self.replied = threading.Condition()
        self.connections = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        block = b"x" * 65_536
        chunk = b"%x\r\n%s\r\n" % (len(block), block)
        with connection, connection.makefile("rb") as reader:
            while reader.readline() not in (b"", b"\r\n") or self._reply(connection, chunk):
                pass

    def _reply(self, connection: socket.socket, chunk: bytes) -> bool:
        """Send one reply; false when the client closed the connection."""
        connection.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        sent = 0
        try:
            while sent < self.size:
                connection.sendall(chunk)
                sent += 65_536
            connection.sendall(b"0\r\n\r\n")
            return True
        except OSError:
            return False
        finally:
            with self.replied:
                self.sent.append(sent)
                self.replied.notify_all()

    def sent_by(self, replies: int) -> list[int]:
        """What each of the first ``replies`` sent, once the server has seen how they ended."""
        with self.replied:
            assert self.replied.wait_for(lambda: len(self.sent) >= replies, timeout=10)
            return self.sent

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def big_server() -> Iterator[BigBodyServer]:
    server = BigBodyServer(200 * MIB)
    yield server
    server.close()


async def test_a_reply_over_the_limit_closes_the_connection_unread(
    kind: str, big_server: BigBodyServer
) -> None:
    cls = Client if kind == "sync" else AsyncClient
    client = cls(
        api_key=API_KEY,
        base_url=f"http://127.0.0.1:{big_server.port}/v1",
        max_response_bytes=MIB,
        max_retries=0,
    )
    try:
        for _ in range(2):  # the second request cannot reuse the closed connection
            with pytest.raises(ResponseTooLargeError):
                await resolve(client.models.list())
    finally:
        await resolve(client.close())
    sent = big_server.sent_by(2)
    assert max(sent) < 32 * MIB  # socket buffers, not 200 MB: closed, not drained
    assert big_server.connections == 2


async def test_save_writes_as_it_arrives_and_max_bytes_bounds_it(kind: str, tmp_path: Path) -> None:
    gateway = MockGateway()
    client = gateway.client() if kind == "sync" else gateway.async_client()
    try:
        image = await resolve(
            client.images.generate(model="flux-schnell", prompt="x", size="64x64")
        )
        target = tmp_path / "out.png"
        save = image.save if kind == "sync" else image.asave
        assert await resolve(save(target)) == target
        size = target.stat().st_size
        with pytest.raises(ResponseTooLargeError) as caught:
            await resolve(save(tmp_path / "small.png", max_bytes=size - 1))
        assert target.read_bytes() == await resolve(
            image.read() if kind == "sync" else image.aread()
        )
    finally:
        await resolve(client.close())
    assert (caught.value.limit, caught.value.limit_name) == (size - 1, "max_bytes")
    assert not (tmp_path / "small.png").exists()  # no partial file is left


async def test_a_download_retried_after_a_cut_starts_its_file_over(
    kind: str, tmp_path: Path, sleeps: Sleeps
) -> None:
    content = bytes(range(256)) * 12 * 1024  # 3 MiB: the cut attempt wrote 2 MiB of it
    bodies = [Recorded(content, cut_after=32), Recorded(content)]

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/image/generate"):
            return httpx.Response(200, json={"image_url": f"{BASE_URL}/files/f.bin"})
        return httpx.Response(200, stream=bodies.pop(0))

    client = make_client(
        kind, httpx.MockTransport(handler), retry_policy=sleeps.policy(), max_retries=1
    )
    try:
        image = await resolve(client.images.generate(model="m", prompt="p", size="8x8"))
        save = image.save if kind == "sync" else image.asave
        target = await resolve(save(tmp_path / "f.bin"))
    finally:
        await resolve(client.close())
    assert target.read_bytes() == content
    assert bodies == []  # retried once
    assert len(sleeps) == 1


# -- memory: bombs and a 200 MB body against the default limits, in a fresh process ---------


@pytest.mark.timeout(120)
@pytest.mark.parametrize("client_kind", ["sync", "asyncio", "trio"])
def test_bombs_and_a_200_mb_body_stay_within_300_mb(client_kind: str, bombs: Path) -> None:
    child = Path(__file__).with_name("_response_limits_child.py")
    run = subprocess.run(
        [sys.executable, str(child), client_kind, str(bombs)],
        capture_output=True,
        text=True,
        timeout=110,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    cases = {line["case"]: line for line in lines if "case" in line}
    for encoding in ("gzip", "deflate", "br"):
        plain, stream = cases[f"{encoding}-plain"], cases[f"{encoding}-stream"]
        assert plain.get("limit_name") == "max_response_bytes", plain
        assert stream.get("limit_name") == "max_event_size", stream
    big = cases["big-chunked"]
    assert big.get("limit_name") == "max_response_bytes", big
    assert 64 * MIB < big["received"] <= 64 * MIB + PIECE_SIZE
    assert big["sent"] < 100 * MIB  # closed, not drained
    declared = cases["big-length"]
    assert (declared.get("limit_name"), declared["received"]) == ("max_response_bytes", 0)
    assert cases["save"] == {"case": "save", "result": 200 * MIB}  # under save()'s 2 GiB
    peak = lines[-1]["peak_mb"]
    assert peak < 300, (
        f"peak resident memory {peak:.0f} MB (started at {lines[0]['baseline_mb']:.0f})"
    )
