"""Tool calls over the wire: their shape, the ``tool_choice`` rules, what comes after a tool
result, ``max_tokens`` cutting the arguments, determinism, and arguments that validate against
the tool's schema, hand-written or as pydantic writes it."""

from __future__ import annotations

import datetime
import json
import re
import uuid
from typing import Any, Literal

import httpx
import pytest
from pydantic import BaseModel, Field

from aigateway.testing import MockGateway, MockRequest

from ._helpers import Chat, tokens, user
from ._schema_check import schema_errors

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


def test_after_a_tool_result_required_calls_a_tool_not_yet_called(chat: Chat) -> None:
    request = _after_tool_result(tool_choice="required")
    request["tools"] = [SEARCH, WEATHER]
    assert the_call(chat(**request))["function"]["name"] == "get_weather"


def test_required_answers_once_every_tool_was_called(chat: Chat) -> None:
    message = chat(**_after_tool_result(tool_choice="required")).json()["choices"][0]["message"]
    assert "sunny and 24C" in message["content"]


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
