"""The fake model holds to what agent frameworks send: ``response_format`` on every turn (after
tool results too), the ``tool_choice`` policy under which a loop answering every call ends, a
JSON schema written in the prompt (instructor, LangChain, pydantic-ai phrasings), tool
arguments that follow their schema; ``X-RateLimit-*`` on ``unlimited``; unknown body fields
reported or, with ``strict_fields``, refused."""

from __future__ import annotations

import json
import random
import time
import uuid
from collections.abc import Callable
from typing import Any, Literal

import httpx
import pytest
from pydantic import BaseModel, Field

from aigateway import BadRequestError, Client, cli, pydantic_function_tool
from aigateway.testing import MockGateway, RateLimits
from aigateway.testing._model.policy import prompt_schema
from aigateway.testing._model.schema import conforms, sample_schema

from ._helpers import Chat, ok, user
from ._schema_check import schema_errors

openai = pytest.importorskip("openai")


class City(BaseModel):
    name: str
    country: Literal["FR", "NO", "JP"]
    population: int = Field(ge=1, le=40_000_000)
    founded: str = Field(json_schema_extra={"format": "date"})


def function_tool(name: str, parameters: dict[str, Any] | None = None) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name}
    if parameters is not None:
        function["parameters"] = parameters
    return {"type": "function", "function": function}


WEATHER = function_tool(
    "get_weather",
    {
        "type": "object",
        "properties": {
            "city": {"type": "string", "examples": ["Oslo", "Kyoto"]},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        "required": ["city", "unit"],
    },
)
TIME = function_tool("local_time", {"type": "object", "properties": {"tz": {"type": "string"}}})
FINAL = function_tool("final_result", City.model_json_schema())


def strict_format(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema["additionalProperties"] = False
    schema["required"] = list(schema["properties"])
    return {
        "type": "json_schema",
        "json_schema": {"name": model.__name__, "schema": schema, "strict": True},
    }


def after_a_tool_round(question: str = "Weather in Oslo?") -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": question},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21 C"},
    ]


# -- response_format on every turn ---------------------------------------------------------


@pytest.mark.parametrize("tool_choice", ["auto", "required", "none"])
def test_json_object_holds_after_a_tool_round(chat: Chat, tool_choice: str) -> None:
    body = ok(
        chat(
            messages=after_a_tool_round(),
            tools=[WEATHER],
            tool_choice=tool_choice,
            response_format={"type": "json_object"},
        )
    )
    content = json.loads(body["choices"][0]["message"]["content"])
    assert isinstance(content, dict)
    assert "sunny, 21 C" in content["answer"]  # it still read the tool's result


@pytest.mark.parametrize("seed", range(8))
def test_a_strict_schema_gives_an_instance_after_a_tool_round(seed: int) -> None:
    gateway = MockGateway(seed=seed)
    fields: Any = {"tools": [WEATHER], "response_format": strict_format(City)}
    with gateway.client() as client:
        reply = client.chat.completions.create(
            model="gpt-4o", messages=after_a_tool_round(), **fields
        )
    content = json.loads(reply.text or "")
    assert schema_errors(strict_format(City)["json_schema"]["schema"], content) == []
    assert set(content) == {"name", "country", "population", "founded"}
    City.model_validate(content)


class GetWeather(BaseModel):
    city: str


def test_parse_after_a_tool_round_gives_the_model() -> None:
    with MockGateway(seed=3).client() as client:
        completion = client.chat.completions.parse(
            model="gpt-4o",
            messages=after_a_tool_round(),
            tools=[pydantic_function_tool(GetWeather, name="get_weather")],
            response_format=City,
        )
    assert isinstance(completion.choices[0].message.parsed, City)


# -- the tool_choice policy ----------------------------------------------------------------


def run_loop(
    send: Callable[[list[dict[str, Any]]], dict[str, Any]], limit: int = 10
) -> tuple[list[list[str]], dict[str, Any]]:
    """Answer every tool call until a reply calls none: the calls of each turn, and the last
    message (a loop that does not end fails here)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Plan my day in Oslo."}]
    turns: list[list[str]] = []
    for _ in range(limit):
        message = send(messages)
        calls = message.get("tool_calls") or []
        if not calls:
            return turns, message
        turns.append([call["function"]["name"] for call in calls])
        messages.append(message)
        for call in calls:
            result = f"result of {call['function']['name']}"
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    pytest.fail(f"the loop did not end within {limit} turns: {turns}")


def sender(chat: Chat, **fields: Any) -> Callable[[list[dict[str, Any]]], dict[str, Any]]:
    def send(messages: list[dict[str, Any]]) -> dict[str, Any]:
        message: dict[str, Any] = ok(chat(messages=list(messages), **fields))["choices"][0][
            "message"
        ]
        return message

    return send


NAMED = {"type": "function", "function": {"name": "local_time"}}


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, [["get_weather"]]),
        ({"tool_choice": "auto"}, [["get_weather"]]),
        ({"tool_choice": "auto", "parallel_tool_calls": True}, [["get_weather", "local_time"]]),
        ({"tool_choice": "required"}, [["get_weather"], ["local_time"]]),
        (
            {"tool_choice": "required", "parallel_tool_calls": True},
            [["get_weather", "local_time"]],
        ),
        ({"tool_choice": NAMED}, [["local_time"]] * 3),
        ({"tool_choice": "none"}, []),
    ],
    ids=["default", "auto", "auto-parallel", "required", "required-parallel", "named", "none"],
)
def test_a_loop_answering_every_call_ends(
    chat: Chat, fields: dict[str, Any], expected: list[list[str]]
) -> None:
    turns, last = run_loop(sender(chat, tools=[WEATHER, TIME], **fields))
    assert turns == expected
    assert isinstance(last["content"], str)
    assert last["content"]


def test_required_with_an_output_tool_ends_on_the_output_tool(chat: Chat) -> None:
    """pydantic-ai's default (tool) output mode: function tools, then its output tool, all
    offered with ``required``; the loop ends when the output tool is called."""
    send = sender(chat, tools=[WEATHER, FINAL], tool_choice="required")
    messages: list[dict[str, Any]] = user("Which city?")
    names = []
    for _ in range(3):
        message = send(messages)
        (call,) = message["tool_calls"]
        names.append(call["function"]["name"])
        if names[-1] == "final_result":
            City.model_validate_json(call["function"]["arguments"])
            break
        messages += [message, {"role": "tool", "tool_call_id": call["id"], "content": "ok"}]
    assert names == ["get_weather", "final_result"]


def test_a_new_user_message_starts_the_tools_over(chat: Chat) -> None:
    messages = [
        *after_a_tool_round(),
        {"role": "assistant", "content": "It is sunny."},
        {"role": "user", "content": "And tomorrow?"},
    ]
    message = ok(chat(messages=messages, tools=[WEATHER], tool_choice="required"))["choices"][0][
        "message"
    ]
    assert [call["function"]["name"] for call in message["tool_calls"]] == ["get_weather"]


def test_legacy_functions_follow_the_same_policy(chat: Chat) -> None:
    function = {"name": "get_weather", "parameters": WEATHER["function"]["parameters"]}
    first = ok(chat(functions=[function]))["choices"][0]
    assert first["finish_reason"] == "function_call"
    messages = [
        *user(),
        {"role": "assistant", "content": None, "function_call": first["message"]["function_call"]},
        {"role": "function", "name": "get_weather", "content": "rain"},
    ]
    assert ok(chat(messages=messages, functions=[function]))["choices"][0]["finish_reason"] == (
        "stop"
    )


# -- a JSON schema written in the prompt ---------------------------------------------------

INSTRUCTOR_SYSTEM = (
    "As a genius expert, your task is to understand the content and provide the parsed objects "
    "in json that match the following json_schema:\n\n"
    f"{json.dumps(City.model_json_schema(), indent=2)}\n\n"
    "Make sure to return an instance of the JSON, not the schema itself"
)
LANGCHAIN_INSTRUCTIONS = (
    "The output should be formatted as a JSON instance that conforms to the JSON schema below.\n"
    "\nAs an example, for the schema "
    '{"properties": {"foo": {"title": "Foo", "description": "a list of strings", '
    '"type": "array", "items": {"type": "string"}}}, "required": ["foo"]}\n'
    'the object {"foo": ["bar", "baz"]} is a well-formatted instance of the schema. '
    'The object {"properties": {"foo": ["bar", "baz"]}} is not well-formatted.\n\n'
    "Here is the output schema:\n```\n"
    + json.dumps({k: v for k, v in City.model_json_schema().items() if k not in ("title", "type")})
    + "\n```"
)
PYDANTIC_AI_INSTRUCTIONS = (
    "Be helpful.\n\nAlways respond with a JSON object that's compatible with this schema:\n\n"
    f"{json.dumps(City.model_json_schema())}\n\n"
    "Don't include any text or Markdown fencing before or after."
)


def content_of(response: httpx.Response) -> str:
    return str(ok(response)["choices"][0]["message"]["content"])


@pytest.mark.parametrize("seed", range(4))
def test_instructor_json_mode_gets_an_instance_of_the_prompt_schema(seed: int, chat: Chat) -> None:
    messages = [{"role": "system", "content": INSTRUCTOR_SYSTEM}, *user("Paris, please.")]
    text = content_of(chat(messages=messages, seed=seed, response_format={"type": "json_object"}))
    City.model_validate_json(text)


def test_instructor_md_json_mode_gets_the_instance_in_a_code_block(chat: Chat) -> None:
    messages = [
        {"role": "system", "content": INSTRUCTOR_SYSTEM},
        *user(
            "Paris, please.\n\nReturn the correct JSON response within a ```json codeblock. "
            "not the JSON_SCHEMA"
        ),
    ]
    text = content_of(chat(messages=messages))
    assert text.startswith("```json\n")
    assert text.endswith("\n```")
    City.model_validate_json(text.removeprefix("```json\n").removesuffix("\n```"))


def test_langchain_format_instructions_give_the_output_schema_not_the_example(
    chat: Chat,
) -> None:
    messages = user(f"Tell me about Oslo.\n{LANGCHAIN_INSTRUCTIONS}")
    text = content_of(chat(messages=messages, response_format={"type": "json_object"}))
    City.model_validate_json(text)


def test_pydantic_ai_prompted_output_after_a_tool_round(chat: Chat) -> None:
    messages = [{"role": "system", "content": PYDANTIC_AI_INSTRUCTIONS}, *after_a_tool_round()]
    text = content_of(chat(messages=messages, tools=[WEATHER]))
    City.model_validate_json(text)


def test_a_prompt_without_a_schema_keeps_the_plain_json_object(chat: Chat) -> None:
    text = content_of(chat(response_format={"type": "json_object"}))
    assert set(json.loads(text)) == {"answer", "confidence", "keywords", "complete"}
    assert not content_of(chat(messages=user('{"properties": 3}'))).startswith("{")


# -- arguments and values follow the schema ------------------------------------------------

RICH = {
    "type": "object",
    "properties": {
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "kind": {"const": "forecast"},
        "city": {"type": "string", "examples": ["Oslo"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 7, "default": 3},
        "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "step": {"type": "number", "multipleOf": 0.25, "minimum": 1, "maximum": 2},
        "day": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "date-time"},
        "mail": {"type": "string", "format": "email"},
        "site": {"type": "string", "format": "uri"},
        "id": {"type": "string", "format": "uuid"},
        "code": {"type": "string", "minLength": 3, "maxLength": 5},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2},
        "scores": {"type": "object", "additionalProperties": {"type": "integer"}},
        "wrong_default": {"type": "string", "default": None},
        "place": {"$ref": "#/$defs/Place"},
        "either": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
    },
    "required": ["unit", "kind", "city", "days", "ratio", "step", "day", "at", "mail"],
    "$defs": {
        "Place": {
            "type": "object",
            "properties": {"lat": {"type": "number", "minimum": -90, "maximum": 90}},
            "required": ["lat"],
        }
    },
}


@pytest.mark.parametrize("seed", range(6))
def test_arguments_honour_the_schema(chat: Chat, seed: int) -> None:
    tool = function_tool("forecast", RICH)
    tool["function"]["strict"] = True
    body = ok(chat(seed=seed, tools=[tool]))
    arguments = json.loads(body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"])
    assert schema_errors(RICH, arguments) == []
    assert set(arguments) == set(RICH["properties"])  # strict: every property
    assert arguments["kind"] == "forecast"
    assert arguments["city"] == "Oslo"  # the schema's example
    assert arguments["days"] == 3  # its default
    assert isinstance(arguments["wrong_default"], str)  # a default that does not fit is not used
    uuid.UUID(arguments["id"])


# -- rate-limit headers and unknown fields -------------------------------------------------


@pytest.mark.parametrize(
    ("limits", "limit"),
    [("unlimited", str(2**31 - 1)), (RateLimits(requests_per_day=500), "500")],
)
def test_every_reply_carries_rate_limit_headers(limits: str | RateLimits, limit: str) -> None:
    gateway = MockGateway(rate_limits=limits)
    headers = {"Authorization": f"Bearer {gateway.api_key}"}
    with httpx.Client(transport=gateway.transport(), base_url=gateway.base_url) as http:
        body = {"model": "gpt-4o", "messages": user()}
        replies = [
            http.post("/chat/completions", json=body, headers=headers),
            http.post("/chat/completions", json=body, headers=headers),
            http.get("/models", headers=headers),
            http.get("/models"),  # a 401
        ]
    assert [r.headers["x-ratelimit-limit"] for r in replies] == [limit] * 4
    remaining = [int(r.headers["x-ratelimit-remaining"]) for r in replies]
    assert remaining[:3] == [int(limit) - 1, int(limit) - 2, int(limit) - 3]
    assert all(int(r.headers["x-ratelimit-reset"]) > gateway.clock.now() for r in replies)


def test_unknown_fields_are_reported_by_default(chat: Chat) -> None:
    response = chat(temprature=0.2, store=True)
    assert response.status_code == 200
    assert response.headers["x-mock-unknown-fields"] == "temprature, store"
    assert "x-mock-unknown-fields" not in chat().headers
    many = chat(**{f"x{i}": i for i in range(25)}).headers["x-mock-unknown-fields"]
    assert many.endswith(", x18, x19, (5 more)")


def test_strict_fields_refuse_an_unknown_field() -> None:
    gateway = MockGateway(strict_fields=True)
    with gateway.client() as client, pytest.raises(BadRequestError) as caught:
        client.chat.completions.create(
            model="gpt-4o", messages=user(), extra_body={"temprature": 0.2}
        )
    assert caught.value.status_code == 400
    assert caught.value.param == "temprature"
    assert "did you mean 'temperature'?" in str(caught.value)
    assert gateway.charges == []


@pytest.mark.aigateway(strict_fields=True)
def test_the_pytest_marker_sets_strict_fields(aigateway_client: Client) -> None:
    with pytest.raises(BadRequestError, match="store"):
        aigateway_client.chat.completions.create(
            model="gpt-4o", messages=user(), extra_body={"store": True}
        )


def test_mock_serve_strict_fields(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    refused: list[str] = []

    def one_request_then_ctrl_c() -> None:
        out = capsys.readouterr().out
        url = out.split("serving at ")[1].split()[0]
        key = out.split("credits): ")[1].split()[0]
        body = {"model": "gpt-4o", "messages": user(), "temprature": 1}
        reply = httpx.post(
            f"{url}/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"}
        )
        refused.append(reply.json()["error"]["param"])
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "wait_until_interrupted", one_request_then_ctrl_c)
    assert cli.main(["mock", "serve", "--port", "0", "--strict-fields"]) == 0
    assert refused == ["temprature"]


# -- the served mock and the official openai SDK -------------------------------------------


def test_openai_sdk_flows_on_the_served_mock() -> None:
    gateway = MockGateway(seed=5, rate_limits="unlimited", strict_fields=True)
    with gateway.serve() as url:
        sdk = openai.OpenAI(base_url=url, api_key=gateway.api_key, max_retries=0)
        messages: list[Any] = [{"role": "user", "content": "Weather in Oslo, as a City?"}]
        tools: Any = [openai.pydantic_function_tool(GetWeather, name="get_weather")]
        for _ in range(3):  # required: a tool not yet called, then the answer
            raw = sdk.chat.completions.with_raw_response.create(
                model="gpt-4o", messages=messages, tools=tools, tool_choice="required"
            )
            assert raw.headers["x-ratelimit-limit"] == str(2**31 - 1)
            message = raw.parse().choices[0].message
            if not message.tool_calls:
                break
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                messages.append({"role": "tool", "tool_call_id": call.id, "content": "sunny"})
        else:
            pytest.fail("the loop did not end")
        assert len(messages) == 3
        parsed = sdk.chat.completions.parse(
            model="gpt-4o", messages=messages, tools=tools, response_format=City
        )
        assert isinstance(parsed.choices[0].message.parsed, City)
        with pytest.raises(openai.BadRequestError, match="temprature"):
            sdk.chat.completions.create(
                model="gpt-4o", messages=messages, extra_body={"temprature": 1}
            )
        sdk.close()


# -- bounded work on hostile prompts and schemas -------------------------------------------


def test_looking_for_a_prompt_schema_is_bounded() -> None:
    nested = '{"properties": {"a": ' * 5_000  # never closed, deeper than json can go
    many_open = ('{"properties": [' + "1," * 2_000) * 200  # each one read to the end
    texts = [nested, many_open, "{" * 100_000 + '"properties"']
    started = time.process_time()
    assert prompt_schema(texts) is None
    assert time.process_time() - started < 1
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert prompt_schema([f'noise {{}} {json.dumps(schema)} and {{"x": 1}}']) == schema
    assert prompt_schema(['{"properties": {"a": ["not", "a", "schema"]}}']) is None


def test_an_example_or_default_is_used_only_when_it_fits() -> None:
    rng = random.Random(0)
    assert sample_schema({"type": "integer", "maximum": 5, "examples": [9]}, rng) <= 5
    assert sample_schema({"type": "integer", "default": 4, "minimum": 1}, rng) == 4
    huge = ["word"] * 100_000
    value = sample_schema({"type": "array", "items": {"type": "string"}, "default": huge}, rng)
    assert len(value) < 100
    assert conforms({"a": [1, 2]}, {"properties": {"a": {"items": {"type": "integer"}}}})
    assert not conforms({"a": [1, "2"]}, {"properties": {"a": {"items": {"type": "integer"}}}})
    assert not conforms(list(range(10_000)), {"type": "array", "items": {"type": "integer"}})


def test_the_request_log_names_the_unknown_fields(chat: Chat, gateway: MockGateway) -> None:
    chat(temprature=0.2)
    chat()
    token = {"Authorization": f"Bearer {gateway.admin_token}"}
    with httpx.Client(transport=gateway.transport(), base_url="http://mock") as admin:
        log = admin.get("/_mock/requests", headers=token).json()["data"]
    assert [entry["unknown_fields"] for entry in log] == [["temprature"], []]
