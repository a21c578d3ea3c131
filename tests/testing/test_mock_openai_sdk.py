"""The mock serves other clients too (design section 3): the official ``openai`` SDK."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

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
