"""litellm against the served mock, as an OpenAI-compatible provider: ``completion`` whole and
streamed, sync and async, with tools. Its model price list is read from its own package, not
the internet (``LITELLM_LOCAL_MODEL_COST_MAP``, set by this suite's conftest)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from .._integrations import import_integration
from ._loopback_only import loopback_only
from .conftest import Served

with loopback_only() as REFUSED_AT_IMPORT:
    litellm = import_integration("litellm", "compat")
pytestmark = pytest.mark.filterwarnings(
    # pydantic's notice about litellm's own TypedDicts, as it builds their validators
    "ignore:.*using the `ReadOnly` qualifier:UserWarning"
)

MODEL = "openai/gpt-4o-mini"
"""litellm's prefix for an OpenAI-compatible server at ``api_base``."""
MESSAGES = [{"role": "user", "content": "Hi"}]


def endpoint(served: Served) -> dict[str, Any]:
    return {"api_base": served.url, "api_key": served.api_key, "num_retries": 0}


@pytest.mark.usefixtures("thread_loop")
def test_completion_whole_and_streamed(served: Served) -> None:
    whole = litellm.completion(model=MODEL, messages=MESSAGES, **endpoint(served))
    assert whole.choices[0].finish_reason == "stop"
    assert whole.usage.total_tokens > 0
    stream = litellm.completion(model=MODEL, messages=MESSAGES, stream=True, **endpoint(served))
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream)
    assert text == whole.choices[0].message.content


@pytest.mark.anyio
async def test_acompletion_whole_and_streamed(served: Served) -> None:
    whole = await litellm.acompletion(model=MODEL, messages=MESSAGES, **endpoint(served))
    stream = await litellm.acompletion(
        model=MODEL, messages=MESSAGES, stream=True, **endpoint(served)
    )
    text = "".join([chunk.choices[0].delta.content or "" async for chunk in stream])
    assert text == whole.choices[0].message.content


@pytest.mark.usefixtures("thread_loop")
def test_tool_call(served: Served) -> None:
    tool = {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "enum": ["Oslo", "Kyoto"]}},
                "required": ["city"],
            },
        },
    }
    reply = litellm.completion(
        model=MODEL,
        messages=[{"role": "user", "content": "Weather in Oslo?"}],
        tools=[tool],
        **endpoint(served),
    )
    (call,) = reply.choices[0].message.tool_calls
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments)["city"] in {"Oslo", "Kyoto"}


def test_import_reached_nothing() -> None:
    """With this suite's settings, importing litellm (above) reached for nothing beyond this
    machine: by default it fetches its price list then, and falls back quietly when it cannot."""
    assert REFUSED_AT_IMPORT == []
