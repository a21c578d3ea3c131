"""What the tests of the non-chat services share: reading a media result's bytes and the
size of a PNG."""

from __future__ import annotations

import inspect
import struct
from typing import Any


async def read(result: Any) -> bytes:
    """A media result's bytes, with ``read`` or ``aread`` as its client wants."""
    return await result.aread() if inspect.iscoroutinefunction(result._fetch) else result.read()


def png_size(data: bytes) -> tuple[int, int]:
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height
