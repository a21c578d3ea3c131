"""The mock's non-chat routes: ``POST /v1/run``, ``POST /v1/image/generate``, ``GET /v1/files/{id}``.

A request goes through the same steps as chat: the key (401), a JSON object body (400), the
body's shape (400 naming the field), the service id (404 naming the closest ids; a chat model
id is a 400 pointing to ``/chat/completions``), the inputs of the service's category (400
naming ``inputs.<field>``, checked with the very TypedDicts the client checks), then what only
the service can tell (a file it cannot read, a missing storage key, bad SQL). Only then is the
call billed (price x quantity in the spec's unit; 402 and nothing done when the balance is
short), and only a paid call acts: files are made, objects stored, SQL committed.

Outputs are deterministic under the gateway's seed and the request; generated files are kept
in the gateway's `FileStore` and served, without a key (their ids are unguessable, like signed
URLs), at ``/v1/files/{id}`` on the host the request came to.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import sqlite3
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter

from ..errors import InvalidRequestError
from ..types._validation import validate
from ..types.files import MAX_FILE_BYTES, decode_data_url
from ..types.service_params import (
    CATEGORIES,
    SERVICE_ALLOWED,
    ImageGenerateRequest,
    RunRequest,
)
from ._accounts import Account, to_decimal
from ._media import mp4, pdf_page_count, png, wav, wav_info
from ._services import ServiceSpec
from ._wire import MockRequest, MockResponse, error_response, json_response

if TYPE_CHECKING:
    from ._gateway import MockGateway

__all__ = ["MAX_IMAGE_SIDE", "handle_file", "handle_image_generate", "handle_run"]

MAX_IMAGE_SIDE = 2048
"""The largest width or height the mock draws (a 400 above it)."""
_INVALID = "invalid_request_error"
_FILES_PATH = "/v1/files/"
_RUN_ADAPTER: TypeAdapter[RunRequest] = TypeAdapter(RunRequest)
_IMAGE_ADAPTER: TypeAdapter[ImageGenerateRequest] = TypeAdapter(ImageGenerateRequest)
_INPUT_ADAPTERS: dict[str, TypeAdapter[Any]] = {
    category: TypeAdapter(inputs) for category, inputs in CATEGORIES.items()
}
_WORDS = [
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


class _Refusal(Exception):
    """A planner's way to answer with an error instead of a plan."""

    def __init__(self, response: MockResponse) -> None:
        self.response = response


def _refuse(status: int, message: str, code: str, param: str | None = None) -> _Refusal:
    return _Refusal(error_response(status, message, _INVALID, code, param=param))


@dataclass
class _Plan:
    """What a checked call will cost (``quantity`` of the service's unit) and do once paid."""

    quantity: Decimal
    perform: Callable[[], dict[str, Any]]
    cancel: Callable[[], None] = field(default=lambda: None)


@dataclass
class _Context:
    gateway: MockGateway
    request: MockRequest
    account: Account
    spec: ServiceSpec
    inputs: dict[str, Any]
    param_prefix: str

    @property
    def rng(self) -> random.Random:
        return random.Random(self.seed)

    @property
    def seed(self) -> int:
        text = json.dumps(self.inputs, sort_keys=True, default=str)
        digest = hashlib.sha256(f"{self.gateway.seed}:{self.spec.id}:{text}".encode()).digest()
        return int.from_bytes(digest[:8], "big")

    def param(self, name: str) -> str:
        return self.param_prefix + name

    def new_id(self, kind: str, prefix: str) -> str:
        return self.gateway._ids.next(kind, prefix)

    def file_url(self, data: bytes, content_type: str) -> str:
        """Keep a file in the gateway's store; its URL on the host the request came to."""
        file_id = self.gateway.files.put(data, content_type)
        host = self.request.headers.get("host")
        if host:
            return f"http://{host}{_FILES_PATH}{file_id}"
        return f"{self.gateway.base_url.rstrip('/')}/files/{file_id}"

    def load_file(self, url: str, name: str) -> tuple[bytes, str]:
        """The bytes and MIME type of a file input: a data: URL or one of the mock's files."""
        try:
            decoded = decode_data_url(url)
        except ValueError as exc:
            message = f"{self.param(name)}: {exc}"
            raise _refuse(400, message, "invalid_file", self.param(name)) from None
        if decoded is None:
            path = urllib.parse.urlsplit(url).path
            found = (
                self.gateway.files.get(path[len(_FILES_PATH) :])
                if path.startswith(_FILES_PATH)
                else None
            )
            if found is None:
                raise _refuse(
                    400,
                    f"{self.param(name)}: the mock gateway reads only data: URLs and its own "
                    f"{_FILES_PATH} URLs, not {url[:100]!r}",
                    "unfetchable_url",
                    self.param(name),
                )
            decoded = found
        data, mime = decoded
        if len(data) > MAX_FILE_BYTES:
            raise _refuse(
                400,
                f"{self.param(name)}: the file has {len(data)} bytes; at most {MAX_FILE_BYTES}",
                "file_too_large",
                self.param(name),
            )
        return data, mime


def _sentences(rng: random.Random, count: int) -> str:
    out = []
    for _ in range(count):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(5, 10))]
        out.append(" ".join(words).capitalize() + ".")
    return " ".join(out)


def _size(ctx: _Context, default: str) -> tuple[int, int]:
    width, height = (int(part) for part in ctx.inputs.get("size", default).split("x"))
    if max(width, height) > MAX_IMAGE_SIDE:
        raise _refuse(
            400,
            f"{ctx.param('size')}: the mock draws at most {MAX_IMAGE_SIDE}x{MAX_IMAGE_SIDE}",
            "size_too_large",
            ctx.param("size"),
        )
    return width, height


def _once(quantity: float | int | Decimal, perform: Callable[[], dict[str, Any]]) -> _Plan:
    return _Plan(to_decimal(quantity), perform)


# -- one planner per category: check what only the service can, price, and what to do ------


def _image(ctx: _Context) -> _Plan:
    width, height = _size(ctx, "1024x1024")
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

    return _once(count, perform)


def _video(ctx: _Context) -> _Plan:
    width, height = _size(ctx, "1280x720")
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

    return _once(seconds, perform)


def _speech(ctx: _Context) -> _Plan:
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

    return _Plan(Decimal(len(text)) / 1000, perform)


def _transcription(ctx: _Context) -> _Plan:
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
    return _once(1, lambda: {"text": text, "language": language, "duration_seconds": seconds})


def _scrape(ctx: _Context) -> _Plan:
    url: str = ctx.inputs["url"]
    parts = urllib.parse.urlsplit(url)
    rng = ctx.rng
    links = [f"{parts.scheme}://{parts.netloc}/{rng.choice(_WORDS)}" for _ in range(3)]
    title = f"{parts.netloc} | {rng.choice(_WORDS).capitalize()} {rng.choice(_WORDS)}"
    text = _sentences(rng, 4)
    return _once(
        1, lambda: {"url": url, "status_code": 200, "title": title, "text": text, "links": links}
    )


def _search(ctx: _Context) -> _Plan:
    query: str = ctx.inputs["query"]
    rng = ctx.rng
    slug = "-".join(query.lower().split())[:40] or "query"
    results = [
        {
            "position": i,
            "title": f"{query} - {rng.choice(_WORDS)} {i}",
            "url": f"https://{rng.choice(_WORDS)}.example.com/{slug}/{i}",
            "snippet": f"{query}: {_sentences(rng, 1)}",
        }
        for i in range(1, ctx.inputs.get("num_results", 5) + 1)
    ]
    return _once(1, lambda: {"query": query, "results": results})


def _email(ctx: _Context) -> _Plan:
    to = ctx.inputs["to"]
    recipients = [to] if isinstance(to, str) else list(to)
    return _once(
        1,
        lambda: {
            "message_id": ctx.new_id("email", "msg_"),
            "status": "queued",
            "to": recipients,
            "subject": ctx.inputs["subject"],
        },
    )


def _payment(ctx: _Context) -> _Plan:
    return _once(
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


def _document(ctx: _Context) -> _Plan:
    data, mime = ctx.load_file(ctx.inputs["file"], "file")
    texts = _document_pages(data, mime)
    wanted = ctx.inputs.get("pages") or list(range(1, len(texts) + 1))
    beyond = [n for n in wanted if n > len(texts)]
    if beyond:
        raise _refuse(
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
    return _once(len(pages), lambda: output)


def _social(ctx: _Context) -> _Plan:
    handle = ctx.inputs["handle"].lstrip("@")
    rng = ctx.rng
    now = int(ctx.gateway.clock.now())
    profile = {
        "handle": handle,
        "platform": ctx.inputs.get("platform", "twitter"),
        "display_name": handle.replace("_", " ").title(),
        "bio": _sentences(rng, 1),
        "followers": rng.randint(0, 100_000),
        "following": rng.randint(0, 2_000),
    }
    posts = [
        {
            "id": f"post_{rng.getrandbits(48):012x}",
            "text": _sentences(rng, 1),
            "likes": rng.randint(0, 5_000),
            "created": now - 3600 * (i + 1),
        }
        for i in range(ctx.inputs.get("limit", 5))
    ]
    return _once(1, lambda: {"profile": profile, "posts": posts})


def _storage(ctx: _Context) -> _Plan:
    stores, files = ctx.gateway.stores, ctx.gateway.files
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
            file_id = files.put(data, ctx.inputs.get("content_type", mime))
            with stores.lock:
                stores.bucket(ctx.account.id, ctx.spec.id)[key] = file_id
            return describe(file_id)

        return _once(1, put)
    with stores.lock:
        bucket = dict(stores.bucket(ctx.account.id, ctx.spec.id))
    if operation == "list":
        prefix = ctx.inputs.get("prefix", "")
        objects = []
        for name in sorted(k for k in bucket if k.startswith(prefix)):
            data, content_type = files.get(bucket[name]) or (b"", "")
            objects.append({"key": name, "size": len(data), "content_type": content_type})
        return _once(1, lambda: {"objects": objects})
    if operation == "delete":

        def delete() -> dict[str, Any]:
            with stores.lock:
                removed = stores.bucket(ctx.account.id, ctx.spec.id).pop(key, None)
            return {"key": key, "deleted": removed is not None}

        return _once(1, delete)
    if key not in bucket:
        raise _refuse(404, f"no object has the key {key!r}", "object_not_found", ctx.param("key"))
    return _once(1, lambda: describe(bucket[key]))


def _database(ctx: _Context) -> _Plan:
    connection, lock = ctx.gateway.stores.database(ctx.account.id, ctx.spec.id)
    read_only = bool(ctx.inputs.get("read_only"))
    lock.acquire()
    try:
        connection.execute("BEGIN")
        if read_only:
            connection.execute("PRAGMA query_only = ON")
        try:
            before = connection.total_changes
            cursor = connection.execute(ctx.inputs["sql"], ctx.inputs.get("params", ()))
            columns = [column[0] for column in cursor.description or ()]
            rows = [[_json_value(v) for v in row] for row in cursor.fetchall()]
            affected = connection.total_changes - before
        finally:
            if read_only:
                connection.execute("PRAGMA query_only = OFF")
    except sqlite3.Error as exc:
        connection.execute("ROLLBACK")
        lock.release()
        code = "read_only" if read_only and "readonly" in str(exc).replace(" ", "") else "sql_error"
        raise _refuse(400, f"{ctx.param('sql')}: {exc}", code, ctx.param("sql")) from None

    def finish(statement: str) -> None:
        connection.execute(statement)
        lock.release()

    def commit() -> dict[str, Any]:
        finish("COMMIT")
        return {"columns": columns, "rows": rows, "row_count": len(rows), "rows_affected": affected}

    return _Plan(Decimal(1), commit, lambda: finish("ROLLBACK"))


def _json_value(value: object) -> object:
    return value.hex() if isinstance(value, bytes) else value


def _sms(ctx: _Context) -> _Plan:
    return _once(
        1,
        lambda: {
            "message_id": ctx.new_id("sms", "sms_"),
            "status": "queued",
            "to": ctx.inputs["to"],
            "segments": math.ceil(len(ctx.inputs["text"]) / 160),
        },
    )


_PLANNERS: Mapping[str, Callable[[_Context], _Plan]] = {
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


# -- the routes -----------------------------------------------------------------------------


def _json_object(request: MockRequest) -> dict[str, Any] | MockResponse:
    try:
        raw = request.json()
    except ValueError as exc:
        return error_response(400, f"the body is not valid JSON: {exc}", _INVALID, "invalid_json")
    if not isinstance(raw, dict):
        return error_response(
            400,
            f"the body must be a JSON object, got {type(raw).__name__}",
            _INVALID,
            "invalid_body",
        )
    return raw


def _checked(
    adapter: TypeAdapter[Any], data: object, prefix: str = ""
) -> dict[str, Any] | MockResponse:
    try:
        checked: dict[str, Any] = validate(adapter, data, SERVICE_ALLOWED)
    except InvalidRequestError as exc:
        message = "; ".join(prefix + str(violation) for violation in exc.violations)
        return error_response(400, message, _INVALID, "invalid_parameter", param=prefix + exc.field)
    return checked


def _accept(
    gateway: MockGateway, request: MockRequest, adapter: TypeAdapter[Any]
) -> tuple[Account, dict[str, Any], ServiceSpec] | MockResponse:
    """The key, a JSON object body of the right shape, a known service; else the error."""
    account = gateway._authenticate(request)
    if isinstance(account, MockResponse):
        return account
    body = _json_object(request)
    if isinstance(body, MockResponse):
        return body
    checked = _checked(adapter, body)
    if isinstance(checked, MockResponse):
        return checked
    spec = _find_service(gateway, checked["model"])
    if isinstance(spec, MockResponse):
        return spec
    return account, checked, spec


def _find_service(gateway: MockGateway, service_id: str) -> ServiceSpec | MockResponse:
    spec = gateway.services.find(service_id)
    if spec is not None:
        return spec
    if gateway.catalogue.find(service_id) is not None:
        return error_response(
            400,
            f"{service_id!r} is a chat model; send it to POST /chat/completions",
            _INVALID,
            "wrong_endpoint",
            param="model",
        )
    closest = gateway.services.closest(service_id)
    hint = f"closest known ids: {', '.join(closest)}" if closest else "no similar service id"
    return error_response(
        404,
        f"service {service_id!r} does not exist; {hint}",
        _INVALID,
        "model_not_found",
        param="model",
    )


def _execute(
    gateway: MockGateway,
    request: MockRequest,
    request_id: str,
    account: Account,
    spec: ServiceSpec,
    raw_inputs: dict[str, Any],
    *,
    flat: bool,
) -> MockResponse:
    """Check the inputs, plan, bill, act, and answer (``flat``: the output at the top level)."""
    prefix = "" if flat else "inputs."
    inputs = _checked(_INPUT_ADAPTERS[spec.category], raw_inputs, prefix)
    if isinstance(inputs, MockResponse):
        return inputs
    context = _Context(gateway, request, account, spec, inputs, prefix)
    try:
        plan = _PLANNERS[spec.category](context)
    except _Refusal as refusal:
        return refusal.response
    from ._gateway import BALANCE_WARNING_THRESHOLD, insufficient_credits_response

    cost = plan.quantity * to_decimal(spec.price)
    charged = gateway.ledger.charge(account.key, cost, model=spec.id, request_id=request_id)
    if not charged.ok:
        plan.cancel()
        return insufficient_credits_response(cost, charged.balance)
    output = plan.perform()
    reply: dict[str, Any] = {
        "id": gateway._ids.next("run", "img_" if flat else "run_"),
        "object": "image" if flat else "run",
        "created": int(gateway.clock.now()),
        "model": spec.id,
        "category": spec.category,
    }
    reply.update(output if flat else {"output": output})
    reply["usage"] = {
        "quantity": float(plan.quantity),
        "unit": spec.unit,
        "credits": round(float(cost), 6),
    }
    reply["_remaining_credits"] = round(float(charged.balance), 6)
    reply["_balance_warning"] = charged.balance < BALANCE_WARNING_THRESHOLD
    return json_response(200, reply)


def handle_run(gateway: MockGateway, request: MockRequest, request_id: str, _: str) -> MockResponse:
    """``POST /v1/run {model, inputs}``."""
    accepted = _accept(gateway, request, _RUN_ADAPTER)
    if isinstance(accepted, MockResponse):
        return accepted
    account, checked, spec = accepted
    return _execute(gateway, request, request_id, account, spec, checked["inputs"], flat=False)


def handle_image_generate(
    gateway: MockGateway, request: MockRequest, request_id: str, _: str
) -> MockResponse:
    """``POST /v1/image/generate {model, prompt, size}`` -> ``{image_url, ...}``."""
    accepted = _accept(gateway, request, _IMAGE_ADAPTER)
    if isinstance(accepted, MockResponse):
        return accepted
    account, checked, spec = accepted
    if spec.category != "image":
        images = ", ".join(gateway.services.of_category("image"))
        return error_response(
            400,
            f"{spec.id!r} is a {spec.category} service, not an image service; image "
            f"services: {images}",
            _INVALID,
            "wrong_service_category",
            param="model",
        )
    inputs = {name: value for name, value in checked.items() if name != "model"}
    return _execute(gateway, request, request_id, account, spec, inputs, flat=True)


def handle_file(
    gateway: MockGateway, request: MockRequest, request_id: str, file_id: str
) -> MockResponse:
    """``GET /v1/files/{id}``: a file a service made, with its content type."""
    found = gateway.files.get(file_id)
    if found is None:
        return error_response(404, f"no file has the id {file_id!r}", _INVALID, "file_not_found")
    data, content_type = found
    return MockResponse(200, {"content-type": content_type}, data)
