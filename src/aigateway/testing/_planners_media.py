"""Planners of the media categories: image, video, speech and transcription.

Each checks what only its service can and prices the call in the category's unit; the files
it makes are kept while planning (a quota without room refuses the call before it is billed)
and forgotten again when the balance is short. Outputs are deterministic under the gateway's
seed and the inputs.
"""

from __future__ import annotations

from decimal import Decimal

from aigateway.testing._media import mp4, png, wav, wav_info
from aigateway.testing._service_context import Plan, ServiceContext, image_size, once

__all__ = ["MEDIA_PLANNERS"]


def _image(ctx: ServiceContext) -> Plan:
    width, height = image_size(ctx, "1024x1024")
    count = ctx.inputs.get("n", 1)
    images = [(png(width, height, ctx.seed + index), "image/png") for index in range(count)]
    kept, forget = ctx.keep_files(images)
    urls = [ctx.url_of(file_id) for file_id in kept]
    output = {
        "image_url": urls[0],
        "images": urls,
        "width": width,
        "height": height,
        "size": f"{width}x{height}",
    }
    return Plan(Decimal(count), lambda: output, forget)


def _video(ctx: ServiceContext) -> Plan:
    width, height = image_size(ctx, "1280x720")
    seconds = ctx.inputs.get("duration", 5)
    kept, forget = ctx.keep_files([(mp4(seconds, width, height, ctx.seed), "video/mp4")])
    output = {
        "video_url": ctx.url_of(kept[0]),
        "format": "mp4",
        "duration_seconds": seconds,
        "width": width,
        "height": height,
        "fps": 24,
    }
    return Plan(Decimal(seconds), lambda: output, forget)


def _speech(ctx: ServiceContext) -> Plan:
    text: str = ctx.inputs["text"]
    seconds = round(min(60.0, max(0.5, len(text) * 0.06 / ctx.inputs.get("speed", 1.0))), 3)
    kept, forget = ctx.keep_files([(wav(seconds, ctx.seed), "audio/wav")])
    output = {
        "audio_url": ctx.url_of(kept[0]),
        "format": "wav",
        "duration_seconds": seconds,
        "characters": len(text),
        "sample_rate": 8000,
        "voice": ctx.inputs.get("voice", "alloy"),
    }
    return Plan(Decimal(len(text)) / 1000, lambda: output, forget)


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
