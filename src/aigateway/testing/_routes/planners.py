"""Planners of the data categories: scraping, search, email, payments, documents, social
data, storage, databases and SMS.

Each checks what only its service can, prices the call in the category's unit and says what
to do once paid; storage and database calls act on the account's own stores only (the SQL
sandbox is `_sql`), within its quota: a stored object is counted while planning, and one
deleted or written over frees its room. Replies repeat only bounded parts of the inputs.
"""

from __future__ import annotations

import math
import urllib.parse
from decimal import Decimal
from typing import Any

from aigateway.testing._media import pdf_page_count
from aigateway.testing._quotas import QuotaExceeded
from aigateway.testing._service_context import (
    WORDS,
    Plan,
    Refusal,
    ServiceContext,
    once,
    refuse,
    sentences,
)
from aigateway.testing._sql import SqlRefused

__all__ = ["DATA_PLANNERS", "MAX_PAYMENT_AMOUNT", "MAX_TEXT_DOCUMENT_BYTES"]

MAX_PAYMENT_AMOUNT = 10**12
"""The largest payment, in the currency's minor unit."""
MAX_TEXT_DOCUMENT_BYTES = 1024 * 1024
"""The largest text document parsed (its text comes back in the reply, twice)."""
_ECHOED_CHARS = 100
"""How much of a query a search result repeats."""


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


DATA_PLANNERS = {
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
