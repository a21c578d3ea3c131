"""Media services: ``client.images``, ``client.videos``, ``client.audio``.

Image generation has the API's dedicated endpoint (``images.generate``: ``POST
/image/generate {model, prompt, size}``) and the image category of ``/run``
(``images.create``, which also takes ``n`` and extra inputs). Results are `MediaFile`\\ s:
``read()`` / ``save(path)`` (``aread`` / ``asave`` on the async client), shown inline in Jupyter.
"""

from __future__ import annotations

from typing import Any, overload

from typing_extensions import Unpack

from aigateway._call.call import APICall
from aigateway.resources._base import (
    AsyncResource,
    SyncResource,
    endpoint,
    keyword_signature,
    one_request,
    with_request,
)
from aigateway.resources._services import ServiceMethod, ServiceResource, build_service_call
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


class _ImagesMethods(ServiceResource):
    """What `Images` and `AsyncImages` share. ``generate`` is written in each: it takes a
    request model or keywords, two signatures that one method for both cannot carry."""

    def _generate_call(self, args: tuple[Any, ...], params: dict[str, Any]) -> APICall[ImageResult]:
        request = one_request(args, "images.generate")
        given, checked = with_request(request, ImageGenerateRequest, "images.generate", params)
        return build_service_call(IMAGE_GENERATE, given, self._pipeline.fetch, checked)

    @endpoint
    @keyword_signature(ImageParams)
    def create(self, **params: Unpack[ImageParams]) -> APICall[ImageResult]:
        """Generate ``n`` images from ``prompt`` with an image service on ``/run``. Billed per image."""
        return build_service_call(IMAGE_CREATE, params, self._pipeline.fetch)


class Images(_ImagesMethods, SyncResource):
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
        result: ImageResult = self._request(self._generate_call(args, params))
        return result


class AsyncImages(_ImagesMethods, AsyncResource):
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
        result: ImageResult = await self._request(self._generate_call(args, params))
        return result


class _VideosMethods(ServiceResource):
    """The methods of `Videos` and `AsyncVideos`."""

    @endpoint
    @keyword_signature(VideoParams)
    def generate(self, **params: Unpack[VideoParams]) -> APICall[VideoResult]:
        """Generate a video of ``duration`` seconds from ``prompt``. Billed per second."""
        return build_service_call(VIDEO_GENERATE, params, self._pipeline.fetch)


class Videos(_VideosMethods, SyncResource):
    """Video generation."""


class AsyncVideos(_VideosMethods, AsyncResource):
    """Video generation."""


class _AudioMethods(ServiceResource):
    """The methods of `Audio` and `AsyncAudio`."""

    @endpoint
    @keyword_signature(SpeechParams)
    def speech(self, **params: Unpack[SpeechParams]) -> APICall[SpeechResult]:
        """Speak ``text`` with a text-to-speech service. Billed per 1,000 characters."""
        return build_service_call(SPEECH, params, self._pipeline.fetch)

    @endpoint
    @keyword_signature(TranscriptionParams)
    def transcribe(self, **params: Unpack[TranscriptionParams]) -> APICall[TranscriptionResult]:
        """Transcribe ``audio`` (a path, bytes, a binary file object or a URL; at most
        `MAX_FILE_BYTES`) with a speech-to-text service."""
        return build_service_call(TRANSCRIBE, params, self._pipeline.fetch)


class Audio(_AudioMethods, SyncResource):
    """Text to speech and speech to text."""


class AsyncAudio(_AudioMethods, AsyncResource):
    """Text to speech and speech to text."""
