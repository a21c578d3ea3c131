"""The planners of the built-in service categories: what each call costs and does.

Media (image, video, speech, transcription) and data (scraping, search, email, payments,
documents, social data, storage, databases, SMS): each planner checks what only its service
can, prices the call in the category's unit and says what to do once paid. Files a call makes
are kept while planning (a quota without room refuses the call before it is billed) and
forgotten again when the balance is short; storage and database calls act on the account's
own stores only (the SQL sandbox is `aigateway.testing._sql`), within its quota: a stored
object is counted while planning, and one deleted or written over frees its room. Outputs are
deterministic under the gateway's seed and the inputs; replies repeat only bounded parts of
the inputs.
"""

from __future__ import annotations

import math
import random
import urllib.parse
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from aigateway.testing._core.accounts import to_decimal
from aigateway.testing._core.context import Plan, Planner, Refusal, ServiceContext, refuse
from aigateway.testing._core.quotas import QuotaExceeded
from aigateway.testing._routes.media import mp4, pdf_page_count, png, wav, wav_info
from aigateway.testing._sql.database import SqlRefused

__all__ = ["MAX_IMAGE_SIDE", "MAX_PAYMENT_AMOUNT", "MAX_TEXT_DOCUMENT_BYTES", "PLANNERS"]

MAX_IMAGE_SIDE = 2048
"""The largest width or height the mock draws (a 400 above it)."""
MAX_PAYMENT_AMOUNT = 10**12
"""The largest payment, in the currency's minor unit."""
MAX_TEXT_DOCUMENT_BYTES = 1024 * 1024
"""The largest text document parsed (its text comes back in the reply, twice)."""
_ECHOED_CHARS = 100
"""How much of a query a search result repeats."""


# -- media ------------------------------------------------------------------------------------


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


# -- data -------------------------------------------------------------------------------------


def _scrape(ctx: ServiceContext) -> Plan:
    url: str = ctx.inputs["url"]
    parts = urllib.parse.urlsplit(url)
    rng = ctx.rng
    links = [f"{parts.scheme}://{parts.netloc}/{rng.choice(WORDS)}" for _ in range(3)]
    title = f"{parts.netloc} | {rng.choice(WORDS).capitalize()} {rng.choice(WORDS)}"
    text = sentences(rng, 4)
    return once(
        1, lambda: {"url": url, "status_code": 200, "title": title, "text": text, "links": links}
    )


def _search(ctx: ServiceContext) -> Plan:
    query: str = ctx.inputs["query"]
    topic = query[:_ECHOED_CHARS]  # each result repeats the query's start, never all of it
    rng = ctx.rng
    slug = "-".join(topic.lower().split())[:40] or "query"
    results = [
        {
            "position": i,
            "title": f"{topic} - {rng.choice(WORDS)} {i}",
            "url": f"https://{rng.choice(WORDS)}.example.com/{slug}/{i}",
            "snippet": f"{topic}: {sentences(rng, 1)}",
        }
        for i in range(1, ctx.inputs.get("num_results", 5) + 1)
    ]
    return once(1, lambda: {"query": query, "results": results})


def _email(ctx: ServiceContext) -> Plan:
    to = ctx.inputs["to"]
    recipients = [to] if isinstance(to, str) else list(to)
    return once(
        1,
        lambda: {
            "message_id": ctx.new_id("email", "msg_"),
            "status": "queued",
            "to": recipients,
            "subject": ctx.inputs["subject"],
        },
    )


def _payment(ctx: ServiceContext) -> Plan:
    if ctx.inputs["amount"] > MAX_PAYMENT_AMOUNT:
        raise refuse(
            400,
            f"{ctx.param('amount')}: at most {MAX_PAYMENT_AMOUNT} (in the minor unit)",
            "invalid_parameter",
            ctx.param("amount"),
        )
    return once(
        1,
        lambda: {
            "payment_id": ctx.new_id("payment", "pay_"),
            "status": "succeeded",
            "amount": ctx.inputs["amount"],
            "currency": ctx.inputs["currency"].lower(),
            "description": ctx.inputs.get("description"),
        },
    )


def _document_pages(data: bytes, mime: str) -> list[str]:
    if mime.startswith("text/"):
        return data.decode("utf-8", errors="replace").split("\f")
    if mime == "application/pdf" or data.startswith(b"%PDF"):
        count = pdf_page_count(data)
        return [f"Page {n} of a {count}-page PDF document." for n in range(1, count + 1)]
    return [f"A {mime} document of {len(data)} bytes."]


def _document(ctx: ServiceContext) -> Plan:
    data, mime = ctx.load_file(ctx.inputs["file"], "file")
    if mime.startswith("text/") and len(data) > MAX_TEXT_DOCUMENT_BYTES:
        raise refuse(
            400,
            f"{ctx.param('file')}: the mock parses text documents of at most "
            f"{MAX_TEXT_DOCUMENT_BYTES} bytes (their text is in the reply), got {len(data)}",
            "file_too_large",
            ctx.param("file"),
        )
    texts = _document_pages(data, mime)
    wanted = ctx.inputs.get("pages") or list(range(1, len(texts) + 1))
    beyond = [n for n in wanted if n > len(texts)]
    if beyond:
        raise refuse(
            400,
            f"{ctx.param('pages')}: the document has {len(texts)} pages, not {beyond[0]}",
            "invalid_parameter",
            ctx.param("pages"),
        )
    pages = [{"number": n, "text": texts[n - 1]} for n in wanted]
    output = {
        "pages": pages,
        "page_count": len(texts),
        "content_type": mime,
        "text": "\n\n".join(page["text"] for page in pages),
    }
    return once(len(pages), lambda: output)


def _social(ctx: ServiceContext) -> Plan:
    handle = ctx.inputs["handle"].lstrip("@")
    rng = ctx.rng
    now = int(ctx.clock.now())
    profile = {
        "handle": handle,
        "platform": ctx.inputs.get("platform", "twitter"),
        "display_name": handle.replace("_", " ").title(),
        "bio": sentences(rng, 1),
        "followers": rng.randint(0, 100_000),
        "following": rng.randint(0, 2_000),
    }
    posts = [
        {
            "id": f"post_{rng.getrandbits(48):012x}",
            "text": sentences(rng, 1),
            "likes": rng.randint(0, 5_000),
            "created": now - 3600 * (i + 1),
        }
        for i in range(ctx.inputs.get("limit", 5))
    ]
    return once(1, lambda: {"profile": profile, "posts": posts})


def _storage(ctx: ServiceContext) -> Plan:
    stores, files, owner = ctx.stores, ctx.files, ctx.account.id
    operation, key = ctx.inputs["operation"], ctx.inputs.get("key", "")

    def describe(file_id: str, data: bytes, content_type: str) -> dict[str, Any]:
        url = ctx.url_of(file_id)
        return {"key": key, "size": len(data), "content_type": content_type, "url": url}

    if operation == "put":
        data, mime = ctx.load_file(ctx.inputs["data"], "data")
        content_type = ctx.inputs.get("content_type", mime)
        with stores.lock:
            replaced = stores.bucket(owner, ctx.spec.id).get(key)
        # counted now (a 403 when full), less the object it writes over
        kept, forget = ctx.keep_files([(data, content_type)], replacing=replaced)
        file_id = kept[0]

        def put() -> dict[str, Any]:
            with stores.lock:
                replaced = stores.bucket(owner, ctx.spec.id).get(key)
                stores.bucket(owner, ctx.spec.id)[key] = file_id
            if replaced is not None:
                files.delete(replaced)  # an object written over frees its room
            return describe(file_id, data, content_type)

        return Plan(Decimal(1), put, forget)
    with stores.lock:
        bucket = dict(stores.bucket(owner, ctx.spec.id))
    if operation == "list":
        prefix = ctx.inputs.get("prefix", "")
        objects = []
        for name in sorted(k for k in bucket if k.startswith(prefix)):
            found = files.get(bucket[name])
            if found is not None:
                objects.append({"key": name, "size": len(found[0]), "content_type": found[1]})
        return once(1, lambda: {"objects": objects})
    if operation == "delete":

        def delete() -> dict[str, Any]:
            with stores.lock:
                removed = stores.bucket(owner, ctx.spec.id).pop(key, None)
            if removed is not None:
                files.delete(removed)
            return {"key": key, "deleted": removed is not None}

        return once(1, delete)
    found = files.get(bucket[key]) if key in bucket else None
    if found is None:
        raise refuse(404, f"no object has the key {key!r}", "object_not_found", ctx.param("key"))
    return once(1, lambda: describe(bucket[key], *found))


def _database(ctx: ServiceContext) -> Plan:
    try:
        database = ctx.stores.database(ctx.account.id, ctx.spec.id)
    except QuotaExceeded as exc:
        raise Refusal(exc.response(ctx.param("sql"))) from None
    sql, params = ctx.inputs["sql"], ctx.inputs.get("params", ())
    try:
        pending = database.run(sql, params, read_only=bool(ctx.inputs.get("read_only")))
    except SqlRefused as refused:
        message = f"{ctx.param('sql')}: {refused.message}"
        raise refuse(refused.status, message, refused.code, ctx.param("sql")) from None
    return Plan(Decimal(1), pending.commit, pending.rollback)


def _sms(ctx: ServiceContext) -> Plan:
    return once(
        1,
        lambda: {
            "message_id": ctx.new_id("sms", "sms_"),
            "status": "queued",
            "to": ctx.inputs["to"],
            "segments": math.ceil(len(ctx.inputs["text"]) / 160),
        },
    )


PLANNERS: dict[str, Planner] = {
    "image": _image,
    "video": _video,
    "speech": _speech,
    "transcription": _transcription,
    "scrape": _scrape,
    "search": _search,
    "email": _email,
    "payment": _payment,
    "document": _document,
    "social": _social,
    "storage": _storage,
    "database": _database,
    "sms": _sms,
}
"""The planner of each built-in category, by its name."""


# -- what the planners share -----------------------------------------------------------------

WORDS = [
    "gateway",
    "model",
    "signal",
    "river",
    "amber",
    "quiet",
    "orbit",
    "lantern",
    "meadow",
    "copper",
    "harbor",
    "pixel",
    "summit",
    "velvet",
    "garden",
    "circuit",
    "timber",
    "echo",
    "prism",
    "falcon",
]


def sentences(rng: random.Random, count: int) -> str:
    out = []
    for _ in range(count):
        words = [rng.choice(WORDS) for _ in range(rng.randint(5, 10))]
        out.append(" ".join(words).capitalize() + ".")
    return " ".join(out)


def image_size(ctx: ServiceContext, default: str) -> tuple[int, int]:
    """The ``size`` input (``<width>x<height>``, checked by its type) as two numbers, each
    at most `MAX_IMAGE_SIDE` (its digits are counted before they are converted)."""
    longest = len(str(MAX_IMAGE_SIDE))
    sides = [
        int(part) if len(part) <= longest else MAX_IMAGE_SIDE + 1
        for part in str(ctx.inputs.get("size", default)).split("x")
    ]
    if max(sides) > MAX_IMAGE_SIDE:
        raise refuse(
            400,
            f"{ctx.param('size')}: the mock draws at most {MAX_IMAGE_SIDE}x{MAX_IMAGE_SIDE}",
            "size_too_large",
            ctx.param("size"),
        )
    width, height = sides
    return width, height


def once(quantity: float | int | Decimal, perform: Callable[[], dict[str, Any]]) -> Plan:
    return Plan(to_decimal(quantity), perform)
