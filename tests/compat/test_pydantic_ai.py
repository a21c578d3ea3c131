"""pydantic-ai against the served mock: an agent with a tool and a structured output, in each
output mode (the default output tool, native, prompted), ends within a few requests with an
output that validates, through ``run_sync`` and ``run``; text output and its stream too."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel, Field

from .._integrations import import_integration
from .conftest import Served

pydantic_ai = import_integration("pydantic_ai", "compat")
import_integration("openai", "compat")
httpx2 = import_integration("httpx2", "compat")  # what pydantic-ai's OpenAI provider takes
from pydantic_ai.models.openai import OpenAIChatModel  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402
from pydantic_ai.usage import UsageLimits  # noqa: E402

LIMITS = UsageLimits(request_limit=4)
"""A tool round and the answer take 2 or 3 requests; a loop that never ends fails fast."""


class Forecast(BaseModel):
    city: str
    celsius: float = Field(ge=-60, le=60)
    summary: str = Field(max_length=200)


OUTPUTS = {
    "tool": lambda: Forecast,  # the default: an output tool the model must call
    "native": lambda: pydantic_ai.NativeOutput(Forecast),  # response_format json_schema
    "prompted": lambda: pydantic_ai.PromptedOutput(Forecast),  # the schema in the prompt
}


def make_agent(served: Served, http: httpx2.AsyncClient, output_type: Any, calls: list[str]) -> Any:
    """An agent on the mock with one tool, which records the cities it is asked about."""
    provider = OpenAIProvider(base_url=served.url, api_key=served.api_key, http_client=http)
    agent = pydantic_ai.Agent(
        OpenAIChatModel("gpt-4o-mini", provider=provider), output_type=output_type
    )

    @agent.tool_plain
    def temperature(city: str) -> float:
        """The temperature in a city, in degrees Celsius."""
        calls.append(city)
        return 12.5

    return agent


REQUEST_SHAPE = {
    "tool": lambda body: body["tool_choice"] == "required",
    "native": lambda body: body["response_format"]["type"] == "json_schema",
    "prompted": lambda body: '"celsius"' in body["messages"][0]["content"],
}
"""How each mode asks for its output: the mock's path under test."""


def check_run(served: Served, mode: str, output: Any, calls: list[str]) -> None:
    assert isinstance(output, Forecast)
    assert len(calls) == 1
    bodies = served.chat_bodies()
    assert len(bodies) == 2  # one request to call the tool, one to answer
    assert all(REQUEST_SHAPE[mode](body) for body in bodies), bodies


@pytest.fixture
def loop_http(thread_loop: asyncio.AbstractEventLoop) -> Iterator[httpx2.AsyncClient]:
    """For ``run_sync`` (which runs on the thread's event loop): an HTTP client closed on it."""
    http = httpx2.AsyncClient()
    yield http
    thread_loop.run_until_complete(http.aclose())


@pytest.mark.parametrize("mode", OUTPUTS)
def test_run_sync_with_a_tool_ends_with_valid_output(
    served: Served, loop_http: httpx2.AsyncClient, mode: str
) -> None:
    calls: list[str] = []
    agent = make_agent(served, loop_http, OUTPUTS[mode](), calls)
    result = agent.run_sync("Forecast for Oslo?", usage_limits=LIMITS)
    check_run(served, mode, result.output, calls)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", OUTPUTS)
async def test_run_with_a_tool_ends_with_valid_output(served: Served, mode: str) -> None:
    calls: list[str] = []
    async with httpx2.AsyncClient() as http:
        agent = make_agent(served, http, OUTPUTS[mode](), calls)
        result = await agent.run("Forecast for Oslo?", usage_limits=LIMITS)
    check_run(served, mode, result.output, calls)


@pytest.mark.anyio
async def test_text_output_and_its_stream(served: Served) -> None:
    calls: list[str] = []
    async with httpx2.AsyncClient() as http:
        agent = make_agent(served, http, str, calls)
        result = await agent.run("Forecast for Oslo?", usage_limits=LIMITS)
        async with agent.run_stream("Hi", usage_limits=LIMITS) as stream:
            pieces = [piece async for piece in stream.stream_text(delta=True, debounce_by=None)]
    assert "12.5" in result.output  # the answer quotes the tool's result
    assert len(calls) == 2  # once in each run, before its answer
    assert len(pieces) > 1
