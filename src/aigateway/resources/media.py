"""Media services: ``client.images``, ``client.videos``, ``client.audio``.

Image generation has the API's dedicated endpoint (``images.generate``: ``POST
/image/generate {model, prompt, size}``) and the image category of ``/run``
(``images.create``, which also takes ``n`` and extra inputs). Results are `MediaFile`\\ s:
``read()`` / ``save(path)`` (``aread`` / ``asave`` on the async client), shown inline in Jupyter.
"""

from __future__ import annotations

from typing import Any, overload

from typing_extensions import Unpack

from aigateway.resources._base import keyword_signature, one_request, with_request
from aigateway.resources._services import AsyncServiceResource, ServiceMethod, ServiceResource
from aigateway.types.chat_params import RequestOptions
from aigateway.types.requests import ImageGenerateRequest
from aigateway.types.service_params import (
    ImageGenerateInputs,
    ImageGenerateParams,
    ImageInputs,
    ImageParams,
    SpeechInputs,
    SpeechParams,
    TranscriptionInputs,
    TranscriptionParams,
    VideoInputs,
    VideoParams,
)
from aigateway.types.services import ImageResult, SpeechResult, TranscriptionResult, VideoResult

__all__ = ["AsyncAudio", "AsyncImages", "AsyncVideos", "Audio", "Images", "Videos"]

IMAGE_GENERATE = ServiceMethod(
    "images.generate", ImageGenerateParams, ImageGenerateInputs, ImageResult, path="image/generate"
)
IMAGE_CREATE = ServiceMethod("images.create", ImageParams, ImageInputs, ImageResult)
VIDEO_GENERATE = ServiceMethod("videos.generate", VideoParams, VideoInputs, VideoResult)
SPEECH = ServiceMethod("audio.speech", SpeechParams, SpeechInputs, SpeechResult)
TRANSCRIBE = ServiceMethod(
    "audio.transcribe", TranscriptionParams, TranscriptionInputs, TranscriptionResult
)


def _image_params(
    args: tuple[Any, ...], params: dict[str, Any]
) -> tuple[dict[str, Any], frozenset[str]]:
    request = one_request(args, "images.generate")
    return with_request(request, ImageGenerateRequest, "images.generate", params)


class Images(ServiceResource):
    """Image generation."""

    @overload
    def generate(
        self, request: ImageGenerateRequest, /, **options: Unpack[RequestOptions]
    ) -> ImageResult: ...
    @overload
    def generate(self, **params: Unpack[ImageGenerateParams]) -> ImageResult: ...
    @keyword_signature(ImageGenerateParams, request=ImageGenerateRequest)
    def generate(self, *args: Any, **params: Any) -> ImageResult:
        """Generate an image from ``prompt`` (``POST /image/generate``); ``size`` is
        ``'<width>x<height>'``, checked before sending. Billed per image. An
        `ImageGenerateRequest` may be passed instead of the keywords."""
        return self._run(IMAGE_GENERATE, *_image_params(args, params))

    @keyword_signature(ImageParams)
    def create(self, **params: Unpack[ImageParams]) -> ImageResult:
        """Generate ``n`` images from ``prompt`` with an image service on ``/run``. Billed per image."""
        return self._run(IMAGE_CREATE, params)


class AsyncImages(AsyncServiceResource):
    """Image generation."""

    @overload
    async def generate(
        self, request: ImageGenerateRequest, /, **options: Unpack[RequestOptions]
    ) -> ImageResult: ...
    @overload
    async def generate(self, **params: Unpack[ImageGenerateParams]) -> ImageResult: ...
    @keyword_signature(ImageGenerateParams, request=ImageGenerateRequest)
    async def generate(self, *args: Any, **params: Any) -> ImageResult:
        """Generate an image from ``prompt`` (``POST /image/generate``); ``size`` is
        ``'<width>x<height>'``, checked before sending. Billed per image. An
        `ImageGenerateRequest` may be passed instead of the keywords."""
        return await self._run(IMAGE_GENERATE, *_image_params(args, params))

    @keyword_signature(ImageParams)
    async def create(self, **params: Unpack[ImageParams]) -> ImageResult:
        """Generate ``n`` images from ``prompt`` with an image service on ``/run``. Billed per image."""
        return await self._run(IMAGE_CREATE, params)


class Videos(ServiceResource):
    """Video generation."""

    @keyword_signature(VideoParams)
    def generate(self, **params: Unpack[VideoParams]) -> VideoResult:
        """Generate a video of ``duration`` seconds from ``prompt``. Billed per second."""
        return self._run(VIDEO_GENERATE, params)


class AsyncVideos(AsyncServiceResource):
    """Video generation."""

    @keyword_signature(VideoParams)
    async def generate(self, **params: Unpack[VideoParams]) -> VideoResult:
        """Generate a video of ``duration`` seconds from ``prompt``. Billed per second."""
        return await self._run(VIDEO_GENERATE, params)


class Audio(ServiceResource):
    """Text to speech and speech to text."""

    @keyword_signature(SpeechParams)
    def speech(self, **params: Unpack[SpeechParams]) -> SpeechResult:
        """Speak ``text`` with a text-to-speech service. Billed per 1,000 characters."""
        return self._run(SPEECH, params)

    @keyword_signature(TranscriptionParams)
    def transcribe(self, **params: Unpack[TranscriptionParams]) -> TranscriptionResult:
        """Transcribe ``audio`` (a path, bytes, a binary file object or a URL; at most
        `MAX_FILE_BYTES`) with a speech-to-text service."""
        return self._run(TRANSCRIBE, params)


class AsyncAudio(AsyncServiceResource):
    """Text to speech and speech to text."""

    @keyword_signature(SpeechParams)
    async def speech(self, **params: Unpack[SpeechParams]) -> SpeechResult:
        """Speak ``text`` with a text-to-speech service. Billed per 1,000 characters."""
        return await self._run(SPEECH, params)

    @keyword_signature(TranscriptionParams)
    async def transcribe(self, **params: Unpack[TranscriptionParams]) -> TranscriptionResult:
        """Transcribe ``audio`` (a path, bytes, a binary file object or a URL; at most
        `MAX_FILE_BYTES`) with a speech-to-text service."""
        return await self._run(TRANSCRIBE, params)
