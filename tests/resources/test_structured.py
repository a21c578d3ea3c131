"""Structured outputs: ``parse`` and ``stream(response_format=Model)`` against the mock gateway.

The mock answers a ``json_schema`` response format with JSON valid against the schema, so what
comes back must validate into the requested type; scripted replies play the broken cases.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict

import aigateway
from aigateway import (
    AsyncClient,
    Client,
    InvalidRequestError,
    LengthFinishReasonError,
    ParsedChatCompletion,
    StructuredOutputError,
    pydantic_function_tool,
)
from aigateway.testing import MockGateway
from aigateway.types import ChatCompletion, ChatCompletionChunk

from ..conftest import API_KEY, BASE_URL, in_process_client, resolve

pytestmark = pytest.mark.anyio

MODEL = "gpt-4o-mini"
MESSAGES = [{"role": "user", "content": "Describe someone."}]


class Address(BaseModel):
    city: str
    postcode: str | None = None


class Person(BaseModel):
    """A person and where they live."""

    name: str
    age: int
    addresses: list[Address]
    nickname: str = "none"


class Point(TypedDict):
    x: int
    y: int


@dataclass
class Measurement:
    label: str
    values: list[float]


class Loose(BaseModel):
    name: str
    meta: dict[str, Any]


class Weather(BaseModel):
    """Look up the weather in a city."""

    city: str
    days: int


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@contextlib.asynccontextmanager
async def client_of(kind: str, gateway: MockGateway) -> AsyncIterator[Client | AsyncClient]:
    async with in_process_client(kind, gateway, max_retries=0) as client:
        yield client


def sent_body(gateway: MockGateway) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(gateway.requests[-1].body)
    return body


def objects_in(schema: Any) -> list[dict[str, Any]]:
    """Every object schema in ``schema``, ``$defs`` included."""
    found: list[dict[str, Any]] = []
    if isinstance(schema, dict):
        if schema.get("type") == "object":
            found.append(schema)
        for value in schema.values():
            found.extend(objects_in(value))
    elif isinstance(schema, list):
        for value in schema:
            found.extend(objects_in(value))
    return found


async def test_parse_sends_a_strict_schema_and_returns_the_model(
    kind: str, gateway: MockGateway
) -> None:
    async with client_of(kind, gateway) as client:
        completion = await resolve(
            client.chat.completions.parse(model=MODEL, messages=MESSAGES, response_format=Person)
        )
    assert isinstance(completion, ParsedChatCompletion)
    person = completion.choices[0].message.parsed
    assert isinstance(person, Person)
    assert all(isinstance(address, Address) for address in person.addresses)
    assert person == Person.model_validate_json(completion.choices[0].message.content or "")

    response_format = sent_body(gateway)["response_format"]
    assert response_format["type"] == "json_schema"
    spec = response_format["json_schema"]
    assert (spec["name"], spec["strict"]) == ("Person", True)
    objects = objects_in(spec["schema"])
    assert len(objects) == 2  # Person and Address (in $defs)
    for schema in objects:
        assert schema["additionalProperties"] is False
        assert sorted(schema["required"]) == sorted(schema["properties"])
    assert "default" not in json.dumps(spec["schema"])


@pytest.mark.parametrize(
    ("response_format", "check"),
    [
        (Point, lambda value: isinstance(value, dict) and set(value) == {"x", "y"}),
        (Measurement, lambda value: isinstance(value, Measurement)),
    ],
    ids=["typeddict", "dataclass"],
)
async def test_parse_takes_typeddicts_and_dataclasses(
    kind: str, gateway: MockGateway, response_format: type, check: Callable[[Any], bool]
) -> None:
    async with client_of(kind, gateway) as client:
        completion = await resolve(
            client.chat.completions.parse(
                model=MODEL, messages=MESSAGES, response_format=response_format
            )
        )
    assert check(completion.choices[0].message.parsed)
    assert sent_body(gateway)["response_format"]["json_schema"]["name"] == response_format.__name__


async def test_every_choice_is_parsed(kind: str, gateway: MockGateway) -> None:
    async with client_of(kind, gateway) as client:
        completion = await resolve(
            client.chat.completions.parse(
                model=MODEL, messages=MESSAGES, response_format=Person, n=2
            )
        )
    people = [choice.message.parsed for choice in completion.choices]
    assert len(people) == 2
    assert all(isinstance(person, Person) for person in people)
    assert people[0] != people[1]


async def test_a_reply_cut_by_the_token_limit_raises(kind: str, gateway: MockGateway) -> None:
    async with client_of(kind, gateway) as client:
        with pytest.raises(LengthFinishReasonError) as caught:
            await resolve(
                client.chat.completions.parse(
                    model=MODEL, messages=MESSAGES, response_format=Person, max_tokens=3
                )
            )
    assert caught.value.completion.choices[0].finish_reason == "length"
    assert "max_completion_tokens" in str(caught.value)


async def test_a_reply_that_is_not_json_raises_with_the_text(
    kind: str, gateway: MockGateway
) -> None:
    gateway.enqueue_reply("not json")
    async with client_of(kind, gateway) as client:
        with pytest.raises(StructuredOutputError) as caught:
            await resolve(
                client.chat.completions.parse(
                    model=MODEL, messages=MESSAGES, response_format=Person
                )
            )
    assert caught.value.text == "not json"
    assert caught.value.errors[0]["type"] == "json_invalid"
    assert isinstance(caught.value, aigateway.APIResponseValidationError)


async def test_a_reply_of_the_wrong_shape_raises_with_pydantics_errors(
    kind: str, gateway: MockGateway
) -> None:
    gateway.enqueue_reply('{"name": "Ada", "age": "old", "addresses": []}')
    async with client_of(kind, gateway) as client:
        with pytest.raises(StructuredOutputError) as caught:
            await resolve(
                client.chat.completions.parse(
                    model=MODEL, messages=MESSAGES, response_format=Person
                )
            )
    assert [error["loc"] for error in caught.value.errors] == [("age",)]
    assert "Ada" in caught.value.text


@pytest.mark.parametrize(
    ("response_format", "field"),
    [(Loose, "response_format.meta"), (int, "response_format")],
    ids=["free-form-dict", "not-an-object"],
)
async def test_a_type_that_cannot_be_strict_is_refused_before_sending(
    kind: str, gateway: MockGateway, response_format: type, field: str
) -> None:
    async with client_of(kind, gateway) as client:
        with pytest.raises(InvalidRequestError) as caught:
            await resolve(
                client.chat.completions.parse(
                    model=MODEL, messages=MESSAGES, response_format=response_format
                )
            )
    assert caught.value.field == field
    assert "strict" in str(caught.value)
    assert gateway.requests == []


async def test_a_type_pydantic_cannot_describe_is_refused(kind: str, gateway: MockGateway) -> None:
    class Opaque:
        pass

    class Holder(BaseModel, arbitrary_types_allowed=True):
        thing: Opaque

    async with client_of(kind, gateway) as client:
        with pytest.raises(InvalidRequestError, match="cannot make a JSON schema"):
            await resolve(
                client.chat.completions.parse(
                    model=MODEL, messages=MESSAGES, response_format=Holder
                )
            )
    assert gateway.requests == []


async def test_strict_tools_get_their_arguments_parsed(kind: str, gateway: MockGateway) -> None:
    tool = pydantic_function_tool(Weather)
    async with client_of(kind, gateway) as client:
        completion = await resolve(
            client.chat.completions.parse(
                model=MODEL, messages=MESSAGES, tools=[tool], tool_choice="required"
            )
        )
    call = (completion.choices[0].message.tool_calls or [])[0]
    assert isinstance(call.function.parsed_arguments, Weather)
    assert completion.choices[0].message.parsed is None
    sent = sent_body(gateway)["tools"][0]["function"]
    assert (sent["name"], sent["strict"], sent["description"]) == (
        "Weather",
        True,
        "Look up the weather in a city.",
    )
    assert sent["parameters"]["additionalProperties"] is False


async def test_a_strict_dict_tool_gets_decoded_arguments(kind: str, gateway: MockGateway) -> None:
    gateway.enqueue_reply(tool_calls=[{"name": "lookup", "arguments": {"q": "paris"}}])
    tool = {
        "type": "function",
        "function": {
            "name": "lookup",
            "parameters": {
                "type": "object",
                "properties": {"q": {"type": "string"}},
                "required": ["q"],
                "additionalProperties": False,
            },
            "strict": True,
        },
    }
    async with client_of(kind, gateway) as client:
        completion = await resolve(
            client.chat.completions.parse(
                model=MODEL, messages=MESSAGES, tools=[tool], response_format=Person
            )
        )
    message = completion.choices[0].message
    assert message.tool_calls[0].function.parsed_arguments == {"q": "paris"}
    assert message.parsed is None  # a reply with only tool calls has no content to parse


async def test_tool_arguments_that_do_not_validate_raise(kind: str, gateway: MockGateway) -> None:
    gateway.enqueue_reply(tool_calls=[{"name": "Weather", "arguments": {"city": "Oslo"}}])
    async with client_of(kind, gateway) as client:
        with pytest.raises(StructuredOutputError, match="arguments of 'Weather'") as caught:
            await resolve(
                client.chat.completions.parse(
                    model=MODEL, messages=MESSAGES, tools=[pydantic_function_tool(Weather)]
                )
            )
    assert caught.value.text == '{"city": "Oslo"}'


async def test_a_tool_not_marked_strict_is_refused(kind: str, gateway: MockGateway) -> None:
    tool = {"type": "function", "function": {"name": "lookup", "parameters": {}}}
    async with client_of(kind, gateway) as client:
        with pytest.raises(InvalidRequestError) as caught:
            await resolve(
                client.chat.completions.parse(
                    model=MODEL, messages=MESSAGES, tools=[tool], response_format=Person
                )
            )
    assert caught.value.field == "tools.0.function.strict"
    assert "pydantic_function_tool" in str(caught.value)
    assert gateway.requests == []


async def test_parse_takes_no_stream_keyword(kind: str, gateway: MockGateway) -> None:
    async with client_of(kind, gateway) as client:
        with pytest.raises(TypeError, match="stream"):
            await resolve(
                client.chat.completions.parse(  # type: ignore[call-overload]
                    model=MODEL, messages=MESSAGES, response_format=Person, stream=True
                )
            )
    assert gateway.requests == []


def refusing_transport() -> httpx.MockTransport:
    """A gateway whose model declines to answer."""

    def handler(request: httpx.Request) -> httpx.Response:
        reply = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": None, "refusal": "I can't."},
                    "finish_reason": "stop",
                }
            ],
        }
        return httpx.Response(200, json=reply)

    return httpx.MockTransport(handler)


async def test_a_refusal_is_exposed_and_not_parsed(kind: str) -> None:
    options: dict[str, Any] = {
        "api_key": API_KEY,
        "base_url": BASE_URL,
        "transport": refusing_transport(),
        "max_retries": 0,
    }
    if kind == "sync":
        with Client(**options) as client:
            completion = client.chat.completions.parse(
                model=MODEL, messages=MESSAGES, response_format=Person
            )
    else:
        async with AsyncClient(**options) as async_client:
            completion = await async_client.chat.completions.parse(
                model=MODEL, messages=MESSAGES, response_format=Person
            )
    message = completion.choices[0].message
    assert (message.refusal, message.parsed) == ("I can't.", None)


async def streamed(client: Client | AsyncClient, **params: Any) -> tuple[str, ChatCompletion]:
    """The text and the final completion of ``client.chat.completions.stream(**params)``."""
    if isinstance(client, Client):
        with client.chat.completions.stream(model=MODEL, messages=MESSAGES, **params) as stream:
            text = "".join(stream.text_stream)
            return text, stream.get_final_completion()
    async with client.chat.completions.stream(
        model=MODEL, messages=MESSAGES, **params
    ) as async_stream:
        text = "".join([piece async for piece in async_stream.text_stream])
        return text, await async_stream.get_final_completion()


async def test_stream_with_a_type_parses_the_final_completion(
    kind: str, gateway: MockGateway
) -> None:
    async with client_of(kind, gateway) as client:
        text, final = await streamed(client, response_format=Person)
    assert isinstance(final, ParsedChatCompletion)
    assert final.choices[0].message.parsed == Person.model_validate_json(text)
    assert sent_body(gateway)["response_format"]["json_schema"]["strict"] is True


async def test_a_stream_cut_by_the_token_limit_raises_at_the_end(
    kind: str, gateway: MockGateway
) -> None:
    async with client_of(kind, gateway) as client:
        with pytest.raises(LengthFinishReasonError):
            await streamed(client, response_format=Person, max_tokens=3)
        # the same stream without a type is a plain completion, cut short
        _, final = await streamed(client, max_tokens=3)
    assert type(final) is ChatCompletion
    assert final.choices[0].finish_reason == "length"


def test_streamed_refusals_are_added_up() -> None:
    chunks = [
        ChatCompletionChunk.model_validate(
            {"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "refusal": "I "}}]}
        ),
        ChatCompletionChunk.model_validate(
            {"id": "c", "choices": [{"index": 0, "delta": {"refusal": "can't."}}]}
        ),
    ]
    message = aigateway.accumulate(chunks).choices[0].message
    assert (message.refusal, message.content) == ("I can't.", None)


def test_pydantic_function_tool_takes_a_name_and_description() -> None:
    tool = pydantic_function_tool(Weather, name="get_weather", description="Forecast.")
    assert tool["function"]["name"] == "get_weather"
    assert tool["function"].get("description") == "Forecast."
    with pytest.raises(InvalidRequestError) as caught:
        pydantic_function_tool(Loose)
    assert caught.value.field == "tools.Loose.meta"
