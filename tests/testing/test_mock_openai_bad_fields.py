"""Bad and extreme values of the OpenAI-compatible request fields: each bad value is the same
400 from the mock and, before anything is sent, from our client; a too-deep schema is refused,
and all the choices of a reply together hold a bounded number of tokens."""

from __future__ import annotations

from typing import Any

import pytest

from aigateway import AsyncClient, Client, InvalidRequestError
from aigateway.testing import MockGateway
from aigateway.testing._model.engine import MAX_REPLY_TOKENS

from ..conftest import resolve
from ._helpers import LOOKUP_TOOL, Chat, ok, schema_format, user

pytestmark = pytest.mark.anyio


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
