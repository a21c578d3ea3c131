"""Files in: what a caller may pass where a service takes a file, and how it goes on the wire.

A file input is a path (``str`` or `os.PathLike`), ``bytes``, or a binary file object; a
``str`` that already is a ``data:`` or ``http(s)://`` URL is sent as it is. Everything else is
read and sent as a ``data:<mime>;base64,...`` URL inside the JSON ``inputs`` (the API's
``/run`` takes JSON only). Files larger than `MAX_FILE_BYTES` are refused before anything is
read in full or sent. The mock gateway decodes the same URLs with `decode_data_url`.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import mimetypes
import os
from pathlib import Path
from typing import IO, Annotated, Any, Union

from pydantic import PlainValidator

from aigateway.errors import InvalidRequestError, Violation

__all__ = [
    "MAX_FILE_BYTES",
    "FileField",
    "FileInput",
    "decode_data_url",
    "encode_file",
    "is_file_field",
    "sniff_mime",
]

MAX_FILE_BYTES = 20 * 1024 * 1024
"""The largest file (before encoding) the SDK sends, 20 MiB; the mock refuses larger ones too."""

FileInput = Union[str, os.PathLike[str], bytes, IO[bytes]]
"""A path, the bytes themselves, a binary file object, or a ``data:`` / ``http(s)://`` URL."""

_URL_PREFIXES = ("data:", "http://", "https://")
_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF8", "image/gif"),
    (b"%PDF", "application/pdf"),
    (b"ID3", "audio/mpeg"),
    (b"OggS", "audio/ogg"),
    (b"fLaC", "audio/flac"),
)


class FileMarker:
    """Marks a TypedDict field as a file, so builders know to encode it first."""


def encoded_file(value: object) -> str:
    if isinstance(value, str) and value.startswith(_URL_PREFIXES):
        return value
    raise ValueError("must be a file: a path, bytes, a binary file object, or a data:/http(s) URL")


FileField = Annotated[FileInput, PlainValidator(encoded_file), FileMarker()]
"""A request field holding a file: callers pass a `FileInput`, the wire carries a URL."""


def is_file_field(annotation: object) -> bool:
    """True for a `FileField` annotation (possibly wrapped in ``Required[...]``)."""
    metadata = getattr(annotation, "__metadata__", ())
    if any(isinstance(item, FileMarker) for item in metadata):
        return True
    return any(is_file_field(arg) for arg in getattr(annotation, "__args__", ()))


def sniff_mime(data: bytes, name: str | None = None) -> str:
    """The MIME type of a file, from its magic bytes, else its name, else octet-stream."""
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "audio/wav"
    if data[4:8] == b"ftyp":
        return "video/mp4"
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    guessed = mimetypes.guess_type(name)[0] if name else None
    return guessed or ("text/plain" if _is_text(data) else "application/octet-stream")


def _is_text(data: bytes) -> bool:
    if b"\x00" in data[:4096]:
        return False
    try:  # incremental, so a character cut at the 4096th byte is not an error
        codecs.getincrementaldecoder("utf-8")().decode(data[:4096], final=False)
    except UnicodeDecodeError:
        return False
    return True


def _too_large(field: str, value: object, size: int) -> InvalidRequestError:
    return InvalidRequestError(
        [
            Violation(
                field,
                _shown(value),
                f"the file has {size} bytes; allowed: at most {MAX_FILE_BYTES} bytes",
            )
        ]
    )


def _shown(value: object) -> object:
    """A file value as an error message may show it (never megabytes of bytes)."""
    return f"<{len(value)} bytes>" if isinstance(value, bytes) else value


def _read(value: Any, field: str) -> tuple[bytes, str | None]:
    """The bytes of a file input and its name (for the MIME type), size-checked."""
    if isinstance(value, bytes):
        if len(value) > MAX_FILE_BYTES:
            raise _too_large(field, value, len(value))
        return value, None
    if isinstance(value, (str, os.PathLike)):
        path = Path(value)
        if not path.is_file():
            problem = "is a directory" if path.is_dir() else "does not exist"
            raise InvalidRequestError(
                [Violation(field, str(value), f"no such file: the path {problem}")]
            )
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise _too_large(field, str(value), size)
        return path.read_bytes(), path.name
    if callable(getattr(value, "read", None)):
        data = value.read(MAX_FILE_BYTES + 1)
        if not isinstance(data, bytes):
            raise InvalidRequestError(
                [Violation(field, value, "the file object is not binary; open it with 'rb'")]
            )
        if len(data) > MAX_FILE_BYTES:
            raise _too_large(field, value, len(data))
        name = getattr(value, "name", None)
        return data, name if isinstance(name, str) else None
    raise InvalidRequestError(
        [
            Violation(
                field,
                value,
                "allowed: a path, bytes, a binary file object, or a data:/http(s) URL",
            )
        ]
    )


def encode_file(value: object, field: str) -> object:
    """A file input as the wire carries it: a ``data:`` URL (URLs pass through unchanged).

    Raises `InvalidRequestError` naming ``field`` for a missing path, a file over
    `MAX_FILE_BYTES`, a text-mode file object or a value that is no file at all.
    """
    if isinstance(value, str) and value.startswith(_URL_PREFIXES):
        return value
    data, name = _read(value, field)
    encoded = base64.b64encode(data).decode("ascii")
    return f"data:{sniff_mime(data, name)};base64,{encoded}"


def decode_data_url(url: str) -> tuple[bytes, str] | None:
    """``(bytes, mime)`` of a ``data:`` URL; None for other URLs; ValueError when malformed."""
    if not url.startswith("data:"):
        return None
    header, comma, payload = url[5:].partition(",")
    if not comma:
        raise ValueError("a data: URL needs a ',' before its payload")
    mime, *params = header.split(";")
    if "base64" in params:
        try:
            data = base64.b64decode(payload, validate=True)
        except binascii.Error as exc:
            raise ValueError(f"the data: URL's base64 payload is invalid ({exc})") from None
    else:
        from urllib.parse import unquote_to_bytes

        data = unquote_to_bytes(payload)
    return data, mime or "text/plain"
