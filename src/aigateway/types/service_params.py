"""What the non-chat services accept: ``POST /run`` inputs per category, and ``/image/generate``.

The API shows ``/run`` as ``{model, inputs}`` and leaves ``inputs`` to each service. We define the
inputs of each of its thirteen categories here, once: the keyword
arguments of the typed resources (``client.audio.speech(model=..., text=...)``), the check
made before sending, and the mock gateway's check, which answers 400 where the client refuses.
Every inputs dict accepts extra fields, so a service's own options pass through
(``extra_inputs={...}`` on any typed method).

Fields typed `FileField` take a path, bytes or a binary file object; the SDK sends them as
``data:`` URLs (`aigateway.types.files`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, Union

from pydantic import ConfigDict, Field, with_config
from typing_extensions import Required, TypedDict

from aigateway.types.chat_params import RequestOptions
from aigateway.types.files import FileField

__all__ = [
    "CATEGORIES",
    "SERVICE_ALLOWED",
    "DatabaseInputs",
    "DocumentInputs",
    "EmailInputs",
    "ImageGenerateBody",
    "ImageGenerateInputs",
    "ImageGenerateParams",
    "ImageInputs",
    "PaymentInputs",
    "RunBody",
    "ScrapeInputs",
    "SearchInputs",
    "ServiceOptions",
    "SmsInputs",
    "SocialInputs",
    "SpeechInputs",
    "StorageDeleteInputs",
    "StorageGetInputs",
    "StorageInputs",
    "StorageListInputs",
    "StoragePutInputs",
    "TranscriptionInputs",
    "VideoInputs",
]

SERVICE_ALLOWED: Mapping[str, str] = {
    "model": "a service id string",
    "inputs": "a JSON object of the service's inputs",
    "prompt": "a non-empty string",
    "size": "'<width>x<height>' with positive integers, e.g. '1024x1024'",
    "n": "an integer from 1 to 4",
    "duration": "an integer number of seconds from 1 to 60",
    "text": "a non-empty string",
    "speed": "a number from 0.25 to 4",
    "audio": "a path, bytes, a binary file object, or a data:/http(s) URL",
    "file": "a path, bytes, a binary file object, or a data:/http(s) URL",
    "data": "a path, bytes, a binary file object, or a data:/http(s) URL",
    "url": "an http:// or https:// URL",
    "query": "a non-empty string",
    "num_results": "an integer from 1 to 20",
    "to": "an email address, or a list of 1 to 50 of them (SMS: a number like '+14155550123')",
    "subject": "a string",
    "amount": "a positive integer, in the currency's minor unit (cents)",
    "currency": "a three-letter currency code such as 'usd'",
    "handle": "a non-empty account name",
    "limit": "an integer from 1 to 50",
    "key": "a non-empty object key",
    "sql": "a non-empty SQL statement",
    "params": "a list of values (for '?') or an object (for ':name')",
}
"""What each input allows, in words: quoted by the errors of both client and mock."""

NonEmpty = Annotated[str, Field(min_length=1)]
ImageSize = Annotated[str, Field(pattern=r"^[1-9][0-9]*x[1-9][0-9]*$")]
"""``<width>x<height>``, both positive integers (``1024x768``)."""
EmailAddress = Annotated[str, Field(pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")]
PhoneNumber = Annotated[str, Field(pattern=r"^\+[1-9][0-9]{6,14}$")]
HttpURL = Annotated[str, Field(pattern=r"^https?://\S+$")]
_EXTRA = ConfigDict(extra="allow")


class _Model(TypedDict):
    model: Required[NonEmpty]
    """The service id (the gateway's catalogue is authoritative)."""


class ServiceOptions(RequestOptions, total=False):
    """What every typed service method takes besides its inputs."""

    extra_inputs: Mapping[str, object]
    """Inputs merged into ``inputs`` as they are, unchecked (a service's own options)."""


@with_config(_EXTRA)
class ImageGenerateInputs(TypedDict, total=False):
    """What ``POST /image/generate`` takes besides ``model``."""

    prompt: Required[NonEmpty]
    size: ImageSize


@with_config(_EXTRA)
class ImageInputs(ImageGenerateInputs, total=False):
    """Image generation: ``prompt`` and optionally ``size`` and ``n`` images."""

    n: Annotated[int, Field(strict=True, ge=1, le=4)]
    negative_prompt: str


@with_config(_EXTRA)
class VideoInputs(TypedDict, total=False):
    """Video generation: ``prompt``, ``duration`` in seconds (billed per second), ``size``."""

    prompt: Required[NonEmpty]
    duration: Annotated[int, Field(strict=True, ge=1, le=60)]
    size: ImageSize


@with_config(_EXTRA)
class SpeechInputs(TypedDict, total=False):
    """Text to speech: the ``text`` to say (billed per 1,000 characters), a ``voice``."""

    text: Required[Annotated[str, Field(min_length=1, max_length=100_000)]]
    voice: str
    speed: Annotated[float, Field(ge=0.25, le=4)]


@with_config(_EXTRA)
class TranscriptionInputs(TypedDict, total=False):
    """Speech to text: the ``audio`` file, optionally its ``language`` and a ``prompt``."""

    audio: Required[FileField]
    language: str
    prompt: str


@with_config(_EXTRA)
class ScrapeInputs(TypedDict, total=False):
    """Web scraping: the page ``url``."""

    url: Required[HttpURL]
    formats: list[str]


@with_config(_EXTRA)
class SearchInputs(TypedDict, total=False):
    """Web search: the ``query`` and how many results (``num_results``)."""

    query: Required[NonEmpty]
    num_results: Annotated[int, Field(strict=True, ge=1, le=20)]


@with_config(_EXTRA)
class EmailInputs(TypedDict, total=False):
    """Email: ``to`` (one address or a list), ``subject``, and a ``text`` and/or ``html`` body."""

    to: Required[
        Union[EmailAddress, Annotated[list[EmailAddress], Field(min_length=1, max_length=50)]]
    ]
    subject: Required[str]
    text: str
    html: str
    sender: EmailAddress
    reply_to: EmailAddress


@with_config(_EXTRA)
class PaymentInputs(TypedDict, total=False):
    """A payment: ``amount`` in the currency's minor unit (cents), ``currency``, a description."""

    amount: Required[Annotated[int, Field(strict=True, ge=1)]]
    currency: Required[Annotated[str, Field(pattern=r"^[A-Za-z]{3}$")]]
    description: str
    customer: str


@with_config(_EXTRA)
class DocumentInputs(TypedDict, total=False):
    """Document parsing: the ``file`` (PDF, text, ...), billed per page."""

    file: Required[FileField]
    pages: list[Annotated[int, Field(ge=1)]]


@with_config(_EXTRA)
class SocialInputs(TypedDict, total=False):
    """Social data: an account's ``handle``, its ``platform``, up to ``limit`` recent posts."""

    handle: Required[NonEmpty]
    platform: str
    limit: Annotated[int, Field(strict=True, ge=1, le=50)]


@with_config(_EXTRA)
class StorageKeyFields(TypedDict, total=False):
    """The object stored under ``key``: what ``get`` and ``delete`` take."""

    key: Required[NonEmpty]


@with_config(_EXTRA)
class StoragePutFields(StorageKeyFields, total=False):
    """Store ``data`` (a file) under ``key``."""

    data: Required[FileField]
    content_type: str


@with_config(_EXTRA)
class StoragePutInputs(StoragePutFields, total=False):
    operation: Required[Literal["put"]]


@with_config(_EXTRA)
class StorageGetInputs(StorageKeyFields, total=False):
    operation: Required[Literal["get"]]


@with_config(_EXTRA)
class StorageListFields(TypedDict, total=False):
    """List the objects whose keys start with ``prefix``."""

    prefix: str


@with_config(_EXTRA)
class StorageListInputs(StorageListFields, total=False):
    operation: Required[Literal["list"]]


@with_config(_EXTRA)
class StorageDeleteInputs(StorageKeyFields, total=False):
    operation: Required[Literal["delete"]]


StorageInputs = Annotated[
    Union[StoragePutInputs, StorageGetInputs, StorageListInputs, StorageDeleteInputs],
    Field(discriminator="operation"),
]
"""Storage inputs, one shape per ``operation``."""


@with_config(_EXTRA)
class DatabaseFields(TypedDict, total=False):
    """A database statement: ``sql`` with ``params``."""

    sql: Required[NonEmpty]
    params: Union[list[Any], dict[str, Any]]


@with_config(_EXTRA)
class DatabaseInputs(DatabaseFields, total=False):
    """A database statement: ``sql`` with ``params``; ``read_only`` refuses writes."""

    read_only: bool


@with_config(_EXTRA)
class SmsInputs(TypedDict, total=False):
    """SMS: ``to`` (a number in international form, ``+14155550123``) and the ``text``."""

    to: Required[PhoneNumber]
    text: Required[Annotated[str, Field(min_length=1, max_length=1600)]]
    sender: str


CATEGORIES: Mapping[str, Any] = {
    "image": ImageInputs,
    "video": VideoInputs,
    "speech": SpeechInputs,
    "transcription": TranscriptionInputs,
    "scrape": ScrapeInputs,
    "search": SearchInputs,
    "email": EmailInputs,
    "payment": PaymentInputs,
    "document": DocumentInputs,
    "social": SocialInputs,
    "storage": StorageInputs,
    "database": DatabaseInputs,
    "sms": SmsInputs,
}
"""The thirteen service categories of the API, each with the inputs it takes."""


class RunBody(_Model):
    """The JSON body of ``POST /run``."""

    inputs: dict[str, Any]


@with_config(_EXTRA)
class ImageGenerateBody(ImageGenerateInputs, _Model, total=False):
    """The JSON body of ``POST /image/generate``: ``{model, prompt, size}``."""


# The keyword arguments of the typed service methods: the service id, its inputs, the options.
# (Storage and database methods set ``operation`` / ``read_only`` themselves.)
class ImageGenerateParams(_Model, ImageGenerateInputs, RequestOptions, total=False): ...


class ImageParams(_Model, ImageInputs, ServiceOptions, total=False): ...


class VideoParams(_Model, VideoInputs, ServiceOptions, total=False): ...


class SpeechParams(_Model, SpeechInputs, ServiceOptions, total=False): ...


class TranscriptionParams(_Model, TranscriptionInputs, ServiceOptions, total=False): ...


class ScrapeParams(_Model, ScrapeInputs, ServiceOptions, total=False): ...


class SearchParams(_Model, SearchInputs, ServiceOptions, total=False): ...


class EmailParams(_Model, EmailInputs, ServiceOptions, total=False): ...


class PaymentParams(_Model, PaymentInputs, ServiceOptions, total=False): ...


class DocumentParams(_Model, DocumentInputs, ServiceOptions, total=False): ...


class SocialParams(_Model, SocialInputs, ServiceOptions, total=False): ...


class StoragePutParams(_Model, StoragePutFields, ServiceOptions, total=False): ...


class StorageGetParams(_Model, StorageKeyFields, ServiceOptions, total=False): ...


class StorageListParams(_Model, StorageListFields, ServiceOptions, total=False): ...


class StorageDeleteParams(_Model, StorageKeyFields, ServiceOptions, total=False): ...


class DatabaseParams(_Model, DatabaseFields, ServiceOptions, total=False): ...


class SmsParams(_Model, SmsInputs, ServiceOptions, total=False): ...
