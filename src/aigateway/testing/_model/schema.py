"""Values of a JSON schema: drawn from a seeded random generator, and checked (`conforms`).

The fake engine answers a tool call with arguments made here from the tool's ``parameters``
schema, and a JSON reply with a value of the schema the request gives, so a client under test
receives values it can validate and use. Supported: ``type`` (one or a list; ``null`` is
avoided when another type is allowed) ``object`` with ``properties`` / ``required`` (optional
properties appear about half of the time, all of them in ``strict`` mode), ``additionalProperties``
(``false``: never others; a schema: a map such as ``dict[str, int]`` gets one or two entries),
``minProperties`` / ``maxProperties``, ``string`` (``minLength`` / ``maxLength``, ``format``
date, date-time, time, duration, email, hostname, ipv4, ipv6, uri/url, uuid), ``number`` and
``integer`` (``minimum`` / ``maximum``, the exclusive forms, ``multipleOf``), ``boolean``,
``null``, ``array`` (``items``, ``prefixItems``, ``minItems`` / ``maxItems``, ``uniqueItems``),
``enum``, ``const``, ``anyOf`` / ``oneOf`` (one branch, preferring one without ``pattern``),
``allOf`` (merged), ``$ref`` into ``#/$defs`` or ``#/definitions`` (as pydantic writes them),
and boolean schemas. A schema's own values come first: one of its ``examples`` (or its
``example``), else its ``default``, when that value fits the schema (`conforms`). ``pattern``
is not honoured. A missing or empty schema for a function's parameters gives ``{}``.

Schemas come from strangers, so the work is bounded: past `MAX_DEPTH` levels optional parts
are left out (``null`` is preferred, arrays are as short as allowed), so recursive schemas end;
arrays hold at most `MAX_ITEMS` items and strings at most `MAX_STRING` characters, whatever the
schema asks; once a value has grown to about `MAX_SIZE` characters, everything left is ``null``
(a schema's example or default counts its size too, and one larger than that is not used);
checking that an example fits is bounded too (`conforms` visits at most `MAX_CHECKED` values).
No regular expression of the schema's is ever run: ``pattern`` is never checked either (a
stranger's regular expression could take exponential time).
"""

from __future__ import annotations

import datetime
import ipaddress
import math
import random
import uuid
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, TypeVar

__all__ = [
    "MAX_CHECKED",
    "MAX_DEPTH",
    "MAX_ITEMS",
    "MAX_SIZE",
    "MAX_STRING",
    "conforms",
    "sample_arguments",
    "sample_schema",
]

_WORDS = (
    "alpha", "blue", "river", "quick", "stone", "paris", "london", "data", "report", "green",
    "summer", "north", "value", "sample", "query", "metric", "update", "orange", "delta", "cloud",
)  # fmt: skip

MAX_DEPTH = 8
"""Nesting past which only what the schema requires is made."""
MAX_ITEMS = 256
"""The longest array made."""
MAX_STRING = 4096
"""The longest string made."""
MAX_SIZE = 64_000
"""About the most characters one value takes (each value counts 16, each string its length)."""
MAX_CHECKED = 2_000
"""The most values `conforms` visits; a value it cannot check within them does not fit."""
_VALUE_SIZE = 16
_HARD_DEPTH = 64
_DEFAULT_SPAN = 100
_N = TypeVar("_N", int, float)


def sample_arguments(schema: object, rng: random.Random, *, strict: bool = False) -> dict[str, Any]:
    """Arguments for a function whose ``parameters`` schema is ``schema`` (``{}`` when none);
    with ``strict`` (the function's ``strict: true``), every property is present."""
    if not isinstance(schema, Mapping) or not schema:
        return {}
    value = sample_schema(schema, rng, strict=strict)
    return value if isinstance(value, dict) else {}


def sample_schema(schema: object, rng: random.Random, *, strict: bool = False) -> Any:
    """A value valid under ``schema`` (best effort for the unsupported keywords); with
    ``strict``, objects carry every property of their schema."""
    return _Sampler(rng, schema, strict).sample(schema, 0)


class _Sampler:
    def __init__(self, rng: random.Random, root: object, strict: bool) -> None:
        self.rng = rng
        self.root = root
        self.strict = strict
        self.size = 0

    def sample(self, schema: object, depth: int) -> Any:
        rng = self.rng
        self.size += _VALUE_SIZE
        if self.size > MAX_SIZE or depth > _HARD_DEPTH:
            return None
        if schema is True or schema is None:
            return rng.choice(_WORDS)
        if not isinstance(schema, Mapping):
            return None
        schema = resolve(schema, self.root)
        if "const" in schema:
            return schema["const"]
        given = self._given(schema)
        if given is not _NONE:
            return given
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return rng.choice(schema["enum"])
        if "allOf" in schema and isinstance(schema["allOf"], list):
            return self.sample(_merge_all_of(schema, self.root), depth)
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and options:
                resolved = [resolve(o, self.root) if isinstance(o, Mapping) else o for o in options]
                nulls = [o for o in resolved if _is_null_schema(o)]
                non_null = [o for o in resolved if not _is_null_schema(o)]
                plain = [o for o in non_null if not _has_pattern(o)]
                non_null = plain or non_null
                pick = (nulls if depth >= MAX_DEPTH else non_null) or resolved
                base = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
                choice = rng.choice(pick)
                merged = {**base, **choice} if isinstance(choice, Mapping) else choice
                return self.sample(merged, depth + 1)
        kind = _pick_type(schema, depth)
        if kind == "object":
            return self._object(schema, depth)
        if kind == "array":
            return self._array(schema, depth)
        if kind == "integer":
            return _sample_integer(schema, rng)
        if kind == "number":
            return _sample_number(schema, rng)
        if kind == "boolean":
            return rng.random() < 0.5
        if kind == "null":
            return None
        text = _sample_string(schema, rng)
        self.size += len(text)
        return text

    def _given(self, schema: Mapping[str, Any]) -> Any:
        """One of the schema's ``examples`` (or its ``example``), else its ``default``, when
        it fits the schema and the room left; else `_NONE`."""
        examples = schema.get("examples")
        candidates = list(examples) if isinstance(examples, list) else []
        if "example" in schema:
            candidates.append(schema["example"])
        if not candidates and "default" in schema:
            candidates = [schema["default"]]
        if not candidates:
            return _NONE
        value = self.rng.choice(candidates)
        size = _size_within(value, MAX_SIZE - self.size)
        if size is None or not conforms(value, schema, self.root):
            return _NONE
        self.size += size
        return value

    def _object(self, schema: Mapping[str, Any], depth: int) -> dict[str, Any]:
        properties = schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        required = schema.get("required")
        required = [r for r in required if isinstance(r, str)] if isinstance(required, list) else []
        extra = schema.get("additionalProperties", True)
        result: dict[str, Any] = {}
        for name, subschema in properties.items():
            if name in required or self.strict or (depth < MAX_DEPTH and self.rng.random() < 0.5):
                result[name] = self.sample(subschema, depth + 1)
        value_schema = extra if isinstance(extra, Mapping) else True
        for name in required:
            if name not in result:
                result[name] = self.sample(value_schema, depth + 1)
        if extra is False:
            return result
        wanted = int_or(schema.get("minProperties"), 0) or 0
        if not properties and isinstance(extra, Mapping) and depth < MAX_DEPTH:
            wanted = max(wanted, self.rng.randint(1, 2))  # a map: a few entries
        if wanted <= len(result):
            return result
        most = int_or(schema.get("maxProperties"), None)
        wanted = min(wanted, MAX_ITEMS, MAX_ITEMS if most is None else most)
        words = self.rng.sample(_WORDS, len(_WORDS))
        index = 0
        while len(result) < wanted:
            word = words[index % len(words)]
            name = word if index < len(words) else f"{word}_{index // len(words)}"
            index += 1
            if name not in result:
                result[name] = self.sample(value_schema, depth + 1)
        return result

    def _array(self, schema: Mapping[str, Any], depth: int) -> list[Any]:
        low = int_or(schema.get("minItems"), None)
        high = int_or(schema.get("maxItems"), None)
        if low is None:
            low = 0 if depth >= MAX_DEPTH else min(1, high) if high is not None else 1
        if high is None:
            high = low if depth >= MAX_DEPTH else max(low, 3)
        low = min(max(low, 0), MAX_ITEMS)
        high = min(max(low, high), MAX_ITEMS)
        count = self.rng.randint(low, high)
        prefix = schema.get("prefixItems")
        prefix = prefix if isinstance(prefix, list) else []
        items = schema.get("items", True)
        if isinstance(items, list):  # the older tuple form
            prefix, items = items, schema.get("additionalItems", True)
        unique = schema.get("uniqueItems") is True
        result: list[Any] = []
        seen: set[str] = set()
        for index in range(count):
            item_schema = prefix[index] if index < len(prefix) else items
            for _ in range(20 if unique else 1):
                value = self.sample(item_schema, depth + 1)
                marker = repr(value)
                if not unique or marker not in seen:
                    break
            else:
                if len(result) >= low:
                    break
            seen.add(marker)
            result.append(value)
        return result


_NONE: Any = object()
"""No value (a schema gives no example or default that fits)."""


def _has_pattern(schema: object) -> bool:
    return isinstance(schema, Mapping) and "pattern" in schema


def _size_within(value: object, budget: int) -> int | None:
    """About the characters ``value`` takes as JSON (as `MAX_SIZE` counts them), or None
    once that is more than ``budget``; visits at most ``budget / 16`` values."""
    size = 0
    stack = [value]
    while stack:
        item = stack.pop()
        size += len(item) + _VALUE_SIZE if isinstance(item, str) else _VALUE_SIZE
        if size > budget:
            return None
        if isinstance(item, Mapping):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return size


def _merge_all_of(schema: Mapping[str, Any], root: object) -> dict[str, Any]:
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    for part in schema["allOf"]:
        if not isinstance(part, Mapping):
            continue
        part = resolve(part, root)
        for key, value in part.items():
            if key == "properties" and isinstance(value, Mapping):
                merged["properties"] = {**merged.get("properties", {}), **value}
            elif key == "required" and isinstance(value, list):
                merged["required"] = list(dict.fromkeys([*merged.get("required", []), *value]))
            else:
                merged.setdefault(key, value)
    return merged


def _is_null_schema(schema: object) -> bool:
    return isinstance(schema, Mapping) and schema.get("type") == "null"


def _pick_type(schema: Mapping[str, Any], depth: int) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        options = [k for k in kind if k != "null"] or kind
        if depth >= MAX_DEPTH and "null" in kind:
            options = ["null"]
        return str(options[0]) if options else "string"
    if isinstance(kind, str):
        return kind
    if "properties" in schema or "required" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    if any(k in schema for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")):
        return "number"
    return "string"


def _span(low: _N | None, high: _N | None, zero: _N) -> tuple[_N, _N]:
    """The range to sample: a missing end `_DEFAULT_SPAN` from the other (from ``zero`` when
    both are missing), and ``high`` at least ``low``."""
    if low is None:
        low = zero if high is None else high - _DEFAULT_SPAN
    if high is None:
        high = low + _DEFAULT_SPAN
    return low, max(low, high)


def _sample_integer(schema: Mapping[str, Any], rng: random.Random) -> int:
    low_f, low_x, high_f, high_x = bounds(schema)
    low = None if low_f is None else (math.floor(low_f) + 1 if low_x else math.ceil(low_f))
    high = None if high_f is None else (math.ceil(high_f) - 1 if high_x else math.floor(high_f))
    low, high = _span(low, high, 0)
    step = number(schema.get("multipleOf"))
    if step and step > 0 and float(step).is_integer():
        m = int(step)
        first, last = math.ceil(low / m), math.floor(high / m)
        if first <= last:
            return rng.randint(first, last) * m
    return rng.randint(low, high)


def _sample_number(schema: Mapping[str, Any], rng: random.Random) -> float | int:
    low, low_x, high, high_x = bounds(schema)
    low, high = _span(low, high, 0.0)
    step = number(schema.get("multipleOf"))
    if step and step > 0:
        first = math.ceil(low / step) + (1 if low_x and (low / step).is_integer() else 0)
        last = math.floor(high / step) - (1 if high_x and (high / step).is_integer() else 0)
        if first <= last:
            multiple = Decimal(repr(step)) * rng.randint(first, last)
            return int(multiple) if float(step).is_integer() else float(multiple)
    value = low + (high - low) * rng.uniform(0.05, 0.95)
    rounded = round(value, 2)
    inside = (rounded > low if low_x else rounded >= low) and (
        rounded < high if high_x else rounded <= high
    )
    return rounded if inside else value


def _sample_string(schema: Mapping[str, Any], rng: random.Random) -> str:
    min_len = min(max(0, int_or(schema.get("minLength"), 0) or 0), MAX_STRING)
    max_len = int_or(schema.get("maxLength"), None)
    formatted = _formatted(schema.get("format"), rng)
    if (
        formatted is not None
        and len(formatted) >= min_len
        and (max_len is None or len(formatted) <= max_len)
    ):
        return formatted
    text = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 3)))
    while len(text) < min_len:
        text += " " + rng.choice(_WORDS)
    if max_len is not None:
        text = text[: max(max_len, 0)]
    if text.endswith(" "):
        text = text[:-1] + "x"
    return text


def _formatted(fmt: object, rng: random.Random) -> str | None:
    if not isinstance(fmt, str):
        return None
    day = datetime.date(2024, 1, 1) + datetime.timedelta(days=rng.randint(0, 365))
    seconds = rng.randint(0, 86_399)
    clock = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    word = rng.choice(_WORDS)
    host = rng.randint(1, 254)
    return {
        "date": day.isoformat(),
        "date-time": f"{day.isoformat()}T{clock}Z",
        "time": f"{clock}Z",
        "duration": f"P{rng.randint(1, 30)}DT{rng.randint(0, 23)}H",
        "email": f"{word}@example.com",
        "idn-email": f"{word}@example.com",
        "hostname": f"{word}.example.com",
        "idn-hostname": f"{word}.example.com",
        "ipv4": f"192.0.2.{host}",
        "ipv6": f"2001:db8::{host:x}",
        "uri": f"https://example.com/{word}",
        "iri": f"https://example.com/{word}",
        "uri-reference": f"/{word}",
        "url": f"https://example.com/{word}",
        "uuid": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
    }.get(fmt)


# -- whether a value fits a schema, and the keyword readers the sampler shares -------------


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
