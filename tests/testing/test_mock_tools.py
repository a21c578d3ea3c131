"""Tool calls: shape, choice rules, and arguments that validate against the tool's schema."""

from __future__ import annotations

import datetime
import json
import random
import re
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Literal

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from aigateway.testing import MockGateway, MockRequest
from aigateway.testing._schema import sample_arguments, sample_schema

from ._helpers import tokens, user

Chat = Callable[..., httpx.Response]

# -- a small JSON-schema checker of our own (jsonschema is not a dependency) ---------------------


def schema_errors(schema: Any, value: Any, root: Any = None, path: str = "$") -> list[str]:
    """What is wrong with ``value`` under ``schema`` (the subset the mock generates for)."""
    root = schema if root is None else root
    if schema is True:
        return []
    if schema is False:
        return [f"{path}: nothing is allowed"]
    assert isinstance(schema, Mapping)
    if "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            target = target[part]
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        return schema_errors({**target, **rest}, value, root, path)
    errors: list[str] = []
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: {value!r} is not the const {schema['const']!r}")
    if "enum" in schema and not any(_same(value, v) for v in schema["enum"]):
        errors.append(f"{path}: {value!r} not in enum {schema['enum']!r}")
    if "anyOf" in schema and not any(
        not schema_errors(s, value, root, path) for s in schema["anyOf"]
    ):
        errors.append(f"{path}: {value!r} matches no anyOf branch")
    if "oneOf" in schema:
        matching = [s for s in schema["oneOf"] if not schema_errors(s, value, root, path)]
        if len(matching) != 1:
            errors.append(f"{path}: {value!r} matches {len(matching)} oneOf branches")
    for sub in schema.get("allOf", []):
        errors += schema_errors(sub, value, root, path)
    kinds = schema.get("type")
    if kinds is not None:
        kinds = kinds if isinstance(kinds, list) else [kinds]
        if not any(_is_type(value, kind) for kind in kinds):
            return [*errors, f"{path}: {value!r} is not of type {kinds}"]
    if _is_type(value, "number"):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: {value} < minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path}: {value} > maximum {schema['maximum']}")
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            errors.append(f"{path}: {value} <= exclusiveMinimum")
        if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
            errors.append(f"{path}: {value} >= exclusiveMaximum")
        if "multipleOf" in schema:
            quotient = value / schema["multipleOf"]
            if abs(quotient - round(quotient)) > 1e-9:
                errors.append(f"{path}: {value} is not a multiple of {schema['multipleOf']}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            errors.append(f"{path}: {value!r} shorter than minLength")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"{path}: {value!r} longer than maxLength")
        errors += _format_errors(schema.get("format"), value, path)
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            errors.append(f"{path}: {len(value)} items < minItems")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{path}: {len(value)} items > maxItems")
        if schema.get("uniqueItems") and len({json.dumps(v) for v in value}) != len(value):
            errors.append(f"{path}: items are not unique")
        for index, item in enumerate(value):
            errors += schema_errors(schema.get("items", True), item, root, f"{path}[{index}]")
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                errors.append(f"{path}: missing required {name!r}")
        for name, item in value.items():
            if name in properties:
                errors += schema_errors(properties[name], item, root, f"{path}.{name}")
            elif schema.get("additionalProperties") is False:
                errors.append(f"{path}: unexpected property {name!r}")
    return errors


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _is_type(value: Any, kind: str) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(
        value,
        {"string": str, "boolean": bool, "null": type(None), "array": list, "object": dict}[kind],
    )


def _format_errors(fmt: str | None, value: str, path: str) -> list[str]:
    checks: dict[str, Callable[[str], object]] = {
        "date": datetime.date.fromisoformat,
        "date-time": lambda v: datetime.datetime.fromisoformat(v.replace("Z", "+00:00")),
        "email": lambda v: re.fullmatch(r"[^@\s]+@[^@\s]+\.[a-z]+", v) or 1 / 0,
        "uri": lambda v: re.match(r"https?://", v) or 1 / 0,
        "uuid": uuid.UUID,
    }
    if fmt not in checks:
        return []
    try:
        checks[fmt](value)
    except (ValueError, ZeroDivisionError):
        return [f"{path}: {value!r} is not a {fmt}"]
    return []


def test_the_checker_can_fail() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 1, "maximum": 3},
            "tags": {"type": "array", "items": {"enum": ["a"]}, "maxItems": 1},
        },
        "required": ["n"],
    }
    assert schema_errors(schema, {"n": 2, "tags": ["a"]}) == []
    assert schema_errors(schema, {"tags": []})
    assert schema_errors(schema, {"n": 4})
    assert schema_errors(schema, {"n": True})
    assert schema_errors(schema, {"n": 1, "tags": ["a", "a"]})
    assert schema_errors(schema, {"n": 1, "tags": ["b"]})
    assert schema_errors({"type": "string", "format": "date"}, "yesterday")


# -- tool calls over the wire --------------------------------------------------------------------

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "minLength": 2},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer", "minimum": 1, "maximum": 7},
                "hourly": {"type": "boolean"},
                "coords": {
                    "type": "object",
                    "properties": {
                        "lat": {"type": "number", "minimum": -90, "maximum": 90},
                        "lon": {"type": "number", "minimum": -180, "maximum": 180},
                    },
                    "required": ["lat", "lon"],
                },
                "fields": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": 1,
                    "maxItems": 3,
                },
            },
            "required": ["city", "unit", "days", "hourly", "coords", "fields"],
            "additionalProperties": False,
        },
    },
}
SEARCH = {
    "type": "function",
    "function": {
        "name": "search",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
        },
    },
}


def the_call(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    choice = response.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    (call,) = choice["message"]["tool_calls"]
    return call  # type: ignore[no-any-return]


def test_tools_give_one_call_with_valid_arguments(chat: Chat) -> None:
    response = chat(messages=user("Weather in Paris?"), tools=[WEATHER, SEARCH])
    call = the_call(response)
    assert set(call) == {"id", "type", "function"}
    assert re.fullmatch(r"call_[0-9a-f]{24}", call["id"])
    assert call["type"] == "function"
    assert call["function"]["name"] == "get_weather"
    arguments = json.loads(call["function"]["arguments"])
    assert schema_errors(WEATHER["function"]["parameters"], arguments) == []  # type: ignore[index]
    usage = response.json()["usage"]
    assert usage["completion_tokens"] == tokens("get_weather") + tokens(
        call["function"]["arguments"]
    )


@pytest.mark.parametrize("seed", range(20))
def test_arguments_validate_under_many_seeds(chat: Chat, seed: int) -> None:
    call = the_call(chat(seed=seed, tools=[WEATHER]))
    parameters = WEATHER["function"]["parameters"]  # type: ignore[index]
    assert schema_errors(parameters, json.loads(call["function"]["arguments"])) == []


def test_tool_choice_naming_a_tool_calls_that_tool(chat: Chat) -> None:
    choice = {"type": "function", "function": {"name": "search"}}
    call = the_call(chat(tools=[WEATHER, SEARCH], tool_choice=choice))
    assert call["function"]["name"] == "search"
    assert isinstance(json.loads(call["function"]["arguments"])["query"], str)


def test_tool_choice_naming_an_unknown_tool_is_400(chat: Chat) -> None:
    choice = {"type": "function", "function": {"name": "missing"}}
    response = chat(tools=[WEATHER], tool_choice=choice)
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "tool_choice"
    assert "get_weather" in response.json()["error"]["message"]


def test_tool_choice_none_gives_text(chat: Chat) -> None:
    body = chat(tools=[WEATHER], tool_choice="none").json()
    assert body["choices"][0]["finish_reason"] == "stop"
    assert "tool_calls" not in body["choices"][0]["message"]
    assert isinstance(body["choices"][0]["message"]["content"], str)


def _after_tool_result(**extra: Any) -> dict[str, Any]:
    return {
        "messages": [
            {"role": "user", "content": "Weather?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c9",
                        "type": "function",
                        "function": {"name": "search", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c9", "content": "sunny and 24C"},
        ],
        "tools": [SEARCH],
        **extra,
    }


def test_after_a_tool_result_auto_answers_in_text(chat: Chat) -> None:
    for extra in ({}, {"tool_choice": "auto"}):
        message = chat(**_after_tool_result(**extra)).json()["choices"][0]["message"]
        assert "sunny and 24C" in message["content"]
        assert "search" in message["content"]


def test_after_a_tool_result_required_still_calls(chat: Chat) -> None:
    assert the_call(chat(**_after_tool_result(tool_choice="required")))["function"]["name"] == (
        "search"
    )


def test_a_tool_without_parameters_gets_empty_arguments(chat: Chat) -> None:
    call = the_call(chat(tools=[{"type": "function", "function": {"name": "ping"}}]))
    assert call["function"] == {"name": "ping", "arguments": "{}"}


def test_max_tokens_cuts_tool_arguments(chat: Chat) -> None:
    full = the_call(chat(tools=[WEATHER]))["function"]["arguments"]
    body = chat(tools=[WEATHER], max_tokens=6).json()
    choice = body["choices"][0]
    assert choice["finish_reason"] == "length"
    arguments = choice["message"]["tool_calls"][0]["function"]["arguments"]
    assert full.startswith(arguments)
    assert tokens("get_weather") + tokens(arguments) == 6 == body["usage"]["completion_tokens"]


def test_tool_calls_are_deterministic(gateway: MockGateway) -> None:
    def arguments(seed: int) -> str:
        other = MockGateway(seed=seed)
        request = MockRequest.build(
            "POST",
            "/v1/chat/completions",
            json_body={"model": "gpt-4o", "messages": user("x"), "tools": [WEATHER]},
            api_key=other.api_key,
        )
        reply = other.handle(request).json()
        return str(reply["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"])

    assert arguments(1) == arguments(1)
    assert len({arguments(seed) for seed in range(6)}) > 1


# -- schemas as pydantic writes them ($defs, $ref, anyOf with null, Literal, lists) ---------------


class Address(BaseModel):
    street: str
    zip_code: str = Field(min_length=5, max_length=5)


class Person(BaseModel):
    name: str
    age: int = Field(ge=0, le=130)
    kind: Literal["admin", "user"]
    score: float = Field(gt=0, lt=1)
    nickname: str | None = None
    tags: list[str] = Field(default_factory=list, max_length=4)
    home: Address
    past: list[Address] = Field(default_factory=list)
    born: datetime.date
    id: uuid.UUID


@pytest.mark.parametrize("seed", range(15))
def test_arguments_for_a_pydantic_schema_parse_with_that_model(chat: Chat, seed: int) -> None:
    tool = {
        "type": "function",
        "function": {"name": "save_person", "parameters": Person.model_json_schema()},
    }
    call = the_call(chat(seed=seed, tools=[tool]))
    Person.model_validate_json(call["function"]["arguments"])


# -- generated schemas (hypothesis) ----------------------------------------------------------------

NAMES = st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8)


@st.composite
def integer_schemas(draw: st.DrawFn) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer"}
    low = draw(st.none() | st.integers(-1000, 1000))
    if low is not None:
        schema["exclusiveMinimum" if draw(st.booleans()) else "minimum"] = low
    if draw(st.booleans()):
        base = 0 if low is None else low
        schema["exclusiveMaximum" if draw(st.booleans()) else "maximum"] = base + draw(
            st.integers(2, 500)
        )
    if draw(st.booleans()) and low is None and "maximum" not in schema:
        schema["multipleOf"] = draw(st.integers(1, 10))
    return schema


@st.composite
def number_schemas(draw: st.DrawFn) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "number"}
    bound = st.floats(-1e4, 1e4, allow_nan=False)
    low = draw(st.none() | bound)
    if low is not None:
        schema["exclusiveMinimum" if draw(st.booleans()) else "minimum"] = low
    if draw(st.booleans()):
        base = 0.0 if low is None else low
        schema["exclusiveMaximum" if draw(st.booleans()) else "maximum"] = base + draw(
            st.floats(0.5, 1e3)
        )
    return schema


@st.composite
def string_schemas(draw: st.DrawFn) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    low = draw(st.none() | st.integers(0, 30))
    if low is not None:
        schema["minLength"] = low
    if draw(st.booleans()):
        schema["maxLength"] = (low or 0) + draw(st.integers(0, 20))
    fmt = draw(st.none() | st.sampled_from(["date", "date-time", "email", "uri", "uuid"]))
    if fmt is not None and len(schema) == 1:  # a format leaves no room for length limits
        schema["format"] = fmt
    if draw(st.booleans()):
        schema["type"] = ["string", "null"]
    return schema


SCALARS = st.integers(-5, 5) | st.text(max_size=4) | st.booleans() | st.none()
LEAVES = st.one_of(
    integer_schemas(),
    number_schemas(),
    string_schemas(),
    st.just({"type": "boolean"}),
    st.just({"type": "null"}),
    st.lists(SCALARS, min_size=1, max_size=4, unique_by=json.dumps).map(lambda v: {"enum": v}),
    SCALARS.map(lambda v: {"const": v}),
    st.just({}),
)


@st.composite
def arrays_of(draw: st.DrawFn, items: st.SearchStrategy[dict[str, Any]]) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "array", "items": draw(items)}
    low = draw(st.none() | st.integers(0, 4))
    if low is not None:
        schema["minItems"] = low
    if draw(st.booleans()):
        schema["maxItems"] = (low or 0) + draw(st.integers(0, 4))
    return schema


@st.composite
def objects_of(draw: st.DrawFn, values: st.SearchStrategy[dict[str, Any]]) -> dict[str, Any]:
    properties = draw(st.dictionaries(NAMES, values, max_size=5))
    required = (
        draw(st.lists(st.sampled_from(sorted(properties)), unique=True)) if properties else []
    )
    schema: dict[str, Any] = {"type": "object", "properties": properties, "required": required}
    if draw(st.booleans()):
        schema["additionalProperties"] = False
    return schema


SCHEMAS = st.recursive(
    LEAVES,
    lambda children: st.one_of(
        arrays_of(children),
        objects_of(children),
        children.map(lambda s: {"anyOf": [s, {"type": "null"}]}),
    ),
    max_leaves=10,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=objects_of(SCHEMAS), seed=st.integers(0, 2**32), gateway_seed=st.integers(0, 99))
def test_arguments_validate_against_generated_schemas(
    schema: dict[str, Any], seed: int, gateway_seed: int
) -> None:
    gateway = MockGateway(seed=gateway_seed)
    tool = {"type": "function", "function": {"name": "f", "parameters": schema}}
    request = MockRequest.build(
        "POST",
        "/v1/chat/completions",
        json_body={"model": "gpt-4o", "messages": user("go"), "tools": [tool], "seed": seed},
        api_key=gateway.api_key,
    )
    response = gateway.handle(request)
    assert response.status == 200, response.body
    arguments = json.loads(
        response.json()["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
    )
    assert schema_errors(schema, arguments) == []


@settings(max_examples=200, deadline=None)
@given(schema=SCHEMAS, seed=st.integers(0, 2**32))
def test_sample_schema_values_validate(schema: dict[str, Any], seed: int) -> None:
    value = sample_schema(schema, random.Random(seed))
    assert schema_errors(schema, value) == []


def test_type_lists_refs_allof_unique_and_draft4_bounds() -> None:
    rng = random.Random(0)
    cases: list[dict[str, Any]] = [
        {"type": ["null", "integer"], "minimum": 3, "maximum": 4},
        {"$defs": {"n": {"type": "integer", "minimum": 10, "maximum": 12}}, "$ref": "#/$defs/n"},
        {"definitions": {"s": {"type": "string", "maxLength": 2}}, "$ref": "#/definitions/s"},
        {
            "allOf": [
                {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                {"properties": {"b": {"type": "boolean"}}, "required": ["b"]},
            ]
        },
        {"type": "array", "items": {"enum": [1, 2, 3]}, "minItems": 3, "uniqueItems": True},
        {"type": "number", "minimum": 0, "maximum": 1, "exclusiveMinimum": True},
        {"type": "integer", "minimum": 5, "maximum": 6, "exclusiveMaximum": True},
        {"type": "number", "multipleOf": 0.25, "minimum": 1, "maximum": 2},
        {"type": "string", "format": "uuid"},
        {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "minItems": 2},
        {"oneOf": [{"type": "string"}, {"type": "integer"}]},
    ]
    for schema in cases:
        for _ in range(30):
            value = sample_schema(schema, rng)
            if schema.get("exclusiveMinimum") is True:
                assert 0 < value <= 1
            elif schema.get("exclusiveMaximum") is True:
                assert value == 5
            elif "prefixItems" in schema:
                assert isinstance(value[0], int)
                assert isinstance(value[1], str)
            else:
                assert schema_errors(schema, value) == [], (schema, value)


def test_sample_arguments_is_an_object_or_empty() -> None:
    rng = random.Random(1)
    assert sample_arguments(None, rng) == {}
    assert sample_arguments({}, rng) == {}
    assert sample_arguments({"type": "string"}, rng) == {}
    assert sample_arguments({"type": "object", "required": ["x"]}, rng).keys() == {"x"}
