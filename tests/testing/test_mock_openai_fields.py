"""The request fields OpenAI-compatible clients send today, honoured by the mock and checked by
our client: ``n``, ``logprobs``/``top_logprobs``, ``max_completion_tokens``,
``parallel_tool_calls``, ``tool_choice`` forms, ``stream_options``, ``logit_bias``, ``seed``,
``response_format`` ``json_schema`` and the ``developer`` and ``function`` roles. Each over the
in-process transport, with raw JSON (httpx) and with our client."""

from __future__ import annotations

import datetime
import enum
import json
import time
import uuid
from collections.abc import Callable
from typing import Annotated, Any, Literal

import httpx
import pytest
from pydantic import BaseModel, ConfigDict, Field

from aigateway import AsyncClient, Client, InvalidRequestError, Stream, accumulate
from aigateway._chat_stream import aaccumulate
from aigateway.testing import MockGateway
from aigateway.testing._engine import MAX_REPLY_TOKENS
from aigateway.types.chat import ChatCompletion

from ..conftest import in_process_client, resolve
from ._helpers import LOOKUP_TOOL, parse_sse, tokens, user

pytestmark = pytest.mark.anyio

Chat = Callable[..., httpx.Response]

try:  # a precise second opinion when installed; the pydantic models below always check
    import jsonschema
except ImportError:  # pragma: no cover
    jsonschema = None


@pytest.fixture(params=["sync", "async"])
async def ours(request: pytest.FixtureRequest, gateway: MockGateway) -> Any:
    async with in_process_client(request.param, gateway, max_retries=0) as client:
        yield client


async def whole(stream: Any) -> ChatCompletion:
    """The completion a stream of our client adds up to."""
    if isinstance(stream, Stream):
        with stream:
            return accumulate(stream)
    async with stream:
        return await aaccumulate(stream)


def ok(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def streamed(client: httpx.Client, **body: Any) -> list[dict[str, Any]]:
    """The chunks of a streamed reply (``[DONE]`` checked and dropped)."""
    body = {"model": "gpt-4o", "messages": user(), "stream": True, **body}
    response = client.post("/chat/completions", json=body)
    assert response.status_code == 200, response.text
    events = parse_sse(response.content)
    assert events[-1] == "[DONE]"
    return events[:-1]


def assert_follows(value: Any, schema: dict[str, Any], model: type[BaseModel] | None) -> None:
    """``value`` is valid under ``schema``: by jsonschema when installed, by ``model`` always."""
    if jsonschema is not None:
        validator = jsonschema.Draft202012Validator(
            schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
        )
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(value)]
        assert errors == []
    if model is not None:
        model.model_validate(value)


# -- roles -------------------------------------------------------------------------------------


def test_developer_is_taken_like_system(chat: Chat) -> None:
    as_system = ok(chat(messages=[{"role": "system", "content": "Be brief."}, *user()]))
    as_developer = ok(chat(messages=[{"role": "developer", "content": "Be brief."}, *user()]))
    assert as_developer["usage"]["prompt_tokens"] == as_system["usage"]["prompt_tokens"]
    assert isinstance(as_developer["choices"][0]["message"]["content"], str)


async def test_our_client_sends_developer_and_function_messages(
    gateway: MockGateway, ours: Client | AsyncClient
) -> None:
    messages = [
        {"role": "developer", "content": "Answer from the function's result."},
        {"role": "user", "content": "Define 'gateway'."},
        {
            "role": "assistant",
            "content": None,
            "function_call": {"name": "lookup", "arguments": "{}"},
        },
        {"role": "function", "name": "lookup", "content": "a door between networks"},
    ]
    reply = await resolve(ours.chat.completions.create(model="gpt-4o", messages=messages))
    assert "a door between networks" in reply.text
    assert "lookup" in reply.text
    assert [m["role"] for m in gateway.requests[-1].json()["messages"]] == [
        "developer",
        "user",
        "assistant",
        "function",
    ]


def test_a_function_message_needs_its_name(chat: Chat) -> None:
    response = chat(messages=[*user(), {"role": "function", "content": "42"}])
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "messages.1.name"


# -- n -----------------------------------------------------------------------------------------


def test_n_gives_that_many_choices_all_billed(gateway: MockGateway, chat: Chat) -> None:
    single = ok(chat(seed=5))
    body = ok(chat(seed=5, n=3))
    choices = body["choices"]
    assert [choice["index"] for choice in choices] == [0, 1, 2]
    contents = [choice["message"]["content"] for choice in choices]
    assert len(set(contents)) == 3
    assert contents[0] == single["choices"][0]["message"]["content"]
    assert body["usage"]["completion_tokens"] == sum(tokens(text) for text in contents)
    assert body["usage"]["prompt_tokens"] == single["usage"]["prompt_tokens"]
    assert gateway.charges[-1].completion_tokens == body["usage"]["completion_tokens"]
    assert ok(chat(seed=5, n=3))["choices"] == choices


def test_n_streamed_sends_chunks_for_every_choice(client: httpx.Client, chat: Chat) -> None:
    whole = ok(chat(n=3, max_tokens=7))
    chunks = streamed(client, n=3, max_tokens=7, stream_options={"include_usage": True})
    texts: dict[int, str] = {}
    finishes: dict[int, str] = {}
    for chunk in chunks[:-1]:
        (choice,) = chunk["choices"]
        texts[choice["index"]] = texts.get(choice["index"], "") + (
            choice["delta"].get("content") or ""
        )
        if choice["finish_reason"]:
            finishes[choice["index"]] = choice["finish_reason"]
    assert texts == {c["index"]: c["message"]["content"] for c in whole["choices"]}
    assert finishes == {c["index"]: c["finish_reason"] for c in whole["choices"]}
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"] == whole["usage"]
    assert "_remaining_credits" in chunks[-2]


async def test_our_client_gets_n_choices_plain_and_streamed(ours: Client | AsyncClient) -> None:
    reply = await resolve(ours.chat.completions.create(model="gpt-4o", messages=user(), n=2))
    assert [choice.index for choice in reply.choices] == [0, 1]
    stream = await resolve(
        ours.chat.completions.create(model="gpt-4o", messages=user(), n=2, stream=True)
    )
    final = await whole(stream)
    assert [c.message.content for c in final.choices] == [c.message.content for c in reply.choices]


# -- logprobs ----------------------------------------------------------------------------------


def test_logprobs_cover_the_content_token_by_token(chat: Chat) -> None:
    body = ok(chat(logprobs=True, top_logprobs=3, seed=2))
    choice = body["choices"][0]
    entries = choice["logprobs"]["content"]
    assert "".join(entry["token"] for entry in entries) == choice["message"]["content"]
    assert len(entries) == body["usage"]["completion_tokens"]
    for entry in entries:
        assert entry["logprob"] <= 0
        assert entry["bytes"] == list(entry["token"].encode("utf-8"))
        top = entry["top_logprobs"]
        assert len(top) == 3
        assert top[0] == {k: entry[k] for k in ("token", "logprob", "bytes")}
        assert [t["logprob"] for t in top] == sorted((t["logprob"] for t in top), reverse=True)
        assert len({t["token"] for t in top}) == 3
        assert sum(2.718281828 ** t["logprob"] for t in top) <= 1.0
    assert ok(chat(logprobs=True, top_logprobs=3, seed=2))["choices"] == body["choices"]


def test_logprobs_without_top_logprobs_and_not_asked(chat: Chat) -> None:
    entries = ok(chat(logprobs=True))["choices"][0]["logprobs"]["content"]
    assert all(entry["top_logprobs"] == [] for entry in entries)
    assert "logprobs" not in ok(chat(logprobs=False))["choices"][0]
    assert "logprobs" not in ok(chat())["choices"][0]


def test_a_tool_call_has_no_content_logprobs(chat: Chat) -> None:
    choice = ok(chat(logprobs=True, tools=[LOOKUP_TOOL]))["choices"][0]
    assert choice["message"]["content"] is None
    assert choice["logprobs"] == {"content": None, "refusal": None}


def test_streamed_logprobs_add_up_to_the_whole(client: httpx.Client, chat: Chat) -> None:
    whole = ok(chat(logprobs=True, top_logprobs=2, n=2))
    by_index: dict[int, list[Any]] = {0: [], 1: []}
    for chunk in streamed(client, logprobs=True, top_logprobs=2, n=2):
        for choice in chunk["choices"]:
            if choice["delta"].get("content"):
                assert (
                    "".join(e["token"] for e in choice["logprobs"]["content"])
                    == (choice["delta"]["content"])
                )
            if "logprobs" in choice:
                by_index[choice["index"]] += choice["logprobs"]["content"]
    assert by_index == {c["index"]: c["logprobs"]["content"] for c in whole["choices"]}


async def test_our_client_types_logprobs(ours: Client | AsyncClient) -> None:
    reply = await resolve(
        ours.chat.completions.create(model="gpt-4o", messages=user(), logprobs=True, top_logprobs=1)
    )
    logprobs = reply.choices[0].logprobs
    assert logprobs is not None
    assert logprobs.content
    first = logprobs.content[0]
    assert first.logprob <= 0
    assert first.top_logprobs[0].token == first.token
    assert "".join(t.token for t in logprobs.content) == reply.text


# -- max_completion_tokens ---------------------------------------------------------------------


def test_max_completion_tokens_cuts_like_max_tokens(chat: Chat) -> None:
    old = ok(chat(max_tokens=6))
    new = ok(chat(max_completion_tokens=6))
    assert new["choices"] == old["choices"]
    assert new["choices"][0]["finish_reason"] == "length"
    assert new["usage"]["completion_tokens"] == 6


async def test_our_client_sends_max_completion_tokens(ours: Client | AsyncClient) -> None:
    reply = await resolve(
        ours.chat.completions.create(model="gpt-4o", messages=user(), max_completion_tokens=3)
    )
    assert reply.usage is not None
    assert reply.usage.completion_tokens == 3
    assert reply.choices[0].finish_reason == "length"


# -- tools -------------------------------------------------------------------------------------

SECOND_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "convert",
        "parameters": {
            "type": "object",
            "properties": {"amount": {"type": "number"}},
            "required": ["amount"],
        },
    },
}
AFTER_A_TOOL_RESULT = [
    *user("Look up 'gateway'."),
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "a door"},
]


def calls_of(body: dict[str, Any]) -> list[str]:
    return [c["function"]["name"] for c in body["choices"][0]["message"].get("tool_calls", [])]


def test_parallel_tool_calls(chat: Chat) -> None:
    tools = [LOOKUP_TOOL, SECOND_TOOL]
    assert calls_of(ok(chat(tools=tools))) == ["lookup"]
    assert calls_of(ok(chat(tools=tools, parallel_tool_calls=False))) == ["lookup"]
    both = ok(chat(tools=tools, parallel_tool_calls=True))
    assert calls_of(both) == ["lookup", "convert"]
    ids = [c["id"] for c in both["choices"][0]["message"]["tool_calls"]]
    assert len(set(ids)) == 2
    assert both["choices"][0]["finish_reason"] == "tool_calls"
    named = {"type": "function", "function": {"name": "convert"}}
    assert calls_of(ok(chat(tools=tools, parallel_tool_calls=True, tool_choice=named))) == [
        "convert"
    ]


def test_tool_choice_forms(chat: Chat) -> None:
    tools = [LOOKUP_TOOL, SECOND_TOOL]
    assert calls_of(ok(chat(tools=tools, tool_choice="none"))) == []
    assert calls_of(ok(chat(messages=AFTER_A_TOOL_RESULT, tools=tools))) == []
    assert calls_of(
        ok(chat(messages=AFTER_A_TOOL_RESULT, tools=tools, tool_choice="required"))
    ) == ["lookup"]
    named = {"type": "function", "function": {"name": "convert"}}
    assert calls_of(ok(chat(tools=tools, tool_choice=named))) == ["convert"]


async def test_our_client_with_tool_forms(ours: Client | AsyncClient) -> None:
    reply = await resolve(
        ours.chat.completions.create(
            model="gpt-4o",
            messages=user(),
            tools=[LOOKUP_TOOL, SECOND_TOOL],
            tool_choice={"type": "function", "function": {"name": "convert"}},
            parallel_tool_calls=False,
        )
    )
    (call,) = reply.choices[0].message.tool_calls or []
    assert call.function.name == "convert"
    assert isinstance(call.function.parsed_arguments()["amount"], float | int)


# -- stream_options, logit_bias, seed ----------------------------------------------------------


def test_include_usage_adds_a_final_usage_chunk(client: httpx.Client, chat: Chat) -> None:
    usage = ok(chat())["usage"]
    with_usage = streamed(client, stream_options={"include_usage": True})
    assert with_usage[-1]["choices"] == []
    assert with_usage[-1]["usage"] == usage
    assert all("usage" not in chunk for chunk in with_usage[:-1])
    without = streamed(client, stream_options={"include_usage": False})
    assert all("usage" not in chunk for chunk in without)
    assert len(without) == len(with_usage) - 1


async def test_our_client_stream_with_usage(ours: Client | AsyncClient) -> None:
    stream = await resolve(
        ours.chat.completions.create(
            model="gpt-4o",
            messages=user(),
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    final = await whole(stream)
    assert final.usage is not None
    assert final.usage.completion_tokens == tokens(final.text)


def test_logit_bias_is_accepted_and_changes_nothing(chat: Chat) -> None:
    plain = ok(chat(seed=4))
    biased = ok(chat(seed=4, logit_bias={"50256": -100, "1234": 5}))
    assert biased["choices"] == plain["choices"]


def test_same_seed_same_reply_other_seed_other_reply(chat: Chat) -> None:
    fields = {"n": 2, "logprobs": True, "top_logprobs": 2, "seed": 11}
    first, second = ok(chat(**fields)), ok(chat(**fields))
    assert first["choices"] == second["choices"]
    assert ok(chat(**{**fields, "seed": 12}))["choices"] != first["choices"]


# -- response_format json_schema ---------------------------------------------------------------


class Colour(enum.Enum):
    RED = "red"
    GREEN = "green"


class Part(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Annotated[str, Field(min_length=3, max_length=12)]
    count: Annotated[int, Field(ge=1, le=5)]


class Cat(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["cat"]
    lives: Annotated[int, Field(ge=0, le=9)]


class Dog(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["dog"]
    good: bool


class Node(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: str
    children: list[Node]


class Order(BaseModel):
    """Objects, arrays with bounds, enums, const, unions (anyOf and a oneOf), $ref/$defs,
    recursion, nullable values, string formats and lengths, tuples, maps."""

    model_config = ConfigDict(extra="forbid")
    id: uuid.UUID
    placed: datetime.datetime
    due: datetime.date | None
    colour: Colour
    parts: Annotated[list[Part], Field(min_length=2, max_length=4)]
    pet: Annotated[Cat | Dog, Field(discriminator="kind")]
    ref: int | str
    note: str | None = None
    tags: Annotated[list[Literal["a", "b", "c"]], Field(max_length=2)] = []
    point: tuple[float, float]
    totals: dict[str, int] = {}
    tree: Node
    version: Literal[2] = 2


def schema_format(schema: dict[str, Any], strict: bool | None = None) -> dict[str, Any]:
    json_schema: dict[str, Any] = {"name": "order", "schema": schema}
    if strict is not None:
        json_schema["strict"] = strict
    return {"type": "json_schema", "json_schema": json_schema}


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("strict", [True, False, None])
def test_json_schema_replies_follow_the_schema(chat: Chat, seed: int, strict: bool | None) -> None:
    schema = Order.model_json_schema()
    body = ok(chat(seed=seed, response_format=schema_format(schema, strict)))
    value = json.loads(body["choices"][0]["message"]["content"])
    assert_follows(value, schema, Order)
    assert body["choices"][0]["finish_reason"] == "stop"


def every_property_present(value: Any, schema: Any, root: dict[str, Any]) -> bool:
    """True when every object in ``value`` has all the properties its schema lists."""
    if isinstance(schema, dict) and "$ref" in schema:
        return every_property_present(value, root["$defs"][schema["$ref"].split("/")[-1]], root)
    if isinstance(value, dict) and isinstance(schema, dict) and "properties" in schema:
        return set(value) == set(schema["properties"]) and all(
            every_property_present(value[k], s, root) for k, s in schema["properties"].items()
        )
    if (
        isinstance(value, list)
        and isinstance(schema, dict)
        and isinstance(schema.get("items"), dict)
    ):
        return all(every_property_present(item, schema["items"], root) for item in value)
    return True


def test_strict_gives_every_property_and_non_strict_leaves_some_out(chat: Chat) -> None:
    schema = Order.model_json_schema()
    strict = [
        json.loads(
            ok(chat(seed=s, response_format=schema_format(schema, True)))["choices"][0]["message"][
                "content"
            ]
        )
        for s in range(8)
    ]
    assert all(every_property_present(value, schema, schema) for value in strict)
    loose = [
        json.loads(
            ok(chat(seed=s, response_format=schema_format(schema)))["choices"][0]["message"][
                "content"
            ]
        )
        for s in range(8)
    ]
    assert not all(set(value) == set(schema["properties"]) for value in loose)
    assert all(set(schema["required"]) <= set(value) for value in loose)


def test_json_schema_reply_is_deterministic(chat: Chat) -> None:
    response_format = schema_format(Order.model_json_schema(), True)
    first = ok(chat(seed=3, response_format=response_format))["choices"]
    assert ok(chat(seed=3, response_format=response_format))["choices"] == first
    assert ok(chat(seed=4, response_format=response_format))["choices"] != first


@pytest.mark.parametrize(
    "schema",
    [
        {"type": ["string", "null"], "minLength": 5},
        {"oneOf": [{"type": "integer", "multipleOf": 7}, {"const": "x"}]},
        {"type": "array", "items": {"enum": [1, 2, 3]}, "minItems": 2, "maxItems": 2},
        {"type": "object", "properties": {"when": {"type": "string", "format": "date-time"}}},
    ],
)
def test_other_schema_shapes(chat: Chat, schema: dict[str, Any]) -> None:
    for seed in range(5):
        content = ok(chat(seed=seed, response_format=schema_format(schema)))["choices"][0]
        assert_follows(json.loads(content["message"]["content"]), schema, None)


def test_json_schema_without_a_schema_is_a_json_object(chat: Chat) -> None:
    response_format = {"type": "json_schema", "json_schema": {"name": "anything"}}
    content = ok(chat(response_format=response_format))["choices"][0]["message"]["content"]
    assert isinstance(json.loads(content), dict)


def test_text_and_json_object_formats_still_work(chat: Chat) -> None:
    as_text = ok(chat(response_format={"type": "text"}, seed=1))
    assert as_text["choices"] == ok(chat(seed=1))["choices"]
    content = ok(chat(response_format={"type": "json_object"}))["choices"][0]["message"]["content"]
    assert isinstance(json.loads(content), dict)


async def test_our_client_json_schema_round_trip(ours: Client | AsyncClient) -> None:
    reply: ChatCompletion = await resolve(
        ours.chat.completions.create(
            model="gpt-4o",
            messages=user("An order, please."),
            response_format={
                "type": "json_schema",
                "json_schema": {
                    "name": "order",
                    "schema": Order.model_json_schema(),
                    "strict": True,
                },
            },
        )
    )
    assert isinstance(Order.model_validate_json(reply.text), Order)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"$ref": "#"}}, "required": ["a"]},
        {"type": "array", "items": {"type": "string", "minLength": 10**9}, "minItems": 10**9},
        {
            "type": "object",
            "properties": {
                "a": {"type": "array", "minItems": 200, "items": {"$ref": "#/properties/a"}}
            },
            "required": ["a"],
        },
    ],
)
def test_hostile_schemas_get_a_bounded_reply_quickly(chat: Chat, schema: dict[str, Any]) -> None:
    started = time.perf_counter()
    response = chat(response_format=schema_format(schema, True))
    assert time.perf_counter() - started < 5
    assert response.status_code == 200
    assert len(response.content) < 3_000_000


# -- 400s, the same from the mock and from our client ------------------------------------------

BAD: list[tuple[dict[str, Any], str]] = [
    ({"n": 0}, "n"),
    ({"n": 129}, "n"),
    ({"n": 1.5}, "n"),
    ({"logprobs": "yes"}, "logprobs"),
    ({"top_logprobs": 2}, "top_logprobs"),
    ({"logprobs": False, "top_logprobs": 2}, "top_logprobs"),
    ({"logprobs": True, "top_logprobs": 21}, "top_logprobs"),
    ({"max_completion_tokens": 0}, "max_completion_tokens"),
    ({"max_completion_tokens": 128_001}, "max_completion_tokens"),
    ({"max_tokens": 10, "max_completion_tokens": 10}, "max_tokens"),
    ({"parallel_tool_calls": "no"}, "parallel_tool_calls"),
    ({"tool_choice": "required"}, "tool_choice"),
    (
        {"tools": [LOOKUP_TOOL], "tool_choice": {"type": "function", "function": {"name": "nope"}}},
        "tool_choice",
    ),
    ({"stream_options": {"include_usage": "yes"}}, "stream_options.include_usage"),
    ({"logit_bias": {"abc": 1}}, "logit_bias.abc"),
    ({"logit_bias": {"42": 101}}, "logit_bias.42"),
    ({"seed": "7"}, "seed"),
    ({"messages": [{"role": "robot", "content": "x"}]}, "messages.0"),
    ({"response_format": {"type": "yaml"}}, "response_format"),
    ({"response_format": {"type": "json_schema"}}, "response_format.json_schema"),
    (
        {"response_format": {"type": "json_schema", "json_schema": {"name": "has space"}}},
        "response_format.json_schema.name",
    ),
    (
        {"response_format": {"type": "json_schema", "json_schema": {"name": "a" * 65}}},
        "response_format.json_schema.name",
    ),
    (
        {"response_format": schema_format({"type": "objekt"})},
        "response_format.json_schema.schema",
    ),
    (
        {"response_format": schema_format({"properties": {"a": {"$ref": "#/$defs/Missing"}}})},
        "response_format.json_schema.schema",
    ),
    (
        {"response_format": schema_format({"properties": {"a": {"$ref": "https://x.test/s"}}})},
        "response_format.json_schema.schema",
    ),
    (
        {"response_format": schema_format({"type": "object", "properties": [1]})},
        "response_format.json_schema.schema",
    ),
    (
        {"response_format": schema_format({"anyOf": []})},
        "response_format.json_schema.schema",
    ),
    (
        {"response_format": schema_format({"type": "array", "minItems": -1})},
        "response_format.json_schema.schema",
    ),
    (
        {"response_format": schema_format({"required": "a"})},
        "response_format.json_schema.schema",
    ),
]


@pytest.mark.parametrize(("fields", "param"), BAD)
async def test_bad_values_are_the_same_400_from_mock_and_client(
    gateway: MockGateway,
    chat: Chat,
    ours: Client | AsyncClient,
    fields: dict[str, Any],
    param: str,
) -> None:
    response = chat(**fields)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param
    sent = len(gateway.requests)
    with pytest.raises(InvalidRequestError) as caught:
        await resolve(
            ours.chat.completions.create(**{"model": "gpt-4o", "messages": user(), **fields})
        )
    assert len(gateway.requests) == sent  # nothing was sent
    assert caught.value.field == param
    assert str(caught.value) == f"invalid request, nothing was sent: {error['message']}"
    assert "allowed:" in error["message"]


def test_too_deep_a_schema_is_400(chat: Chat) -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(80):
        schema = {"type": "array", "items": schema}
    response = chat(response_format=schema_format(schema))
    assert response.status_code == 400
    assert "deeper than 64" in response.json()["error"]["message"]


def test_all_choices_together_hold_a_bounded_number_of_tokens(
    gateway: MockGateway, chat: Chat
) -> None:
    gateway.set_credits(gateway.api_key, 1_000)
    huge = {"type": "array", "items": {"type": "string", "minLength": 10**9}, "minItems": 10**9}
    response = chat(n=128, response_format=schema_format(huge))
    body = ok(response)
    assert body["usage"]["completion_tokens"] == MAX_REPLY_TOKENS
    assert {choice["finish_reason"] for choice in body["choices"]} == {"length"}
    assert len(response.content) < 1_000_000
