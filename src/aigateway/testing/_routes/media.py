"""Small, valid, deterministic media files for the mock's services, made with the stdlib.

* `png`: a two-colour checkerboard PNG of the size asked (zlib, struct), colours from a seed.
* `wav`: a mono 16-bit PCM WAV tone (``wave``) of a given length, pitch from a seed.
* `mp4`: an ISO base media file (``ftyp`` and ``mdat`` boxes): the right magic bytes and a
  well-formed box structure, not a playable stream.
* `wav_info`, `pdf_page_count`: what the mock "hears" in uploaded audio and "reads" in
  uploaded documents.
"""

from __future__ import annotations

import io
import re
import struct
import wave
import zlib

__all__ = ["mp4", "pdf_page_count", "png", "wav", "wav_info"]

WAV_RATE = 8000
"""Samples per second of generated speech (small files, still valid audio)."""


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(width: int, height: int, seed: int) -> bytes:
    """A ``width`` x ``height`` RGB PNG: a checkerboard of two colours drawn from ``seed``."""
    first = bytes(((seed >> shift) & 0xFF) for shift in (0, 8, 16))
    second = bytes(255 - value for value in first)
    block = max(1, min(width, height) // 8)
    pair = first * block + second * block
    row_a = (pair * (width // (2 * block) + 1))[: width * 3]
    row_b = (pair[3 * block :] + pair[: 3 * block]) * (width // (2 * block) + 1)
    row_b = row_b[: width * 3]
    raw = b"".join(b"\x00" + (row_a if (y // block) % 2 == 0 else row_b) for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", zlib.compress(raw, 6))
        + _png_chunk(b"IEND", b"")
    )


def wav(seconds: float, seed: int) -> bytes:
    """A mono 16-bit WAV tone of ``seconds`` at `WAV_RATE` Hz, its pitch drawn from ``seed``."""
    period = 16 + seed % 25  # samples per cycle: a 200-500 Hz tone
    cycle = b"".join(
        struct.pack("<h", int(8000 * (1 - abs(2 * i / period - 1) * 2))) for i in range(period)
    )
    frames = max(1, round(seconds * WAV_RATE))
    data = (cycle * (frames // period + 1))[: frames * 2]
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(WAV_RATE)
        out.writeframes(data)
    return buffer.getvalue()


def wav_info(data: bytes) -> tuple[float, int, int] | None:
    """``(seconds, sample rate, channels)`` of a WAV file; None when it is not one."""
    try:
        with wave.open(io.BytesIO(data), "rb") as audio:
            rate, channels, frames = audio.getframerate(), audio.getnchannels(), audio.getnframes()
    except (wave.Error, EOFError, struct.error):
        return None
    return (frames / rate if rate else 0.0), rate, channels


def _box(kind: bytes, payload: bytes) -> bytes:
    return struct.pack(">I", 8 + len(payload)) + kind + payload


def mp4(seconds: int, width: int, height: int, seed: int) -> bytes:
    """An MP4-branded ISO media file: ``ftyp`` then an ``mdat`` of ``seconds`` x 64 bytes."""
    brand = _box(b"ftyp", b"isom" + struct.pack(">I", 512) + b"isomiso2mp41")
    description = struct.pack(">IIII", seconds, width, height, seed & 0xFFFFFFFF)
    return brand + _box(b"mdat", description + bytes((seed + i) % 256 for i in range(64 * seconds)))


_PDF_PAGE = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")


def pdf_page_count(data: bytes) -> int:
    """The pages of a PDF, counted by their page objects (at least 1)."""
    return max(1, len(_PDF_PAGE.findall(data)))
