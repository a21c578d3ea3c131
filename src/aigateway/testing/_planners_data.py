"""Planners of the data categories: scraping, search, email, payments, documents, social
data, storage, databases and SMS.

Each checks what only its service can, prices the call in the category's unit and says what
to do once paid; storage and database calls act on the account's own stores only (the SQL
sandbox is `_sql`).
"""

from __future__ import annotations

import math
import urllib.parse
from decimal import Decimal
from typing import Any

from ._media import pdf_page_count
from ._service_context import WORDS, Plan, ServiceContext, once, refuse, sentences
from ._sql import SqlRefused

__all__ = ["DATA_PLANNERS"]


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
    rng = ctx.rng
    slug = "-".join(query.lower().split())[:40] or "query"
    results = [
        {
            "position": i,
            "title": f"{query} - {rng.choice(WORDS)} {i}",
            "url": f"https://{rng.choice(WORDS)}.example.com/{slug}/{i}",
            "snippet": f"{query}: {sentences(rng, 1)}",
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
    stores, files = ctx.stores, ctx.files
    operation, key = ctx.inputs["operation"], ctx.inputs.get("key", "")

    def describe(file_id: str) -> dict[str, Any]:
        data, content_type = files.get(file_id) or (b"", "application/octet-stream")
        return {
            "key": key,
            "size": len(data),
            "content_type": content_type,
            "url": ctx.file_url(data, content_type),
        }

    if operation == "put":
        data, mime = ctx.load_file(ctx.inputs["data"], "data")

        def put() -> dict[str, Any]:
            file_id = files.put(data, ctx.inputs.get("content_type", mime), owner=ctx.account.id)
            with stores.lock:
                stores.bucket(ctx.account.id, ctx.spec.id)[key] = file_id
            return describe(file_id)

        return once(1, put)
    with stores.lock:
        bucket = dict(stores.bucket(ctx.account.id, ctx.spec.id))
    if operation == "list":
        prefix = ctx.inputs.get("prefix", "")
        objects = []
        for name in sorted(k for k in bucket if k.startswith(prefix)):
            data, content_type = files.get(bucket[name]) or (b"", "")
            objects.append({"key": name, "size": len(data), "content_type": content_type})
        return once(1, lambda: {"objects": objects})
    if operation == "delete":

        def delete() -> dict[str, Any]:
            with stores.lock:
                removed = stores.bucket(ctx.account.id, ctx.spec.id).pop(key, None)
            return {"key": key, "deleted": removed is not None}

        return once(1, delete)
    if key not in bucket:
        raise refuse(404, f"no object has the key {key!r}", "object_not_found", ctx.param("key"))
    return once(1, lambda: describe(bucket[key]))


def _database(ctx: ServiceContext) -> Plan:
    database = ctx.stores.database(ctx.account.id, ctx.spec.id)
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
