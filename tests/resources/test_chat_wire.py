"""What goes on the wire for chat completions, checked with respx: exact JSON, headers,
unset fields absent, and nothing at all sent for invalid input."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import respx

from aigateway import AsyncClient, Client, InvalidRequestError
from aigateway.types import ChatCompletion, Message

from ..conftest import API_KEY, BASE_URL, resolve

pytestmark = pytest.mark.anyio

USER = [{"role": "user", "content": "Hello"}]
REPLY: dict[str, Any] = {
    "id": "chatcmpl-abc",
    "object": "chat.completion",
    "created": 1_700_000_000,
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Hi there"},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
}


@pytest.fixture
def gateway() -> Any:
    with respx.mock(base_url=BASE_URL, assert_all_called=False) as router:
        yield router


def sent(route: respx.Route) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(route.calls.last.request.content)
    return body


async def test_sends_exactly_the_given_fields(
    client: Client | AsyncClient, gateway: respx.Router
) -> None:
    route = gateway.post("/chat/completions").respond(200, json=REPLY)
    await resolve(client.chat.completions.create(model="gpt-4o-mini", messages=USER))
    assert sent(route) == {"model": "gpt-4o-mini", "messages": USER}
    request = route.calls.last.request
    assert request.url == f"{BASE_URL}/chat/completions"
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.headers["content-type"] == "application/json"


async def test_every_field_of_the_spec_is_sent(
    client: Client | AsyncClient, gateway: respx.Router
) -> None:
    route = gateway.post("/chat/completions").respond(200, json=REPLY)
    tool = {
        "type": "function",
        "function": {"name": "get_weather", "description": "d", "parameters": {"type": "object"}},
    }
    fields: dict[str, Any] = {
        "max_tokens": 128000,
        "temperature": 0,
        "top_p": 1,
        "stop": ["a", "b", "c", "d"],
        "presence_penalty": -2,
        "frequency_penalty": 2,
        "user": "u-1",
        "tools": [tool],
        "tool_choice": "auto",
        "functions": [{"name": "f", "parameters": {"type": "object"}}],
        "response_format": {"type": "json_object"},
        "seed": 7,
    }
    await resolve(client.chat.completions.create(model="m", messages=USER, **fields))
    assert sent(route) == {"model": "m", "messages": USER, **fields}


async def test_todays_openai_fields_are_sent_as_given(
    client: Client | AsyncClient, gateway: respx.Router
) -> None:
    route = gateway.post("/chat/completions").respond(200, json=REPLY)
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string"}, "items": {"$ref": "#/$defs/Item"}},
        "required": ["answer", "items"],
        "additionalProperties": False,
        "$defs": {"Item": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 3}},
    }
    fields: dict[str, Any] = {
        "n": 128,
        "logprobs": True,
        "top_logprobs": 20,
        "max_completion_tokens": 128000,
        "logit_bias": {"50256": -100, "42": 100},
        "tools": [tool],
        "tool_choice": {"type": "function", "function": {"name": "f"}},
        "parallel_tool_calls": False,
        "stream_options": {"include_usage": True},
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": "reply_1",
                "description": "d",
                "schema": schema,
                "strict": True,
            },
        },
    }
    messages = [
        {"role": "developer", "content": "be brief"},
        *USER,
        {"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": "{}"}},
        {"role": "function", "name": "f", "content": "42"},
    ]
    await resolve(client.chat.completions.create(model="m", messages=messages, **fields))
    assert sent(route) == {"model": "m", "messages": messages, **fields}


async def test_logprobs_in_replies_are_typed_and_lenient(
    client: Client | AsyncClient, gateway: respx.Router
) -> None:
    entry = {"token": "Hi", "logprob": -0.1, "bytes": [72, 105], "top_logprobs": []}
    choice = {**REPLY["choices"][0], "logprobs": {"content": [entry], "refusal": None, "x": 1}}
    gateway.post("/chat/completions").respond(200, json={**REPLY, "choices": [choice]})
    reply = await resolve(client.chat.completions.create(model="m", messages=USER, logprobs=True))
    logprobs = reply.choices[0].logprobs
    assert logprobs.content[0].token == "Hi"
    assert logprobs.content[0].logprob == -0.1
    assert logprobs.content[0].bytes == [72, 105]
    assert logprobs.model_extra == {"x": 1}


async def test_content_parts_and_reply_objects_pass_through(
    client: Client | AsyncClient, gateway: respx.Router
) -> None:
    route = gateway.post("/chat/completions").respond(200, json=REPLY)
    parts = [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": "https://img.test/cat.png"}},
    ]
    previous = ChatCompletion.model_validate(REPLY)
    messages: list[Any] = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": parts},
        previous,  # a whole reply
        previous.choices[0].message,  # a reply message
        Message(role="user", content="and now?"),
    ]
    await resolve(client.chat.completions.create(model="m", messages=messages))
    assert sent(route)["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": parts},
        {"role": "assistant", "content": "Hi there"},
        {"role": "assistant", "content": "Hi there"},
        {"role": "user", "content": "and now?"},
    ]


async def test_assistant_tool_calls_round_trip(
    client: Client | AsyncClient, gateway: respx.Router
) -> None:
    tool_reply = {
        **REPLY,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}"},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
    }
    route = gateway.post("/chat/completions").respond(200, json=tool_reply)
    first = await resolve(client.chat.completions.create(model="m", messages=USER))
    await resolve(
        client.chat.completions.create(
            model="m",
            messages=[*USER, first, {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}],
        )
    )
    assert sent(route)["messages"][1] == {
        "role": "assistant",
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    }


async def test_per_call_headers_body_and_timeout(
    client: Client | AsyncClient, gateway: respx.Router
) -> None:
    route = gateway.post("/chat/completions").respond(200, json=REPLY)
    await resolve(
        client.chat.completions.create(
            model="m",
            messages=USER,
            extra_headers={"X-Trace": "t-1"},
            extra_body={"provider_option": {"a": 1}},
            timeout=3.5,
        )
    )
    request = route.calls.last.request
    assert request.headers["x-trace"] == "t-1"
    assert sent(route) == {"model": "m", "messages": USER, "provider_option": {"a": 1}}
    assert request.extensions["timeout"] == httpx.Timeout(3.5).as_dict()


INVALID: list[tuple[dict[str, Any], str, str]] = [
    ({"temperature": 2.5}, "temperature", "from 0 to 2"),
    ({"top_p": -0.1}, "top_p", "from 0 to 1"),
    ({"max_tokens": 0}, "max_tokens", "from 1 to 128000"),
    ({"max_tokens": 128001}, "max_tokens", "from 1 to 128000"),
    ({"stop": ["a", "b", "c", "d", "e"]}, "stop", "at most 4"),
    ({"messages": []}, "messages", "at least 1"),
    (
        {"messages": [{"role": "robot", "content": "x"}]},
        "messages.0",
        "'system', 'developer', 'user', 'assistant', 'tool', 'function'",
    ),
    ({"presence_penalty": 3}, "presence_penalty", "from -2 to 2"),
    ({"frequency_penalty": -2.01}, "frequency_penalty", "from -2 to 2"),
    ({"tool_choice": "sometimes"}, "tool_choice", "'auto'"),
    ({"response_format": {"type": "yaml"}}, "response_format", "json_schema"),
    (
        {"messages": [{"role": "user", "content": [{"type": "video", "url": "x"}]}]},
        "messages.0.content.0",
        "image_url",
    ),
    ({"max_tokens": True}, "max_tokens", "integer"),
    ({"n": 0}, "n", "from 1 to 128"),
    ({"n": 129}, "n", "from 1 to 128"),
    ({"logprobs": 1}, "logprobs", "true or false"),
    ({"top_logprobs": 5}, "top_logprobs", "with logprobs: true"),
    ({"logprobs": True, "top_logprobs": 21}, "top_logprobs", "from 0 to 20"),
    ({"max_completion_tokens": 0}, "max_completion_tokens", "from 1 to 128000"),
    ({"max_tokens": 5, "max_completion_tokens": 5}, "max_tokens", "max_completion_tokens"),
    ({"parallel_tool_calls": "false"}, "parallel_tool_calls", "true or false"),
    ({"tool_choice": "required"}, "tool_choice", "with tools"),
    (
        {"tool_choice": {"type": "function", "function": {"name": "g"}}},
        "tool_choice",
        "a function in tools",
    ),
    ({"stream_options": {"include_usage": 1}}, "stream_options.include_usage", "true or false"),
    ({"logit_bias": {"x1": 1}}, "logit_bias.x1", "strings of digits"),
    ({"logit_bias": {"1": -101}}, "logit_bias.1", "from -100 to 100"),
    ({"response_format": {"type": "json_schema"}}, "response_format.json_schema", "'name'"),
    (
        {"response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": []}}},
        "response_format.json_schema.schema",
        "a JSON schema object",
    ),
    (
        {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "n", "schema": {"type": "obj"}},
            }
        },
        "response_format.json_schema.schema",
        "#/type must be one of",
    ),
]


@pytest.mark.parametrize(("override", "field", "allowed"), INVALID)
async def test_invalid_input_is_refused_before_sending(
    client: Client | AsyncClient,
    gateway: respx.Router,
    override: dict[str, Any],
    field: str,
    allowed: str,
) -> None:
    route = gateway.post("/chat/completions").respond(200, json=REPLY)
    params: dict[str, Any] = {"model": "m", "messages": USER, **override}
    with pytest.raises(InvalidRequestError) as caught:
        await resolve(client.chat.completions.create(**params))
    error = caught.value
    assert isinstance(error, ValueError)
    assert error.field == field
    assert allowed in str(error)
    value: Any = params
    for part in field.split("."):
        value = value[int(part)] if isinstance(value, list) else value.get(part, "(missing)")
    assert f"{field}={value!r}: " in str(error)
    assert not route.called


async def test_unknown_keyword_is_a_type_error_naming_the_closest(
    client: Client | AsyncClient, gateway: respx.Router
) -> None:
    route = gateway.post("/chat/completions").respond(200, json=REPLY)
    with pytest.raises(TypeError, match="'temprature'; did you mean 'temperature'"):
        await resolve(client.chat.completions.create(model="m", messages=USER, temprature=1))  # type: ignore[call-overload]
    assert not route.called


async def test_missing_model_is_refused(
    client: Client | AsyncClient, gateway: respx.Router
) -> None:
    route = gateway.post("/chat/completions").respond(200, json=REPLY)
    with pytest.raises(InvalidRequestError, match="model"):
        await resolve(client.chat.completions.create(messages=USER))  # type: ignore[call-overload]
    assert not route.called


def test_the_legacy_function_call_is_a_checked_keyword() -> None:
    from aigateway import InvalidRequestError
    from aigateway.testing import MockGateway

    gateway = MockGateway()
    functions = [
        {"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}}
    ]
    with gateway.client() as client:
        reply = client.chat.completions.create(
            model="gpt-4o",
            messages=[{"role": "user", "content": "hi"}],
            functions=functions,
            function_call={"name": "f"},
        )
        assert reply.choices[0].message.function_call is not None
        assert reply.choices[0].message.function_call.name == "f"
        with pytest.raises(InvalidRequestError, match=r"function_call='always'.*allowed: 'auto'"):
            client.chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": "hi"}], function_call="always"
            )
    assert len(gateway.requests) == 1
