"""The official ``openai`` SDK against the served mock: chat, streams (sync and async), a tool
round and structured output parsing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from .._integrations import import_integration
from .conftest import Served

openai = import_integration("openai", "compat")


class Weather(BaseModel):
    city: str
    sky: Literal["clear", "cloudy", "rain"]
    celsius: float


class GetWeather(BaseModel):
    """The weather in a city."""

    city: str = Field(examples=["Oslo"])
    unit: Literal["celsius", "fahrenheit"]


GET_WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": GetWeather.__doc__,
        "parameters": GetWeather.model_json_schema(),
    },
}
"""A plain tool (not strict); ``openai.pydantic_function_tool(GetWeather)`` is its strict form."""


@pytest.fixture
def sdk(served: Served) -> Iterator[Any]:
    with openai.OpenAI(base_url=served.url, api_key=served.api_key, max_retries=0) as client:
        yield client


def test_chat_and_stream_tell_the_same_reply(sdk: Any) -> None:
    messages = [{"role": "user", "content": "Hi"}]
    whole = sdk.chat.completions.create(model="gpt-4o-mini", messages=messages)
    assert whole.choices[0].finish_reason == "stop"
    assert whole.usage.total_tokens > 0
    stream = sdk.chat.completions.create(
        model="gpt-4o-mini",
        messages=messages,
        stream=True,
        stream_options={"include_usage": True},
    )
    with stream:
        chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    assert chunks[-1].usage.total_tokens == whole.usage.total_tokens


@pytest.mark.anyio
async def test_async_stream(served: Served) -> None:
    async with openai.AsyncOpenAI(
        base_url=served.url, api_key=served.api_key, max_retries=0
    ) as client:
        stream = await client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}], stream=True
        )
        finish = [c.choices[0].finish_reason async for c in stream if c.choices]
    assert finish[-1] == "stop"


def test_tool_round_ends_in_text(sdk: Any) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Oslo?"}]
    first = sdk.chat.completions.create(model="gpt-4o", messages=messages, tools=[GET_WEATHER])
    assert first.choices[0].finish_reason == "tool_calls"
    (call,) = first.choices[0].message.tool_calls
    arguments = json.loads(call.function.arguments)
    assert arguments["unit"] in {"celsius", "fahrenheit"}
    assert arguments["city"] == "Oslo"
    messages += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "12 degrees, clear"},
    ]
    second = sdk.chat.completions.create(model="gpt-4o", messages=messages, tools=[GET_WEATHER])
    assert second.choices[0].finish_reason == "stop"
    assert "12 degrees, clear" in second.choices[0].message.content


def test_parse_gives_the_model(sdk: Any) -> None:
    reply = sdk.chat.completions.parse(
        model="gpt-4o",
        messages=[{"role": "user", "content": "Weather in Oslo?"}],
        response_format=Weather,
    )
    weather = reply.choices[0].message.parsed
    assert isinstance(weather, Weather)
    assert weather.sky in {"clear", "cloudy", "rain"}


def test_parse_through_a_tool_round(sdk: Any) -> None:
    """``parse`` with a strict tool: the call's arguments parse into the tool's model, and
    the structured output holds after the tool result (the turn agent loops end on)."""
    tools = [openai.pydantic_function_tool(GetWeather)]
    messages: list[Any] = [{"role": "user", "content": "Weather in Oslo?"}]
    first = sdk.chat.completions.parse(
        model="gpt-4o", messages=messages, tools=tools, response_format=Weather
    )
    (call,) = first.choices[0].message.tool_calls
    assert isinstance(call.function.parsed_arguments, GetWeather)
    messages += [
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.function.name, "arguments": call.function.arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call.id, "content": "12 degrees, clear"},
    ]
    second = sdk.chat.completions.parse(
        model="gpt-4o", messages=messages, tools=tools, response_format=Weather
    )
    assert second.choices[0].finish_reason == "stop"
    assert isinstance(second.choices[0].message.parsed, Weather)
