"""A shape check for the JSON schemas a request carries (``response_format`` ``json_schema``).

It does not judge whether a schema is sensible, only whether it is a schema at all: every
subschema an object (or ``true``/``false``), keywords holding the kinds of values JSON Schema
gives them, ``type`` naming known types, ``$ref`` pointing inside the schema. Anything pydantic's
``model_json_schema()`` emits passes. Nesting and size are bounded, since the mock gateway runs
the same check on requests from strangers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["MAX_DEPTH", "MAX_SUBSCHEMAS", "schema_problem"]

MAX_DEPTH = 64
"""Deepest nesting of subschemas accepted."""
MAX_SUBSCHEMAS = 10_000
"""Most subschemas accepted in one schema."""

_TYPES = ("object", "array", "string", "number", "integer", "boolean", "null")
_ONE_SCHEMA = (
    "items",
    "additionalItems",
    "additionalProperties",
    "unevaluatedItems",
    "unevaluatedProperties",
    "propertyNames",
    "contains",
    "not",
    "if",
    "then",
    "else",
)
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_COUNTS = ("minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties")
_NUMBERS = ("minimum", "maximum", "multipleOf")


class _Problem(Exception):
    pass


def schema_problem(schema: object) -> str | None:
    """What makes ``schema`` not a JSON schema (naming where, as a ``#/...`` pointer), or None."""
    if not isinstance(schema, Mapping):
        return f"must be a JSON object, got {_kind(schema)}"
    checker = _Checker(schema)
    try:
        checker.check(schema, "#", 0)
    except _Problem as problem:
        return str(problem)
    return None


class _Checker:
    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.seen = 0

    def check(self, schema: object, where: str, depth: int) -> None:
        self.seen += 1
        if self.seen > MAX_SUBSCHEMAS:
            raise _Problem(f"has more than {MAX_SUBSCHEMAS} subschemas")
        if depth > MAX_DEPTH:
            raise _Problem(f"nests deeper than {MAX_DEPTH} levels (at {where})")
        if isinstance(schema, bool):
            return
        if not isinstance(schema, Mapping):
            raise _Problem(
                f"{where} must be a schema (an object or a boolean), got {_kind(schema)}"
            )
        self._check_keywords(schema, where)
        for key in _ONE_SCHEMA:
            if key in schema:
                value = schema[key]
                if key == "items" and isinstance(value, list):  # the older tuple form
                    self._check_list(value, f"{where}/items", depth, allow_empty=True)
                else:
                    self.check(value, f"{where}/{key}", depth + 1)
        for key in _SCHEMA_LISTS:
            if key in schema:
                self._check_list(
                    schema[key], f"{where}/{key}", depth, allow_empty=key == "prefixItems"
                )
        for key in _SCHEMA_MAPS:
            if key in schema:
                value = schema[key]
                if not isinstance(value, Mapping):
                    raise _Problem(f"{where}/{key} must be an object, got {_kind(value)}")
                for name, subschema in value.items():
                    self.check(subschema, f"{where}/{key}/{_escape(str(name))}", depth + 1)

    def _check_list(self, value: object, where: str, depth: int, *, allow_empty: bool) -> None:
        if not isinstance(value, list) or (not value and not allow_empty):
            raise _Problem(f"{where} must be a non-empty list of schemas, got {_kind(value)}")
        for index, subschema in enumerate(value):
            self.check(subschema, f"{where}/{index}", depth + 1)

    def _check_keywords(self, schema: Mapping[str, Any], where: str) -> None:
        kind = schema.get("type")
        kinds = kind if isinstance(kind, list) else [kind] if kind is not None else []
        if (isinstance(kind, list) and not kind) or any(k not in _TYPES for k in kinds):
            raise _Problem(f"{where}/type must be one of {', '.join(_TYPES)} or a list of them")
        required = schema.get("required", [])
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise _Problem(f"{where}/required must be a list of property names")
        if "enum" in schema and (not isinstance(schema["enum"], list) or not schema["enum"]):
            raise _Problem(f"{where}/enum must be a non-empty list")
        for key in _COUNTS:
            value = schema.get(key, 0)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise _Problem(f"{where}/{key} must be a non-negative integer")
        for low, high in (("minItems", "maxItems"), ("minLength", "maxLength")):
            if low in schema and high in schema and schema[low] > schema[high]:
                raise _Problem(f"{where}/{low} is greater than {high}")
        for key in _NUMBERS:
            value = schema.get(key, 1)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise _Problem(f"{where}/{key} must be a number")
        if schema.get("multipleOf", 1) <= 0:
            raise _Problem(f"{where}/multipleOf must be greater than 0")
        if "$ref" in schema:
            self._check_ref(schema["$ref"], where)

    def _check_ref(self, ref: object, where: str) -> None:
        if not isinstance(ref, str) or not (ref == "#" or ref.startswith("#/")):
            raise _Problem(f"{where}/$ref must point inside the schema ('#/$defs/...')")
        target: object = self.root
        for part in ref[2:].split("/") if ref != "#" else []:
            part = part.replace("~1", "/").replace("~0", "~")
            target = target.get(part) if isinstance(target, Mapping) else None
        if not isinstance(target, Mapping | bool):
            raise _Problem(f"{where}/$ref {ref!r} points to nothing in the schema")


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def _kind(value: object) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    return next((n for t, n in names.items() if isinstance(value, t)), "a number")
