"""Streaming (spec section 6) over the sync and async transports."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from aigateway.testing import MockGateway

from ._helpers import LOOKUP_TOOL, parse_sse, user

Chat = Callable[..., httpx.Response]
TOOL = LOOKUP_TOOL


def stream(client: httpx.Client, **body: Any) -> tuple[httpx.Response, list[Any]]:
    body.setdefault("model", "gpt-4o")
    body.setdefault("messages", user())
    with client.stream("POST", "/chat/completions", json={**body, "stream": True}) as response:
        raw = b"".join(response.iter_bytes())
    return response, parse_sse(raw)


def streamed_text(chunks: list[dict[str, Any]]) -> str:
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])


def test_stream_shape_is_exactly_spec_section_6(gateway: MockGateway, client: httpx.Client) -> None:
    response, events = stream(client)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["x-request-id"].startswith("req_")
    assert events[-1] == "[DONE]"
    chunks = events[:-1]
    assert len(chunks) >= 3
    first_id = chunks[0]["id"]
    assert first_id.startswith("chatcmpl-")
    for chunk in chunks:
        assert chunk["id"] == first_id
        assert chunk["object"] == "chat.completion.chunk"
        assert chunk["created"] == 1_700_000_000
        assert chunk["model"] == "gpt-4o"
        (choice,) = chunk["choices"]
        assert set(choice) == {"index", "delta", "finish_reason"}
        assert choice["index"] == 0
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[0]["choices"][0]["delta"]["content"]
    for chunk in chunks[1:-1]:
        assert list(chunk["choices"][0]["delta"]) == ["content"]
        assert chunk["choices"][0]["finish_reason"] is None
    assert chunks[0]["choices"][0]["finish_reason"] is None
    last = chunks[-1]
    assert last["choices"][0]["delta"] == {}
    assert last["choices"][0]["finish_reason"] == "stop"
    assert last["_remaining_credits"] == round(gateway.credits(), 6)
    assert last["_balance_warning"] is False
    assert all("_remaining_credits" not in c for c in chunks[:-1])
    assert all("usage" not in c for c in chunks)


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"max_tokens": 9},
        {"seed": 5, "model": "claude-3.5-sonnet"},
        {"response_format": {"type": "json_object"}},
        {"messages": user("Another prompt entirely")},
    ],
)
def test_streamed_text_equals_the_whole_reply(client: httpx.Client, fields: dict[str, Any]) -> None:
    whole = client.post(
        "/chat/completions", json={"model": "gpt-4o", "messages": user(), **fields}
    ).json()
    _, events = stream(client, **fields)
    chunks = events[:-1]
    assert streamed_text(chunks) == whole["choices"][0]["message"]["content"]
    assert chunks[-1]["choices"][0]["finish_reason"] == whole["choices"][0]["finish_reason"]
    assert chunks[0]["model"] == whole["model"]


def test_stop_applies_to_streams_too(chat: Chat, client: httpx.Client) -> None:
    full = chat().json()["choices"][0]["message"]["content"]
    stop = full[len(full) // 2 :][:5]
    _, events = stream(client, stop=stop)
    assert streamed_text(events[:-1]) == full[: full.index(stop)]


def test_include_usage_adds_a_final_usage_chunk(client: httpx.Client) -> None:
    whole = client.post("/chat/completions", json={"model": "gpt-4o", "messages": user()}).json()
    _, events = stream(client, stream_options={"include_usage": True})
    assert events[-1] == "[DONE]"
    usage_chunk = events[-2]
    assert usage_chunk["choices"] == []
    assert usage_chunk["usage"] == whole["usage"]
    assert usage_chunk["object"] == "chat.completion.chunk"
    assert events[-3]["choices"][0]["finish_reason"] == "stop"
    _, without = stream(client, stream_options={"include_usage": False})
    assert all("usage" not in e for e in without[:-1])


def test_tool_calls_stream_as_fragments(client: httpx.Client) -> None:
    whole = client.post(
        "/chat/completions", json={"model": "gpt-4o", "messages": user(), "tools": [TOOL]}
    ).json()
    expected = whole["choices"][0]["message"]["tool_calls"][0]
    _, events = stream(client, tools=[TOOL])
    chunks = events[:-1]
    head = chunks[0]["choices"][0]["delta"]
    assert head["role"] == "assistant"
    assert head["content"] is None
    (fragment,) = head["tool_calls"]
    assert fragment["index"] == 0
    assert fragment["id"].startswith("call_")
    assert fragment["type"] == "function"
    assert fragment["function"] == {"name": "lookup", "arguments": ""}
    pieces = []
    for chunk in chunks[1:-1]:
        (part,) = chunk["choices"][0]["delta"]["tool_calls"]
        assert part["index"] == 0
        assert set(part) == {"index", "function"}
        assert set(part["function"]) == {"arguments"}
        pieces.append(part["function"]["arguments"])
    assert len(pieces) > 1
    assert "".join(pieces) == expected["function"]["arguments"]
    assert json.loads("".join(pieces)).keys() == {"term", "limit"}
    assert chunks[-1]["choices"][0] == {"index": 0, "delta": {}, "finish_reason": "tool_calls"}


def test_several_scripted_tool_calls_stream_with_their_indexes(
    gateway: MockGateway, client: httpx.Client
) -> None:
    gateway.enqueue_reply(
        "Let me check.",
        tool_calls=[{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {}}],
    )
    _, events = stream(client)
    chunks = events[:-1]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": "Let"}
    assert streamed_text(chunks) == "Let me check."
    calls: dict[int, dict[str, str]] = {}
    for chunk in chunks:
        for part in chunk["choices"][0]["delta"].get("tool_calls", []):
            call = calls.setdefault(part["index"], {"name": "", "arguments": ""})
            call["name"] += part["function"].get("name", "")
            call["arguments"] += part["function"].get("arguments", "")
    assert calls == {0: {"name": "a", "arguments": '{"x": 1}'}, 1: {"name": "b", "arguments": "{}"}}
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_legacy_function_call_streams(client: httpx.Client) -> None:
    functions = [{"name": "f", "parameters": {"type": "object", "required": ["q"]}}]
    _, events = stream(client, functions=functions)
    chunks = events[:-1]
    head = chunks[0]["choices"][0]["delta"]
    assert head == {
        "role": "assistant",
        "content": None,
        "function_call": {"name": "f", "arguments": ""},
    }
    arguments = "".join(
        c["choices"][0]["delta"]["function_call"]["arguments"] for c in chunks[1:-1]
    )
    assert json.loads(arguments).keys() == {"q"}
    assert chunks[-1]["choices"][0]["finish_reason"] == "function_call"


def test_an_empty_reply_still_streams_role_and_content(
    gateway: MockGateway, client: httpx.Client
) -> None:
    gateway.enqueue_reply("")
    _, events = stream(client)
    assert events[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert events[1]["choices"][0] == {"index": 0, "delta": {}, "finish_reason": "stop"}
    assert events[2] == "[DONE]"


def test_a_stream_is_charged_before_its_first_byte(
    gateway: MockGateway, client: httpx.Client
) -> None:
    before = gateway.credits()
    with client.stream(
        "POST", "/chat/completions", json={"model": "gpt-4o", "messages": user(), "stream": True}
    ) as response:
        assert gateway.credits() < before
        assert len(gateway.charges) == 1
        events = parse_sse(response.read())
    assert events[-2]["_remaining_credits"] == round(gateway.credits(), 6)


def test_a_stream_without_credits_is_a_402_json_error(
    gateway: MockGateway, client: httpx.Client
) -> None:
    gateway.set_credits(gateway.api_key, 0)
    with client.stream(
        "POST", "/chat/completions", json={"model": "gpt-4o", "messages": user(), "stream": True}
    ) as response:
        response.read()
    assert response.status_code == 402
    assert response.headers["content-type"] == "application/json"
    assert response.json()["error"]["code"] == "insufficient_credits"


# -- the async transport ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_async_client_gets_the_same_reply(gateway: MockGateway, chat: Chat) -> None:
    expected = chat().json()
    async with httpx.AsyncClient(
        transport=gateway.transport(),
        base_url=gateway.base_url,
        headers={"Authorization": f"Bearer {gateway.api_key}"},
    ) as http:
        response = await http.post(
            "/chat/completions", json={"model": "gpt-4o", "messages": user()}
        )
        models = await http.get("/models")
    assert response.status_code == 200
    body = response.json()
    assert body["choices"] == expected["choices"]
    assert body["usage"] == expected["usage"]
    assert len(gateway.charges) == 2
    assert len(models.json()["data"]) == 11


@pytest.mark.anyio
async def test_async_stream(gateway: MockGateway, chat: Chat) -> None:
    expected = chat().json()["choices"][0]["message"]["content"]
    async with (
        httpx.AsyncClient(
            transport=gateway.transport(),
            base_url=gateway.base_url,
            headers={"Authorization": f"Bearer {gateway.api_key}"},
        ) as http,
        http.stream(
            "POST",
            "/chat/completions",
            json={"model": "gpt-4o", "messages": user(), "stream": True},
        ) as response,
    ):
        lines = [line async for line in response.aiter_lines()]
    assert response.headers["content-type"].startswith("text/event-stream")
    data = [line[len("data: ") :] for line in lines if line]
    assert data[-1] == "[DONE]"
    chunks = [json.loads(d) for d in data[:-1]]
    assert streamed_text(chunks) == expected
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


@pytest.mark.anyio
async def test_async_errors(gateway: MockGateway) -> None:
    async with httpx.AsyncClient(transport=gateway.transport(), base_url=gateway.base_url) as http:
        response = await http.get("/models")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_api_key"
