"""Reading a JSON schema's keywords, and whether a value is an instance of a schema.

The mock's schema sampler (`aigateway.testing._schema`) shares these readers (``$ref``
resolution, numeric bounds) and asks `conforms` before it uses a schema's own ``examples`` or
``default``. The check knows the keywords the sampler knows; it never runs a schema's
``pattern`` (a stranger's regular expression could take exponential time), and it visits at
most `MAX_CHECKED` values.
"""

from __future__ import annotations

import datetime
import ipaddress
import math
import uuid
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["MAX_CHECKED", "bounds", "conforms", "int_or", "number", "resolve"]

MAX_CHECKED = 2_000
"""The most values `conforms` visits; a value it cannot check within them does not fit."""
_HARD_DEPTH = 64


def conforms(value: object, schema: object, root: object = None) -> bool:
    """True when ``value`` is an instance of ``schema`` as far as the keywords the sampler
    knows go (``pattern`` is not run); ``$ref`` resolves against ``root`` (``schema`` itself
    when None). Gives up, answering False, after `MAX_CHECKED` values."""
    checker = _Conformance(schema if root is None else root)
    try:
        return checker.check(value, schema, 0)
    except _TooMuch:
        return False


class _TooMuch(Exception):
    pass


class _Conformance:
    def __init__(self, root: object) -> None:
        self.root = root
        self.visits = 0

    def check(self, value: object, schema: object, depth: int) -> bool:
        self.visits += 1
        if self.visits > MAX_CHECKED or depth > _HARD_DEPTH:
            raise _TooMuch
        if isinstance(schema, bool) or schema is None:
            return schema is not False
        if not isinstance(schema, Mapping):
            return False
        schema = resolve(schema, self.root)
        if "const" in schema and not _same(value, schema["const"]):
            return False
        enum = schema.get("enum")
        if isinstance(enum, list) and not any(_same(value, option) for option in enum):
            return False
        for part in schema.get("allOf") or ():
            if not self.check(value, part, depth + 1):
                return False
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if (
                isinstance(options, list)
                and options
                and not any(self.check(value, option, depth + 1) for option in options)
            ):
                return False
        kind = schema.get("type")
        kinds = kind if isinstance(kind, list) else [kind] if isinstance(kind, str) else []
        if kinds and not any(_is_type(value, k) for k in kinds):
            return False
        if isinstance(value, bool) or value is None:
            return True
        if isinstance(value, int | float):
            return _number_fits(value, schema)
        if isinstance(value, str):
            return _string_fits(value, schema)
        if isinstance(value, list):
            return self._array(value, schema, depth)
        if isinstance(value, Mapping):
            return self._object(value, schema, depth)
        return False

    def _array(self, value: list[Any], schema: Mapping[str, Any], depth: int) -> bool:
        low, high = int_or(schema.get("minItems"), None), int_or(schema.get("maxItems"), None)
        if (low is not None and len(value) < low) or (high is not None and len(value) > high):
            return False
        prefix = schema.get("prefixItems")
        prefix = prefix if isinstance(prefix, list) else []
        items = schema.get("items", True)
        if isinstance(items, list):
            prefix, items = items, schema.get("additionalItems", True)
        return all(
            self.check(item, prefix[i] if i < len(prefix) else items, depth + 1)
            for i, item in enumerate(value)
        )

    def _object(self, value: Mapping[Any, Any], schema: Mapping[str, Any], depth: int) -> bool:
        required = schema.get("required")
        if isinstance(required, list) and any(name not in value for name in required):
            return False
        low = int_or(schema.get("minProperties"), None)
        high = int_or(schema.get("maxProperties"), None)
        if (low is not None and len(value) < low) or (high is not None and len(value) > high):
            return False
        properties = schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        extra = schema.get("additionalProperties", True)
        return all(
            self.check(item, properties.get(name, extra), depth + 1) for name, item in value.items()
        )


def _same(a: object, b: object) -> bool:
    """JSON equality: ``1`` and ``1.0`` are equal, ``true`` and ``1`` are not."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _is_type(value: object, kind: str) -> bool:
    if kind == "integer":  # 2.0 is an integer in JSON Schema
        if isinstance(value, float):
            return math.isfinite(value) and value.is_integer()
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "null":
        return value is None
    expected = {"string": str, "boolean": bool, "array": list, "object": Mapping}.get(kind)
    return expected is not None and isinstance(value, expected)


def _number_fits(value: float, schema: Mapping[str, Any]) -> bool:
    low, low_x, high, high_x = bounds(schema)
    if low is not None and (value <= low if low_x else value < low):
        return False
    if high is not None and (value >= high if high_x else value > high):
        return False
    step = number(schema.get("multipleOf"))
    if step and step > 0:
        quotient = value / step
        return math.isfinite(quotient) and abs(quotient - round(quotient)) < 1e-9
    return True


def _string_fits(value: str, schema: Mapping[str, Any]) -> bool:
    low, high = int_or(schema.get("minLength"), None), int_or(schema.get("maxLength"), None)
    if (low is not None and len(value) < low) or (high is not None and len(value) > high):
        return False
    check = _FORMAT_CHECKS.get(str(schema.get("format")))
    return check is None or check(value)


def _parses(parse: Callable[[str], object]) -> Callable[[str], bool]:
    def check(value: str) -> bool:
        try:
            parse(value)
        except ValueError:
            return False
        return True

    return check


_FORMAT_CHECKS: dict[str, Callable[[str], bool]] = {
    "date": _parses(datetime.date.fromisoformat),
    "date-time": _parses(lambda v: datetime.datetime.fromisoformat(v.replace("Z", "+00:00"))),
    "email": lambda v: "@" in v.strip("@") and " " not in v,
    "uuid": _parses(uuid.UUID),
    "uri": lambda v: ":" in v and v.split(":", 1)[0].isalpha(),
    "ipv4": _parses(ipaddress.IPv4Address),
    "ipv6": _parses(ipaddress.IPv6Address),
}


def resolve(schema: Mapping[str, Any], root: object) -> Mapping[str, Any]:
    seen = 0
    while isinstance(schema.get("$ref"), str) and seen < 32:
        ref: str = schema["$ref"]
        target: Any = root
        if ref.startswith("#"):
            for part in ref.lstrip("#").strip("/").split("/"):
                if not part:
                    continue
                part = part.replace("~1", "/").replace("~0", "~")
                target = target.get(part) if isinstance(target, Mapping) else None
        else:
            target = None
        if not isinstance(target, Mapping):
            return {k: v for k, v in schema.items() if k != "$ref"}
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**target, **rest}
        seen += 1
    return schema


def int_or(value: object, default: int | None) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    return int(value)


def number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def bounds(schema: Mapping[str, Any]) -> tuple[float | None, bool, float | None, bool]:
    """(low, low is exclusive, high, high is exclusive); draft-4 boolean exclusives too."""
    low, high = number(schema.get("minimum")), number(schema.get("maximum"))
    low_x = high_x = False
    ex_low, ex_high = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if ex_low is True:
        low_x = True
    elif (value := number(ex_low)) is not None and (low is None or value >= low):
        low, low_x = value, True
    if ex_high is True:
        high_x = True
    elif (value := number(ex_high)) is not None and (high is None or value <= high):
        high, high_x = value, True
    return low, low_x, high, high_x
