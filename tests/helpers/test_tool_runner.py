"""Tools from typed functions and the loop that runs them, against the in-process mock."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import anyio
import pytest
from pydantic import BaseModel, Field

import aigateway
from aigateway import (
    AsyncClient,
    Client,
    InvalidRequestError,
    MaxRoundsExceededError,
    Tool,
    ToolRunResult,
    tool,
)
from aigateway.testing import MockGateway

from ..conftest import in_process_client

pytestmark = pytest.mark.anyio

ASK = [{"role": "user", "content": "What should I wear in Paris?"}]


@pytest.fixture(params=["sync", "async"])
async def client(
    request: pytest.FixtureRequest, gateway: MockGateway
) -> AsyncIterator[Client | AsyncClient]:
    async with in_process_client(request.param, gateway, max_retries=0) as client:
        yield client


async def run(client: Client | AsyncClient, **params: Any) -> ToolRunResult:
    """``run_tools`` or ``arun_tools``, whichever fits the client."""
    params.setdefault("model", "gpt-4o")
    params.setdefault("messages", ASK)
    if isinstance(client, Client):
        return aigateway.run_tools(client, **params)
    return await aigateway.arun_tools(client, **params)


def tool_results(request: Mapping[str, Any]) -> list[str]:
    """The contents of the trailing tool messages of a request."""
    results: list[str] = []
    for message in reversed(request["messages"]):
        if message["role"] != "tool":
            break
        results.insert(0, message["content"])
    return results


def first_calls_then_text(calls: Sequence[Mapping[str, Any]]) -> Any:
    """A reply function: ``calls`` for the question, then text quoting the tool results."""

    def reply(request: Mapping[str, Any]) -> Any:
        if request["messages"][-1]["role"] == "user":
            return list(calls)
        return "answer: " + " | ".join(tool_results(request))

    return reply


@tool
def get_weather(city: str, days: int = 1) -> str:
    """Get the weather forecast.

    Args:
        city: The city's name,
            in English.
        days: How many days ahead.

    Returns:
        The forecast, in words.
    """
    return f"{city}: sunny for {days} day(s)"


@tool(name="clothes", description="Clothes for a temperature.")
async def suggest_clothes(celsius: float) -> dict[str, Any]:
    await anyio.lowlevel.checkpoint()
    return {"wear": "t-shirt" if celsius > 20 else "coat", "celsius": celsius}


class Address(BaseModel):
    street: str
    city: str


# -- definitions ----------------------------------------------------------------------------


def test_a_function_becomes_a_tool_definition() -> None:
    assert get_weather.definition == {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the weather forecast.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {
                        "type": "string",
                        "title": "City",
                        "description": "The city's name, in English.",
                    },
                    "days": {
                        "type": "integer",
                        "title": "Days",
                        "default": 1,
                        "description": "How many days ahead.",
                    },
                },
                "required": ["city"],
                "additionalProperties": False,
            },
        },
    }
    assert get_weather("Oslo", days=2) == "Oslo: sunny for 2 day(s)"  # still a function


def test_name_and_description_can_be_given() -> None:
    assert suggest_clothes.name == "clothes"
    assert suggest_clothes.is_async
    assert suggest_clothes.function_definition["description"] == "Clothes for a temperature."
    assert tool(suggest_clothes) is suggest_clothes


def test_a_pydantic_model_is_a_tool_whose_call_validates() -> None:
    class Booking(BaseModel):
        """Book a table."""

        name: str
        guests: int = Field(description="How many people.")

    booking = tool(Booking)
    assert isinstance(booking, Tool)
    function = booking.definition["function"]
    assert function["name"] == "Booking"
    assert function["description"] == "Book a table."
    assert function["parameters"]["properties"]["guests"]["description"] == "How many people."
    assert booking(name="Ada", guests=2) == Booking(name="Ada", guests=2)


def test_an_untyped_parameter_is_refused_when_the_tool_is_defined() -> None:
    def lookup(city: str, when):  # type: ignore[no-untyped-def]
        return city

    with pytest.raises(TypeError, match=r"tool 'lookup': the parameter 'when' has no type"):
        tool(lookup)


def test_star_parameters_are_refused() -> None:
    def anything(*values: int) -> int:
        return sum(values)

    with pytest.raises(TypeError, match=r"'values' is \*args or \*\*kwargs"):
        tool(anything)


# -- the loop -------------------------------------------------------------------------------


async def test_two_rounds_with_a_sync_and_an_async_tool(
    client: Client | AsyncClient, gateway: MockGateway
) -> None:
    requests: list[Mapping[str, Any]] = []
    reply = first_calls_then_text(
        [
            {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}},
            {"name": "clothes", "arguments": {"celsius": 24}},
        ]
    )
    gateway.reply_with(lambda request: requests.append(request) or reply(request))

    result = await run(client, tools=[get_weather, suggest_clothes], temperature=0.2)

    assert result.rounds == 2
    assert result.text == ('answer: Paris: sunny for 3 day(s) | {"wear":"t-shirt","celsius":24.0}')
    assert [m["role"] for m in result.messages] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    calls = result.messages[1]["tool_calls"]
    assert [m["tool_call_id"] for m in result.messages[2:4]] == [c["id"] for c in calls]
    assert result.messages[-1]["content"] == result.text
    assert len(requests) == 2
    assert requests[0]["tools"] == [get_weather.definition, suggest_clothes.definition]
    assert requests[1]["temperature"] == 0.2  # create keywords go to every call
    assert ASK == [{"role": "user", "content": "What should I wear in Paris?"}]  # not mutated


async def test_a_plain_function_and_a_model_class_are_tools_too(
    client: Client | AsyncClient, gateway: MockGateway
) -> None:
    def distance(to: Address) -> float:
        """Kilometres to an address."""
        assert isinstance(to, Address)  # validated into the model
        return 12.5

    gateway.reply_with(
        first_calls_then_text(
            [
                {"name": "distance", "arguments": {"to": {"street": "Rue X", "city": "Paris"}}},
                {"name": "Address", "arguments": {"street": "Rue Y", "city": "Lyon"}},
            ]
        )
    )
    result = await run(client, tools=[distance, Address])
    assert result.text == 'answer: 12.5 | {"street":"Rue Y","city":"Lyon"}'


async def test_parallel_calls_run_concurrently_on_the_async_client(
    gateway: MockGateway,
) -> None:
    both_started = anyio.Event()
    started = []

    async def arrive(name: str) -> str:
        started.append(name)
        if len(started) == 2:
            both_started.set()
        await both_started.wait()  # would wait forever if the tools ran one after another
        return name

    @tool
    async def left() -> str:
        """Left."""
        return await arrive("left")

    @tool
    async def right() -> str:
        """Right."""
        return await arrive("right")

    gateway.reply_with(first_calls_then_text([{"name": "left"}, {"name": "right"}]))
    async with gateway.async_client(max_retries=0) as client:
        with anyio.fail_after(5):
            result = await aigateway.arun_tools(
                client, model="gpt-4o", messages=ASK, tools=[left, right]
            )
    assert result.text == "answer: left | right"


async def test_sync_tools_run_in_worker_threads_on_the_async_client(
    gateway: MockGateway,
) -> None:
    barrier = threading.Barrier(2, timeout=5)  # broken (an error result) if run one by one
    caller = threading.get_ident()

    def meet(name: str) -> str:
        """Wait for the other call."""
        assert threading.get_ident() != caller
        barrier.wait()
        return name

    gateway.reply_with(
        first_calls_then_text(
            [
                {"name": "meet", "arguments": {"name": "a"}},
                {"name": "meet", "arguments": {"name": "b"}},
            ]
        )
    )
    async with gateway.async_client(max_retries=0) as client:
        result = await aigateway.arun_tools(client, model="gpt-4o", messages=ASK, tools=[meet])
    assert result.text == "answer: a | b"


async def test_a_tool_that_raises_tells_the_model_and_the_loop_goes_on(
    client: Client | AsyncClient, gateway: MockGateway
) -> None:
    def explode(city: str) -> str:
        """Fails."""
        raise RuntimeError(f"no data for {city}")

    gateway.reply_with(
        first_calls_then_text([{"name": "explode", "arguments": {"city": "Atlantis"}}])
    )
    result = await run(client, tools=[explode])
    error = json.loads(result.messages[2]["content"])
    assert error == {"error": "the tool 'explode' raised RuntimeError: no data for Atlantis"}
    assert result.rounds == 2
    assert "no data for Atlantis" in result.text


async def test_bad_arguments_are_the_validation_error(
    client: Client | AsyncClient, gateway: MockGateway
) -> None:
    ran = []

    def forecast(city: str, days: int) -> str:
        """Forecast."""
        ran.append(city)
        return "ok"

    gateway.reply_with(
        first_calls_then_text(
            [
                {"name": "forecast", "arguments": {"city": "Paris", "days": "many", "x": 1}},
                {"name": "forecast", "arguments": "{not json"},
                {"name": "forecast", "arguments": {"days": 2}},
            ]
        )
    )
    result = await run(client, tools=[forecast])
    errors = [json.loads(m["content"])["error"] for m in result.messages[2:5]]
    assert errors[0].startswith("the arguments do not fit the tool 'forecast': ")
    assert "days: Input should be a valid integer" in errors[0]
    assert "(got 'many')" in errors[0]
    assert "x: Extra inputs are not permitted" in errors[0]
    assert "Invalid JSON" in errors[1]
    assert errors[2].endswith("city: missing")
    assert ran == []


async def test_an_unknown_tool_is_an_error_result(
    client: Client | AsyncClient, gateway: MockGateway
) -> None:
    gateway.reply_with(first_calls_then_text([{"name": "teleport", "arguments": {}}]))
    result = await run(client, tools=[get_weather, suggest_clothes])
    assert json.loads(result.messages[2]["content"]) == {
        "error": "there is no tool named 'teleport'; the tools are 'get_weather', 'clothes'"
    }
    assert result.rounds == 2


async def test_the_round_limit_ends_a_loop_that_never_stops(
    client: Client | AsyncClient, gateway: MockGateway
) -> None:
    calls = []
    gateway.reply_with(
        lambda request: calls.append(1) or [{"name": "get_weather", "arguments": {"city": "X"}}]
    )
    with pytest.raises(MaxRoundsExceededError, match="after 3 rounds") as caught:
        await run(client, tools=[get_weather], max_rounds=3)
    error = caught.value
    assert isinstance(error, aigateway.AIGatewayError)
    assert len(calls) == 3
    assert error.rounds == 3
    # The question, then two answered rounds; the third reply's calls were not run.
    assert [m["role"] for m in error.messages] == ["user", "assistant", "tool", "assistant", "tool"]
    assert error.completion.choices[0].message.tool_calls


async def test_legacy_functions_are_called_and_answered(
    client: Client | AsyncClient, gateway: MockGateway
) -> None:
    # The seeded fake model answers `functions` with a `function_call`, then a function
    # result with text.
    @tool
    def lucky_number(name: str) -> int:
        """A person's lucky number."""
        return len(name)

    result = await run(client, functions=[lucky_number])
    roles = [m["role"] for m in result.messages]
    assert roles == ["user", "assistant", "function", "assistant"]
    call = result.messages[1]["function_call"]
    assert call["name"] == "lucky_number"
    expected = str(len(json.loads(call["arguments"])["name"]))
    assert result.messages[2] == {"role": "function", "name": "lucky_number", "content": expected}
    assert result.rounds == 2
    assert result.text


async def test_bad_runner_arguments_are_refused_before_any_call(
    client: Client | AsyncClient, gateway: MockGateway
) -> None:
    gateway.reply_with(lambda request: pytest.fail("nothing should be sent"))
    with pytest.raises(InvalidRequestError, match="give tools or functions, not both"):
        await run(client, tools=[get_weather], functions=[get_weather])
    with pytest.raises(InvalidRequestError, match="at least one tool"):
        await run(client, tools=[])
    with pytest.raises(InvalidRequestError, match="max_rounds=0"):
        await run(client, tools=[get_weather], max_rounds=0)
    with pytest.raises(InvalidRequestError, match="stream=True"):
        await run(client, tools=[get_weather], stream=True)
    with pytest.raises(InvalidRequestError, match="tool names must differ"):
        await run(client, tools=[get_weather, tool(get_weather.function)])
    with pytest.raises(InvalidRequestError, match=r"tools\.0="):
        await run(client, tools=[get_weather.definition])


async def test_the_wrong_kind_of_client_is_a_type_error(gateway: MockGateway) -> None:
    async with gateway.async_client() as async_client:
        with pytest.raises(TypeError, match="use arun_tools"):
            aigateway.run_tools(async_client, model="gpt-4o", messages=ASK, tools=[get_weather])
    with gateway.client() as sync_client, pytest.raises(TypeError, match="use run_tools"):
        await aigateway.arun_tools(sync_client, model="gpt-4o", messages=ASK, tools=[get_weather])
