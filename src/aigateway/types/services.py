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
with the client that made the call, and Jupyter shows them inline (fetched once, on first
display, from a `Client`; a result of an `AsyncClient` says to ``await result.aread()`` first).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import model_validator

from aigateway._display import card, field, guarded, plain, table
from aigateway.types._base import GatewayModel, ReplyMixin
from aigateway.types._media_file import MediaFile

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

    def _display_fields(self) -> list[tuple[str, Any]]:
        usage = self.usage
        billed = f"{usage.quantity} {usage.unit}, {usage.credits} credits" if usage else None
        return [
            ("model", self.model),
            ("category", self.category),
            ("billed", billed),
            ("remaining credits", self.remaining_credits),
        ]

    def _output_items(self) -> list[tuple[str, Any]]:
        output = self.output
        return list(output.items()) if isinstance(output, dict) else [("output", output)]

    @guarded
    def __repr__(self) -> str:
        shown = [field(name, value) for name, value in self._output_items()[:_REPR_FIELDS]]
        return plain(self, field("model", self.model), *shown)

    @guarded
    def _repr_html_(self) -> str | None:
        media = self._media_html() if isinstance(self, MediaFile) else ""
        output = table(["output", "value"], self._output_items())
        return card(self, self._display_fields(), body=media + output)


_REPR_FIELDS = 3
"""How many of a result's output fields its plain repr shows."""


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
        content = self._display_bytes()
        return content if content is not None and content.startswith(b"\x89PNG") else None

    def _repr_jpeg_(self) -> bytes | None:
        content = self._display_bytes()
        return content if content is not None and content.startswith(b"\xff\xd8\xff") else None

    def _repr_html_(self) -> str | None:
        # Jupyter shows the PNG or JPEG when there is one; the HTML is the fallback.
        shown = self._repr_png_() or self._repr_jpeg_()
        return None if shown is not None else super()._repr_html_()


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
