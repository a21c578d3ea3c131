"""Strict checks of request bodies, shared by the client (before sending) and the mock (to answer 400).

pydantic does the checking; this module only turns its errors into `Violation`s that name the
field by its path in the request (``messages.0.role``), the value, and what is allowed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError
from pydantic_core import ErrorDetails

from aigateway.errors import InvalidRequestError, Violation

T = TypeVar("T")

_TYPE_MISMATCH_SUFFIXES = ("_type", "_parsing", "union_tag_not_found")


def validate(adapter: TypeAdapter[T], data: object, allowed: Mapping[str, str]) -> T:
    """``data`` validated by ``adapter``, or InvalidRequestError listing every violation."""
    try:
        return adapter.validate_python(data)
    except ValidationError as exc:
        raise InvalidRequestError(violations(exc, data, allowed)) from None


def violations(exc: ValidationError, data: object, allowed: Mapping[str, str]) -> list[Violation]:
    """One violation per offending field, the most telling error of each."""
    best: dict[str, tuple[int, Violation]] = {}
    for error in exc.errors(include_url=False):
        path = _data_path(error["loc"], data, missing=error["type"] == "missing")
        field = ".".join(str(part) for part in path) or "(body)"
        value = _value_at(data, path) if error["type"] != "missing" else "(missing)"
        rank = 1 if error["type"].endswith(_TYPE_MISMATCH_SUFFIXES) else 0
        if field in best and best[field][0] <= rank:
            continue
        best[field] = (rank, Violation(field, value, _describe(error, path, allowed)))
    # A branch mismatch at a parent ("should be a string") is noise when a deeper field says more.
    return [
        violation
        for field, (rank, violation) in best.items()
        if not (rank and any(other.startswith(field + ".") for other in best))
    ]


def _describe(error: ErrorDetails, path: Sequence[str | int], allowed: Mapping[str, str]) -> str:
    message = error["msg"]
    if error["type"] == "union_tag_invalid":
        message = f"unknown {error.get('ctx', {}).get('discriminator', 'tag').strip(chr(39))}"
    names = [part for part in path if isinstance(part, str)]
    hint = next((allowed[name] for name in reversed(names) if name in allowed), None)
    if error["type"] == "union_tag_invalid" and names and names[-1] == "messages":
        hint = allowed.get("role", hint)
    return f"{message}; allowed: {hint}" if hint else message


def _data_path(loc: tuple[int | str, ...], data: object, *, missing: bool) -> list[str | int]:
    """The location with pydantic's union-branch labels (``str``, ``list[str]``, a tag) removed:
    only keys and indexes that exist in ``data``, plus the absent key of a ``missing`` error."""
    path: list[str | int] = []
    node: Any = data
    for part in loc:
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list | tuple) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            continue  # a union-branch label, not a place in the data
        path.append(part)
    if missing and loc and (not path or path[-1] != loc[-1]):
        path.append(loc[-1])
    return path


def _value_at(data: object, path: Sequence[str | int]) -> object:
    node: Any = data
    for part in path:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return None
    return node
