"""Replies of the non-chat services: `RunResult` and one typed result per category.

The API shows neither ``inputs`` nor the reply of ``POST /run``. We read a
reply as the run's metadata plus the service's ``output`` object::

    {"id": "run_...", "object": "run", "created": 1700000000, "model": "tts-1",
     "category": "speech", "output": {"audio_url": "...", ...},
     "usage": {"quantity": 0.012, "unit": "1k_characters", "credits": 0.00018},
     "_remaining_credits": 19.9, "_balance_warning": false}

Every result keeps the whole reply (unknown fields as extras, ``output`` as it arrived), and a
typed result also has the output's fields as attributes (``result.audio_url``). A reply without
an ``output`` object is read as if its own fields were the output, so flat replies (such as
``/image/generate``'s ``{"image_url": ...}``) parse too. A reply missing a field its category
cannot do without (an image without ``image_url``) is an `APIResponseValidationError`.

Image, audio and video results (and stored objects) are `MediaFile`\\ s: ``read()`` /
``save(path)`` (``await aread()`` / ``await asave(path)`` from an `AsyncClient`) fetch the file
with the client that made the call, and Jupyter shows them inline.
"""

from __future__ import annotations

import base64
import html
import inspect
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Union

from pydantic import BaseModel, PrivateAttr, model_validator

from ..errors import APIResponseValidationError
from ._base import GatewayModel, ReplyMixin
from .files import decode_data_url

if TYPE_CHECKING:
    import os


__all__ = [
    "DatabaseResult",
    "DocumentPage",
    "DocumentResult",
    "EmailResult",
    "ImageResult",
    "MediaFile",
    "PaymentResult",
    "RunResult",
    "RunUsage",
    "ScrapeResult",
    "SearchHit",
    "SearchResult",
    "SmsResult",
    "SocialPost",
    "SocialProfile",
    "SocialResult",
    "SpeechResult",
    "StorageDeleteResult",
    "StorageListResult",
    "StoredObject",
    "StoredObjectInfo",
    "TranscriptionResult",
    "VideoResult",
]

_RUN_FIELDS = frozenset(
    {"id", "object", "created", "model", "category", "output", "usage"}
    | {"_remaining_credits", "_balance_warning"}
)


class RunUsage(GatewayModel):
    """What a service call was billed: ``quantity`` of ``unit`` (``image``, ``second``,
    ``1k_characters``, ``request``, ``message``, ``page``) for ``credits``."""

    quantity: float | None = None
    unit: str | None = None
    credits: float | None = None


class RunResult(ReplyMixin, GatewayModel):
    """The reply of ``POST /run``, whole: metadata, ``output`` as it arrived, billing, credits."""

    id: str | None = None
    """The run's id (``run_...``)."""
    object: str | None = None
    created: int | None = None
    """Unix time (seconds) of the run."""
    model: str | None = None
    """The service id that ran."""
    category: str | None = None
    """The service's category (``image``, ``speech``, ...), when the gateway says it."""
    output: Any = None
    """The service's output as it arrived (a dict for every category we know)."""
    usage: RunUsage | None = None
    """What the call was billed."""

    @model_validator(mode="before")
    @classmethod
    def _lift_output(cls, data: Any) -> Any:
        """Copy the output's fields to the top level, so typed results read them directly."""
        if not isinstance(data, dict):
            return {"output": data}
        output = data.get("output")
        if isinstance(output, dict):
            return {**output, **data}
        if "output" not in data:
            return {**data, "output": {k: v for k, v in data.items() if k not in _RUN_FIELDS}}
        return data


Fetch = Union[Callable[[str], bytes], Callable[[str], Awaitable[bytes]]]
"""How a file result gets its bytes: ``fetch(url)``, blocking or awaitable (the pipeline of the
client that made the call, with its retries, timeouts and connection pool)."""


class MediaFile(BaseModel):
    """A result that is a file at a URL (``data:`` or ``http(s)``): read it, save it, show it.

    ``read()`` and ``save(path)`` fetch an http URL with the `Client` that made the call (its
    timeout, retries and connection pool; the API key goes only to the gateway's own host);
    results of an `AsyncClient` use ``await aread()`` / ``await asave(path)``. ``data:`` URLs
    decode locally. The bytes are kept after the first read. Showing a result (its repr, in a
    notebook) never fetches anything.
    """

    _url_field: ClassVar[str] = "url"
    _media_kind: ClassVar[str] = "file"
    _fetch: Fetch | None = PrivateAttr(default=None)
    _content: bytes | None = PrivateAttr(default=None)

    @property
    def file_url(self) -> str:
        """The URL of the file."""
        url: str = getattr(self, self._url_field)
        return url

    def bind(self, fetch: Fetch) -> None:
        """Fetch this file with ``fetch(url)``, a function returning its bytes or an awaitable
        of them (done for you on results a client returned)."""
        self._fetch = fetch

    def _decoded(self) -> bytes | None:
        try:
            decoded = decode_data_url(self.file_url)
        except ValueError as exc:
            raise APIResponseValidationError(
                f"the {self._url_field} of this result is a malformed data: URL ({exc})",
                body=self.file_url.encode(),
            ) from None
        return None if decoded is None else decoded[0]

    def _fetcher(self, want_async: bool) -> Any:
        fetch = self._fetch
        if fetch is None:
            raise TypeError(
                f"this result is not bound to a client, so {self.file_url!r} cannot be fetched; "
                "call result.bind(fetch) first"
            )
        if inspect.iscoroutinefunction(fetch) != want_async:
            maker, use = (
                ("a Client", "result.read() / save()")
                if want_async
                else ("an AsyncClient", "await result.aread() / asave()")
            )
            raise TypeError(f"this result came from {maker}; use {use}")
        return fetch

    def read(self) -> bytes:
        """The file's bytes (fetched once, then kept)."""
        if self._content is None:
            decoded = self._decoded()
            if decoded is None:
                decoded = self._fetcher(want_async=False)(self.file_url)
            self._content = decoded
        return self._content

    async def aread(self) -> bytes:
        """The file's bytes, for results of an `AsyncClient` (fetched once, then kept)."""
        if self._content is None:
            decoded = self._decoded()
            if decoded is None:
                decoded = await self._fetcher(want_async=True)(self.file_url)
            self._content = decoded
        return self._content

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the file to ``path``; returns the path."""
        target = Path(path)
        target.write_bytes(self.read())
        return target

    async def asave(self, path: str | os.PathLike[str]) -> Path:
        """Write the file to ``path`` (results of an `AsyncClient`); returns the path."""
        import anyio

        data = await self.aread()
        await anyio.Path(path).write_bytes(data)
        return Path(path)

    def _available_bytes(self) -> bytes | None:
        """The bytes if they are here already (read before, or a ``data:`` URL), else None:
        a repr never makes a request."""
        if self._content is not None:
            return self._content
        try:
            return self._decoded()
        except APIResponseValidationError:  # a repr must not raise: fall back to the URL
            return None

    def _repr_html_(self) -> str | None:
        content = self._content
        src = self.file_url
        if content is not None and not src.startswith("data:"):
            mime = _mime_of(content, self._media_kind)
            src = f"data:{mime};base64,{base64.b64encode(content).decode('ascii')}"
        src = html.escape(src, quote=True)
        if self._media_kind == "audio":
            return f'<audio controls src="{src}"></audio>'
        if self._media_kind == "video":
            return f'<video controls src="{src}"></video>'
        if self._media_kind == "image":
            return f'<img src="{src}" alt="generated image"/>'
        return f'<a href="{src}">{html.escape(self.file_url[:80])}</a>'


def _mime_of(content: bytes, kind: str) -> str:
    from .files import sniff_mime

    mime = sniff_mime(content)
    return f"{kind}/*" if mime == "application/octet-stream" else mime


class ImageResult(RunResult, MediaFile):
    """A generated image (``images.generate`` and image services on ``/run``)."""

    _url_field: ClassVar[str] = "image_url"
    _media_kind: ClassVar[str] = "image"

    image_url: str
    """Where the image is (an http(s) or ``data:`` URL)."""
    images: list[str] = []
    """Every image's URL when several were asked for (``n``); ``image_url`` is the first."""
    width: int | None = None
    height: int | None = None
    size: str | None = None
    """``<width>x<height>``."""

    def _repr_png_(self) -> bytes | None:
        content = self._available_bytes()
        return content if content is not None and content.startswith(b"\x89PNG") else None

    def _repr_html_(self) -> str | None:
        # Jupyter shows the PNG when there is one; the <img> tag is the fallback.
        return None if self._repr_png_() is not None else super()._repr_html_()


class VideoResult(RunResult, MediaFile):
    """A generated video."""

    _url_field: ClassVar[str] = "video_url"
    _media_kind: ClassVar[str] = "video"

    video_url: str
    """Where the video is (an http(s) or ``data:`` URL)."""
    duration_seconds: float | None = None
    """Its length, which is what it was billed by."""
    width: int | None = None
    height: int | None = None
    fps: float | None = None
    """Frames per second."""


class SpeechResult(RunResult, MediaFile):
    """Speech made from text."""

    _url_field: ClassVar[str] = "audio_url"
    _media_kind: ClassVar[str] = "audio"

    audio_url: str
    """Where the audio is (an http(s) or ``data:`` URL)."""
    format: str | None = None
    """The audio format (``wav``, ``mp3``, ...)."""
    duration_seconds: float | None = None
    characters: int | None = None
    """The characters spoken, which is what it was billed by (per 1,000)."""
    sample_rate: int | None = None
    """Samples per second."""


class TranscriptionResult(RunResult):
    """Text transcribed from audio."""

    text: str
    """The transcript."""
    language: str | None = None
    """The language heard (or asked for)."""
    duration_seconds: float | None = None
    """The audio's length."""


class ScrapeResult(RunResult):
    """A scraped web page."""

    text: str
    """The page's readable text."""
    url: str | None = None
    """The page's URL (after redirects)."""
    title: str | None = None
    """The page's title."""
    links: list[str] = []
    """The links found on the page."""
    status_code: int | None = None
    """The HTTP status the page answered with."""


class SearchHit(GatewayModel):
    """One web search result."""

    url: str
    title: str = ""
    snippet: str = ""
    """A passage of the page that matches the query."""
    position: int | None = None
    """Its rank, from 1."""


class SearchResult(RunResult):
    """Web search results; iterate them or read ``results``."""

    results: list[SearchHit]
    """The hits, best first."""
    query: str | None = None
    """The query that was run."""

    def __len__(self) -> int:
        return len(self.results)


class EmailResult(RunResult):
    """An email accepted for delivery."""

    message_id: str
    """The provider's id of the message."""
    status: str | None = None
    """``queued``, ``sent``, ..."""
    to: list[str] = []
    """The recipients."""


class PaymentResult(RunResult):
    """A payment."""

    payment_id: str
    """The provider's id of the payment."""
    status: str | None = None
    """``succeeded``, ``pending``, ``failed``, ..."""
    amount: int | None = None
    """In the currency's minor unit (cents)."""
    currency: str | None = None


class DocumentPage(GatewayModel):
    """One parsed page."""

    number: int
    """The page number, from 1."""
    text: str = ""
    """The page's text."""


class DocumentResult(RunResult):
    """A parsed document, page by page (billed per page)."""

    pages: list[DocumentPage]
    """The pages, in order."""
    page_count: int | None = None
    text: str = ""
    """The whole document's text."""
    content_type: str | None = None
    """The document's MIME type."""


class SocialProfile(GatewayModel):
    """An account on a social platform."""

    handle: str
    platform: str | None = None
    display_name: str | None = None
    bio: str | None = None
    followers: int | None = None
    following: int | None = None


class SocialPost(GatewayModel):
    """One post of an account."""

    id: str
    text: str = ""
    likes: int | None = None
    created: int | None = None
    """Unix time (seconds)."""


class SocialResult(RunResult):
    """Social data: an account's profile and recent posts."""

    profile: SocialProfile
    posts: list[SocialPost] = []
    """The most recent posts, newest first."""


class StoredObject(RunResult, MediaFile):
    """An object in storage (after ``put`` or ``get``): read or save it like any file."""

    _url_field: ClassVar[str] = "url"

    key: str
    """The object's key."""
    url: str
    """Where its bytes are (an http(s) or ``data:`` URL)."""
    size: int | None = None
    """In bytes."""
    content_type: str | None = None


class StoredObjectInfo(GatewayModel):
    """One entry of a storage listing."""

    key: str
    size: int | None = None
    content_type: str | None = None


class StorageListResult(RunResult):
    """The objects whose keys start with a prefix."""

    objects: list[StoredObjectInfo]
    """In key order."""


class StorageDeleteResult(RunResult):
    """The outcome of deleting an object."""

    key: str
    deleted: bool
    """False when there was no such object."""


class DatabaseResult(RunResult):
    """The outcome of an SQL statement."""

    rows: list[list[Any]]
    """The rows a query returned (empty for a write)."""
    columns: list[str] = []
    """The column names of ``rows``."""
    row_count: int | None = None
    """How many rows were returned."""
    rows_affected: int | None = None
    """How many rows a write changed."""

    def records(self) -> list[dict[str, Any]]:
        """The rows as dicts keyed by column name."""
        return [dict(zip(self.columns, row, strict=False)) for row in self.rows]


class SmsResult(RunResult):
    """An SMS accepted for delivery."""

    message_id: str
    """The provider's id of the message."""
    status: str | None = None
    to: str | None = None
    segments: int | None = None
    """How many 160-character segments the text takes."""
