"""The mock serves other clients too (design section 3): the official ``openai`` SDK."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Literal

import httpx
import pytest
from pydantic import BaseModel

from aigateway.testing import MockGateway

openai = pytest.importorskip("openai")


@pytest.fixture
def sdk(gateway: MockGateway) -> Iterator[Any]:
    http = httpx.Client(transport=gateway.transport())
    client = openai.OpenAI(
        base_url=gateway.base_url, api_key=gateway.api_key, http_client=http, max_retries=0
    )
    yield client
    client.close()


def test_openai_sdk_chat_stream_and_models(gateway: MockGateway, sdk: Any) -> None:
    messages = [{"role": "user", "content": "hi"}]
    whole = sdk.chat.completions.create(model="gpt-4o", messages=messages)
    assert whole.id.startswith("chatcmpl-")
    assert whole.usage.total_tokens == whole.usage.prompt_tokens + whole.usage.completion_tokens
    chunks = list(sdk.chat.completions.create(model="gpt-4o", messages=messages, stream=True))
    assert (
        "".join(c.choices[0].delta.content or "" for c in chunks)
        == whole.choices[0].message.content
    )
    assert [m.id for m in sdk.models.list()][:2] == ["gpt-4o", "gpt-4o-mini"]
    assert sdk.models.retrieve("meta-llama/llama-3.1-70b-instruct").owned_by == "meta-llama"


def test_openai_sdk_sees_tool_calls_and_errors(gateway: MockGateway, sdk: Any) -> None:
    tool = {
        "type": "function",
        "function": {
            "name": "add",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        },
    }
    reply = sdk.chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "1+2?"}], tools=[tool]
    )
    (call,) = reply.choices[0].message.tool_calls
    assert json.loads(call.function.arguments).keys() == {"a", "b"}
    with pytest.raises(openai.NotFoundError):
        sdk.models.retrieve("gpt-5")
    with pytest.raises(openai.BadRequestError):
        sdk.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "x"}], temperature=2.5
        )
    gateway.set_credits(gateway.api_key, 0)
    with pytest.raises(openai.APIStatusError) as caught:
        sdk.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}])
    assert caught.value.status_code == 402


def test_openai_sdk_sends_todays_fields(gateway: MockGateway, sdk: Any) -> None:
    messages = [{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    reply = sdk.chat.completions.create(
        model="gpt-4o",
        messages=messages,
        n=2,
        logprobs=True,
        top_logprobs=2,
        max_completion_tokens=5,
        logit_bias={"50256": -100},
        seed=3,
    )
    assert [choice.index for choice in reply.choices] == [0, 1]
    for choice in reply.choices:
        tokens = choice.logprobs.content
        assert "".join(t.token for t in tokens) == choice.message.content
        assert all(t.logprob <= 0 and len(t.top_logprobs) == 2 for t in tokens)
    assert reply.usage.completion_tokens == 10
    tools = [
        {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
        for name in ("a", "b")
    ]
    calls = (
        sdk.chat.completions.create(
            model="gpt-4o", messages=messages, tools=tools, parallel_tool_calls=True
        )
        .choices[0]
        .message.tool_calls
    )
    assert [call.function.name for call in calls] == ["a", "b"]
    chunks = list(
        sdk.chat.completions.create(
            model="gpt-4o",
            messages=messages,
            n=2,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert {c.choices[0].index for c in chunks if c.choices} == {0, 1}
    assert chunks[-1].usage is not None


class Step(BaseModel):
    explanation: str
    output: str


class Solution(BaseModel):
    steps: list[Step]
    final_answer: str
    confidence: float
    unit: Literal["m", "s"] | None


PROBLEM = [{"role": "user", "content": "Solve 8x + 7 = -23."}]


@pytest.fixture
def served(gateway: MockGateway) -> Iterator[str]:
    with gateway.serve() as url:
        yield url


def test_openai_sdk_parse_against_the_served_mock(gateway: MockGateway, served: str) -> None:
    with openai.OpenAI(base_url=served, api_key=gateway.api_key, max_retries=0) as client:
        completions = _parse_capable(client)
        reply = completions.parse(model="gpt-4o", messages=PROBLEM, response_format=Solution)
        again = completions.parse(model="gpt-4o", messages=PROBLEM, response_format=Solution)
    parsed = reply.choices[0].message.parsed
    assert isinstance(parsed, Solution)
    assert parsed == again.choices[0].message.parsed
    sent = gateway.requests[-1].json()["response_format"]
    assert sent["type"] == "json_schema"
    assert sent["json_schema"]["strict"] is True


@pytest.mark.anyio
async def test_openai_async_sdk_parse_against_the_served_mock(
    gateway: MockGateway, served: str
) -> None:
    async with openai.AsyncOpenAI(
        base_url=served, api_key=gateway.api_key, max_retries=0
    ) as client:
        completions = _parse_capable(client)
        reply = await completions.parse(
            model="gpt-4o", messages=PROBLEM, response_format=Solution, n=2
        )
    assert [choice.index for choice in reply.choices] == [0, 1]
    assert all(isinstance(choice.message.parsed, Solution) for choice in reply.choices)


def test_openai_sdk_stream_helper_parses_too(gateway: MockGateway, sdk: Any) -> None:
    with _parse_capable(sdk).stream(
        model="gpt-4o", messages=PROBLEM, response_format=Solution
    ) as stream:
        for _ in stream:
            pass
        final = stream.get_final_completion()
    assert isinstance(final.choices[0].message.parsed, Solution)


def _parse_capable(client: Any) -> Any:
    """``client.chat.completions``, or ``client.beta.chat.completions`` on SDKs where ``parse``
    still lives there."""
    completions = client.chat.completions
    return completions if hasattr(completions, "parse") else client.beta.chat.completions
