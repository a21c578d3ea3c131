"""A small JSON-schema checker of our own (jsonschema is not a dependency), for the tests of
the tool-call arguments and the schema sampler the mock generates them with."""

from __future__ import annotations

import datetime
import json
import re
import uuid
from collections.abc import Callable, Mapping
from typing import Any


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
