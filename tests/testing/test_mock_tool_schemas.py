"""The schema sampler behind the mock's tool-call arguments (`aigateway.testing._model.schema`):
values for generated schemas (hypothesis) validate, at the wire and sampled directly, as do
type lists, $ref, allOf, uniqueItems and draft-4 bounds; and the test checker itself can fail."""

from __future__ import annotations

import json
import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aigateway.testing import MockGateway, MockRequest
from aigateway.testing._model.schema import sample_arguments, sample_schema

from ._helpers import user
from ._schema_check import schema_errors


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
