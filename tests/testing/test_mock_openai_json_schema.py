"""``response_format`` ``json_schema`` (and ``text``/``json_object``) at the mock and through
our client: replies follow the schema (objects, arrays, enums, unions, $ref/$defs, recursion,
formats), strict gives every property, the same seed the same reply, and hostile schemas get a
bounded reply quickly."""

from __future__ import annotations

import datetime
import enum
import json
import time
import uuid
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from aigateway import AsyncClient, Client
from aigateway.types.chat import ChatCompletion

from ..conftest import resolve
from ._helpers import Chat, ok, schema_format, user

pytestmark = pytest.mark.anyio


try:  # a precise second opinion when installed; the pydantic models below always check
    import jsonschema
except ImportError:  # pragma: no cover
    jsonschema = None


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
