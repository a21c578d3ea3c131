"""Planners of the media categories: image, video, speech and transcription.

Each checks what only its service can, prices the call in the category's unit and says what
to make once paid; outputs are deterministic under the gateway's seed and the inputs.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from ._media import mp4, png, wav, wav_info
from ._service_context import Plan, ServiceContext, image_size, once

__all__ = ["MEDIA_PLANNERS"]


def _image(ctx: ServiceContext) -> Plan:
    width, height = image_size(ctx, "1024x1024")
    count = ctx.inputs.get("n", 1)

    def perform() -> dict[str, Any]:
        urls = [
            ctx.file_url(png(width, height, ctx.seed + index), "image/png")
            for index in range(count)
        ]
        return {
            "image_url": urls[0],
            "images": urls,
            "width": width,
            "height": height,
            "size": f"{width}x{height}",
        }

    return once(count, perform)


def _video(ctx: ServiceContext) -> Plan:
    width, height = image_size(ctx, "1280x720")
    seconds = ctx.inputs.get("duration", 5)

    def perform() -> dict[str, Any]:
        url = ctx.file_url(mp4(seconds, width, height, ctx.seed), "video/mp4")
        return {
            "video_url": url,
            "format": "mp4",
            "duration_seconds": seconds,
            "width": width,
            "height": height,
            "fps": 24,
        }

    return once(seconds, perform)


def _speech(ctx: ServiceContext) -> Plan:
    text: str = ctx.inputs["text"]
    seconds = round(min(60.0, max(0.5, len(text) * 0.06 / ctx.inputs.get("speed", 1.0))), 3)

    def perform() -> dict[str, Any]:
        url = ctx.file_url(wav(seconds, ctx.seed), "audio/wav")
        return {
            "audio_url": url,
            "format": "wav",
            "duration_seconds": seconds,
            "characters": len(text),
            "sample_rate": 8000,
            "voice": ctx.inputs.get("voice", "alloy"),
        }

    return Plan(Decimal(len(text)) / 1000, perform)


def _transcription(ctx: ServiceContext) -> Plan:
    data, mime = ctx.load_file(ctx.inputs["audio"], "audio")
    info = wav_info(data)
    language = ctx.inputs.get("language", "en")
    if info is None:
        text, seconds = f"Transcript of {len(data)} bytes of {mime} audio.", None
    else:
        seconds, rate, channels = info
        text = (
            f"Transcript of {seconds:.2f} seconds of {channels}-channel audio "
            f"at {rate} Hz ({len(data)} bytes)."
        )
    return once(1, lambda: {"text": text, "language": language, "duration_seconds": seconds})


MEDIA_PLANNERS = {
    "image": _image,
    "video": _video,
    "speech": _speech,
    "transcription": _transcription,
}
