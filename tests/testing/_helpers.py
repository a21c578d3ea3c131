"""Helpers shared by the mock gateway's tests."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import httpx

Chat = Callable[..., httpx.Response]
"""The ``chat`` fixture: POST /chat/completions with the fields given."""

TOKEN = re.compile(r"\w+|[^\w\s]")
"""The tokenizer rule, restated here so tests check the mock against it, not against itself."""


def tokens(text: str) -> int:
    return len(TOKEN.findall(text))


def user(text: str = "Hello, world!") -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def ok(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def parse_sse(raw: bytes) -> list[Any]:
    """Events of a stream, strictly per spec section 6: every event is ``data: <json>`` and a
    blank line; the last is ``data: [DONE]`` (returned as the string "[DONE]")."""
    text = raw.decode("utf-8")
    assert text.endswith("\n\n"), text[-50:]
    events: list[Any] = []
    for block in text[:-2].split("\n\n"):
        assert block.startswith("data: "), block
        assert "\n" not in block, block
        payload = block[len("data: ") :]
        events.append(payload if payload == "[DONE]" else json.loads(payload))
    return events


LOOKUP_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "lookup",
        "parameters": {
            "type": "object",
            "properties": {"term": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["term", "limit"],
        },
    },
}
"""A tool with two required arguments, for tool-call tests."""


def schema_format(schema: dict[str, Any], strict: bool | None = None) -> dict[str, Any]:
    json_schema: dict[str, Any] = {"name": "order", "schema": schema}
    if strict is not None:
        json_schema["strict"] = strict
    return {"type": "json_schema", "json_schema": json_schema}
