"""The mock's chat and model routes: ``POST /v1/chat/completions``, ``GET /v1/models[/{id}]``.

Chat: auth (401), a JSON object body (400), the same validation as the client (400, every
limit), the model in either id spelling (404 naming the closest ids), vision and tools
capability (400), the prompt against the context window (400), the reply (a scripted one, the
user's reply function, or the seeded fake model), then billing: ``prompt_tokens / 1000 *
input price + completion_tokens / 1000 * output price``; a balance below that is a 402 and
nothing is charged. Replies carry ``_remaining_credits`` and ``_balance_warning``. A streamed
reply is charged before its first byte, since the whole output is known then.
"""

from __future__ import annotations

import difflib
from decimal import Decimal
from typing import Any

from pydantic import TypeAdapter

from aigateway.errors import InvalidRequestError
from aigateway.testing._core.accounts import Account, to_decimal
from aigateway.testing._core.billing import credits_fields, insufficient_credits_response
from aigateway.testing._core.catalogue import ModelSpec, model_object
from aigateway.testing._core.context import RequestContext, authenticated_body
from aigateway.testing._core.pacing import paced
from aigateway.testing._core.request_log import UNKNOWN_FIELDS_HEADER
from aigateway.testing._core.wire import (
    INVALID,
    MockResponse,
    error_response,
    json_response,
    sse_response,
)
from aigateway.testing._model.engine import (
    completion_body,
    count_prompt_tokens,
    has_image,
    stream_chunks,
)
from aigateway.types._validation import validate
from aigateway.types.chat_params import ALLOWED, ChatCompletionRequest

__all__ = ["KNOWN_FIELDS", "chat_completions", "find_model", "list_models", "retrieve_model"]

_REQUEST_ADAPTER: TypeAdapter[ChatCompletionRequest] = TypeAdapter(ChatCompletionRequest)

KNOWN_FIELDS = frozenset(
    ChatCompletionRequest.__required_keys__ | ChatCompletionRequest.__optional_keys__
)
"""The body fields the chat route reads; others are reported (`UNKNOWN_FIELDS_HEADER`), or
refused when the gateway has ``strict_fields``."""
_MAX_NAMES = 20


def find_model(ctx: RequestContext, model_id: str) -> ModelSpec | MockResponse:
    """The chat model ``model_id`` (either spelling), or the 404 naming the closest ids."""
    spec = ctx.catalogue.find(model_id)
    if spec is not None:
        return spec
    closest = ctx.catalogue.closest(model_id)
    hint = (
        f"closest known ids: {', '.join(closest)}"
        if closest
        else f"the {len(ctx.catalogue)} known ids are listed by GET /models"
    )
    return error_response(
        404, f"model {model_id!r} does not exist; {hint}", INVALID, "model_not_found",
        param="model",
    )  # fmt: skip


def list_models(ctx: RequestContext) -> MockResponse:
    """``GET /v1/models``."""
    auth = ctx.authenticate()
    if isinstance(auth, MockResponse):
        return auth
    data = [model_object(spec) for spec in ctx.catalogue.specs()]
    return json_response(200, {"object": "list", "data": data})


def retrieve_model(ctx: RequestContext) -> MockResponse:
    """``GET /v1/models/{id}`` (ids may contain ``/``, raw or as ``%2F``)."""
    auth = ctx.authenticate()
    if isinstance(auth, MockResponse):
        return auth
    spec = find_model(ctx, ctx.argument)
    if isinstance(spec, MockResponse):
        return spec
    return json_response(200, model_object(spec))


def chat_completions(ctx: RequestContext) -> MockResponse:
    """``POST /v1/chat/completions``, plain or streamed."""
    accepted = authenticated_body(ctx)
    if isinstance(accepted, MockResponse):
        return accepted
    account, raw = accepted
    unknown = [name for name in raw if name not in KNOWN_FIELDS]
    if not unknown:
        return _complete(ctx, account, raw)
    if ctx.strict_fields:
        return _unknown_fields_response(unknown)
    response = _complete(ctx, account, raw)
    response.headers[UNKNOWN_FIELDS_HEADER] = _field_list(unknown)
    return response


def _complete(ctx: RequestContext, account: Account, raw: dict[str, Any]) -> MockResponse:
    """The reply to ``account``'s chat request, whose JSON body is ``raw``."""
    try:
        body = validate(_REQUEST_ADAPTER, raw, ALLOWED)
    except InvalidRequestError as exc:
        message = "; ".join(str(violation) for violation in exc.violations)
        return error_response(400, message, INVALID, "invalid_parameter", param=exc.field)
    spec = find_model(ctx, body["model"])
    if isinstance(spec, MockResponse):
        return spec
    problem = _capability_problem(ctx, body, spec)
    if problem is not None:
        return problem

    replies = ctx.replies
    queued = replies.take_queued()
    scripted = queued if queued is not None else replies.from_function(body)
    completion = replies.engine.complete(
        body,
        model_id=spec.id,
        new_call_id=lambda: ctx.new_id("call", "call_"),
        scripted=scripted,
        function_call=raw.get("function_call"),
    )
    cost = (
        Decimal(completion.prompt_tokens) * to_decimal(spec.input_price_per_1k)
        + Decimal(completion.completion_tokens) * to_decimal(spec.output_price_per_1k)
    ) / 1000
    result = ctx.ledger.charge(
        account.key,
        cost,
        model=spec.id,
        request_id=ctx.request_id,
        prompt_tokens=completion.prompt_tokens,
        completion_tokens=completion.completion_tokens,
    )
    if not result.ok:
        if queued is not None:
            replies.put_back(queued)
        return insufficient_credits_response(cost, result.balance)
    credits = credits_fields(result.balance)
    completion_id = ctx.new_id("completion", "chatcmpl-")
    created = int(ctx.clock.now())
    if body.get("stream"):
        options = raw.get("stream_options")
        include_usage = isinstance(options, dict) and options.get("include_usage") is True
        chunks = stream_chunks(
            completion,
            id=completion_id,
            created=created,
            model=spec.id,
            credits=credits,
            include_usage=include_usage,
        )
        return paced(sse_response(chunks), ctx.pacing)
    reply = completion_body(
        completion, id=completion_id, created=created, model=spec.id, credits=credits
    )
    return json_response(200, reply)


def _field_list(names: list[str]) -> str:
    """Field names for a header or a message: escaped to printable ASCII, cut to 64
    characters each, at most `_MAX_NAMES` of them (then how many more there are)."""
    shown = [name.encode("unicode_escape").decode("ascii")[:64] for name in names[:_MAX_NAMES]]
    more = len(names) - len(shown)
    return ", ".join(shown) + (f", ({more} more)" if more else "")


def _unknown_fields_response(unknown: list[str]) -> MockResponse:
    """The 400 of a gateway with ``strict_fields``, naming the unknown fields (and the known
    field each one is closest to)."""
    hints = []
    for name in unknown[:_MAX_NAMES]:
        close = difflib.get_close_matches(name[:64], KNOWN_FIELDS, n=1)
        if close:
            hints.append(f"{_field_list([name])!r} (did you mean {close[0]!r}?)")
    noun = "field" if len(unknown) == 1 else "fields"
    return error_response(
        400,
        f"unknown {noun} {_field_list(unknown)} in the request body"
        + (f": {'; '.join(hints)}" if hints else "")
        + f"; known fields: {', '.join(sorted(KNOWN_FIELDS))}",
        INVALID,
        "unknown_parameter",
        param=_field_list(unknown[:1]),
    )


def _incapable(
    ctx: RequestContext, spec: ModelSpec, what: str, capability: str, param: str
) -> MockResponse:
    """The 400 for a request that model ``spec`` cannot serve (it does not ``what``), naming
    the models that can: those with ``capability``, ``"vision"`` or ``"tool"``."""
    specs = ctx.catalogue.specs()
    capable = [s.id for s in specs if (s.vision if capability == "vision" else s.tools)]
    return error_response(
        400,
        f"model {spec.id!r} does not {what}; {capability}-capable models: "
        f"{', '.join(capable) or 'none'}",
        INVALID,
        f"model_not_{capability}_capable",
        param=param,
    )


def _capability_problem(
    ctx: RequestContext, body: ChatCompletionRequest, spec: ModelSpec
) -> MockResponse | None:
    messages: list[Any] = list(body["messages"])
    if not spec.vision and has_image(messages):
        return _incapable(ctx, spec, "accept image input", "vision", "messages")
    if not spec.tools and (body.get("tools") or body.get("functions")):
        return _incapable(ctx, spec, "support tools", "tool", "tools")
    if count_prompt_tokens(messages, spec.context_window) > spec.context_window:
        return error_response(
            400,
            f"the messages take more than {spec.context_window} tokens, the context window "
            f"of model {spec.id!r}",
            INVALID,
            "context_length_exceeded",
            param="messages",
        )
    return None
