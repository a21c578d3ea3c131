"""The mock's non-chat routes: ``POST /v1/run``, ``POST /v1/image/generate``, ``GET /v1/files/{id}``.

A request goes through the same steps as chat: the key (401), a JSON object body (400), the
body's shape (400 naming the field), the service id (404 naming the closest ids; a chat model
id is a 400 pointing to ``/chat/completions``), the inputs of the service's category (400
naming ``inputs.<field>``, checked with the very TypedDicts the client checks), then what only
the service can tell (its category's planner: a file it cannot read, a missing storage key,
bad SQL). Only then is the call billed (price x quantity in the service's unit; 402 and
nothing done when the balance is short), and only a paid call acts.

Categories are data: a `ServiceCategory` pairs the inputs' type with the planner, and a
gateway's ``categories`` holds the built-in ones and those added with
``gateway.add_service_category``. Files the services make belong to the calling account and
are served at ``/v1/files/{id}`` to its key only (``DELETE`` forgets one); they count
towards the account's quota, which a planner checks before the call is billed.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from pydantic import TypeAdapter

from aigateway.errors import InvalidRequestError
from aigateway.testing._core.accounts import Account, to_decimal
from aigateway.testing._core.billing import credits_fields, insufficient_credits_response
from aigateway.testing._core.context import (
    Plan,
    Refusal,
    RequestContext,
    ServiceCategory,
    ServiceContext,
    authenticated_body,
)
from aigateway.testing._core.services import ServiceSpec
from aigateway.testing._core.wire import (
    INVALID,
    MockResponse,
    error_response,
    json_response,
    shown,
)
from aigateway.testing._routes.planners import PLANNERS
from aigateway.types._validation import validate
from aigateway.types.service_params import CATEGORIES, SERVICE_ALLOWED, ImageGenerateBody, RunBody

__all__ = [
    "builtin_categories",
    "delete_file",
    "handle_file",
    "handle_image_generate",
    "handle_run",
]

_RUN_ADAPTER: TypeAdapter[RunBody] = TypeAdapter(RunBody)
_IMAGE_ADAPTER: TypeAdapter[ImageGenerateBody] = TypeAdapter(ImageGenerateBody)

INPUT_LIMITS: Mapping[str, Mapping[str, int]] = {
    "image": {"prompt": 4_000, "negative_prompt": 4_000},
    "video": {"prompt": 4_000},
    "speech": {"voice": 100},
    "transcription": {"language": 100, "prompt": 4_000},
    "scrape": {"url": 2_048},
    "search": {"query": 2_000},
    "email": {"to": 320, "subject": 1_000, "sender": 320, "reply_to": 320},
    "payment": {"description": 1_000, "customer": 200},
    "social": {"handle": 100, "platform": 50},
    "storage": {"key": 1_024, "prefix": 1_024, "content_type": 200},
    "sms": {"sender": 50},
}
"""The longest string each built-in category takes per input, in characters: whatever a
reply repeats of its inputs is bounded by these."""


def builtin_categories() -> dict[str, ServiceCategory]:
    """The categories every gateway starts with (a fresh dict)."""
    return {
        name: ServiceCategory(
            name, CATEGORIES[name], PLANNERS[name], max_chars=INPUT_LIMITS.get(name)
        )
        for name in CATEGORIES
    }


def _too_long(
    inputs: Mapping[str, Any], max_chars: Mapping[str, int], prefix: str
) -> MockResponse | None:
    """The 400 for the first input longer than its limit, if any."""
    for name, limit in max_chars.items():
        value = inputs.get(name)
        strings = value if isinstance(value, list) else [value]
        longest = max((len(item) for item in strings if isinstance(item, str)), default=0)
        if longest > limit:
            return error_response(
                400,
                f"{prefix}{name}: at most {limit} characters, got {longest}",
                INVALID,
                "input_too_long",
                param=prefix + name,
            )
    return None


def _checked(
    adapter: TypeAdapter[Any],
    data: object,
    prefix: str = "",
    allowed: Mapping[str, str] = SERVICE_ALLOWED,
) -> dict[str, Any] | MockResponse:
    try:
        checked: dict[str, Any] = validate(adapter, data, allowed)
    except InvalidRequestError as exc:
        message = "; ".join(prefix + str(violation) for violation in exc.violations)
        return error_response(400, message, INVALID, "invalid_parameter", param=prefix + exc.field)
    return checked


def _accept(
    ctx: RequestContext, adapter: TypeAdapter[Any]
) -> tuple[Account, dict[str, Any], ServiceSpec] | MockResponse:
    """The key, a JSON object body of the right shape, a known service; else the error."""
    accepted = authenticated_body(ctx)
    if isinstance(accepted, MockResponse):
        return accepted
    account, body = accepted
    checked = _checked(adapter, body)
    if isinstance(checked, MockResponse):
        return checked
    spec = _find_service(ctx, checked["model"])
    if isinstance(spec, MockResponse):
        return spec
    return account, checked, spec


def _find_service(ctx: RequestContext, service_id: str) -> ServiceSpec | MockResponse:
    spec = ctx.services.find(service_id)
    if spec is not None:
        return spec
    if ctx.catalogue.find(service_id) is not None:
        return error_response(
            400,
            f"{service_id!r} is a chat model; send it to POST /chat/completions",
            INVALID,
            "wrong_endpoint",
            param="model",
        )
    closest = ctx.services.closest(service_id)
    hint = f"closest known ids: {', '.join(closest)}" if closest else "no similar service id"
    return error_response(
        404, f"service {shown(service_id)} does not exist; {hint}", INVALID, "model_not_found",
        param="model",
    )  # fmt: skip


def _execute(
    ctx: RequestContext,
    account: Account,
    spec: ServiceSpec,
    raw_inputs: dict[str, Any],
    *,
    flat: bool,
) -> MockResponse:
    """Check the inputs, plan, bill, act, and answer (``flat``: the output at the top level)."""
    category = ctx.service_categories.get(spec.category)
    if category is None:
        return error_response(
            400,
            f"service {spec.id!r} is of category {spec.category!r}, which this gateway does not run",
            INVALID,
            "unknown_category",
            param="model",
        )
    prefix = "" if flat else "inputs."
    allowed = {**SERVICE_ALLOWED, **(category.allowed or {})}
    inputs = _checked(category.adapter(), raw_inputs, prefix, allowed)
    if isinstance(inputs, MockResponse):
        return inputs
    too_long = _too_long(inputs, category.max_chars or {}, prefix)
    if too_long is not None:
        return too_long
    try:
        planned = category.plan(ServiceContext(ctx, account, spec, inputs, prefix))
    except Refusal as refusal:
        return refusal.response
    plan = planned if isinstance(planned, Plan) else _done(planned)
    cost = plan.quantity * to_decimal(spec.price)
    charged = ctx.ledger.charge(account.key, cost, model=spec.id, request_id=ctx.request_id)
    if not charged.ok:
        plan.cancel()
        return insufficient_credits_response(cost, charged.balance)
    output = plan.perform()
    reply: dict[str, Any] = {
        "id": ctx.new_id("run", "img_" if flat else "run_"),
        "object": "image" if flat else "run",
        "created": int(ctx.clock.now()),
        "model": spec.id,
        "category": spec.category,
    }
    reply.update(output if flat else {"output": output})
    reply["usage"] = {
        "quantity": float(plan.quantity),
        "unit": spec.unit,
        "credits": round(float(cost), 6),
    }
    reply.update(credits_fields(charged.balance))
    return json_response(200, reply)


def _done(output: Mapping[str, Any]) -> Plan:
    return Plan(Decimal(1), lambda: dict(output))


def handle_run(ctx: RequestContext) -> MockResponse:
    """``POST /v1/run {model, inputs}``."""
    accepted = _accept(ctx, _RUN_ADAPTER)
    if isinstance(accepted, MockResponse):
        return accepted
    account, checked, spec = accepted
    return _execute(ctx, account, spec, checked["inputs"], flat=False)


def handle_image_generate(ctx: RequestContext) -> MockResponse:
    """``POST /v1/image/generate {model, prompt, size}`` -> ``{image_url, ...}``."""
    accepted = _accept(ctx, _IMAGE_ADAPTER)
    if isinstance(accepted, MockResponse):
        return accepted
    account, checked, spec = accepted
    if spec.category != "image":
        images = ", ".join(ctx.services.of_category("image"))
        return error_response(
            400,
            f"{spec.id!r} is a {spec.category} service, not an image service; image "
            f"services: {images}",
            INVALID,
            "wrong_service_category",
            param="model",
        )
    inputs = {name: value for name, value in checked.items() if name != "model"}
    return _execute(ctx, account, spec, inputs, flat=True)


def handle_file(ctx: RequestContext) -> MockResponse:
    """``GET /v1/files/{id}``: a file a service made for the calling account."""
    account = ctx.authenticate()
    if isinstance(account, MockResponse):
        return account
    found = ctx.files.get(ctx.argument, owner=account.id)
    if found is None:
        return _no_such_file(ctx)
    data, content_type = found
    return MockResponse(200, {"content-type": content_type}, data)


def delete_file(ctx: RequestContext) -> MockResponse:
    """``DELETE /v1/files/{id}``: forget one of the calling account's files, freeing its
    room in the account's quota (a mock addition: the API has no such route)."""
    account = ctx.authenticate()
    if isinstance(account, MockResponse):
        return account
    if not ctx.files.delete(ctx.argument, owner=account.id):
        return _no_such_file(ctx)
    return json_response(200, {"id": ctx.argument, "object": "file", "deleted": True})


def _no_such_file(ctx: RequestContext) -> MockResponse:
    """The 404 for a file id (the rest of the path) that no file of the caller's has."""
    return error_response(
        404, f"no file of this account has the id {shown(ctx.argument)}", INVALID, "file_not_found"
    )
