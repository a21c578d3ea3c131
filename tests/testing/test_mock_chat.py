"""POST /chat/completions: reply shape, usage, validation, limits, modes, determinism, scripts."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from aigateway.testing import MockGateway, MockRequest, ModelSpec

from ._helpers import tokens, user

Chat = Callable[..., httpx.Response]
IMAGE = {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}


def content_of(response: httpx.Response) -> str:
    assert response.status_code == 200, response.text
    content = response.json()["choices"][0]["message"]["content"]
    assert isinstance(content, str)
    return content


def test_reply_has_the_spec_shape(gateway: MockGateway, chat: Chat) -> None:
    body = chat(model="gpt-4o-mini").json()
    assert list(body) == [
        "id",
        "object",
        "created",
        "model",
        "choices",
        "usage",
        "_remaining_credits",
        "_balance_warning",
    ]
    assert re.fullmatch(r"chatcmpl-[0-9a-f]{24}", body["id"])
    assert body["object"] == "chat.completion"
    assert body["created"] == 1_700_000_000
    assert body["model"] == "gpt-4o-mini"
    (choice,) = body["choices"]
    assert set(choice) == {"index", "message", "finish_reason"}
    assert choice["index"] == 0
    assert choice["finish_reason"] == "stop"
    assert choice["message"] == {"role": "assistant", "content": choice["message"]["content"]}
    assert 20 <= tokens(choice["message"]["content"]) <= 80
    assert set(body["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}
    assert body["_balance_warning"] is False
    assert body["_remaining_credits"] == round(gateway.credits(), 6)


def test_created_follows_the_gateway_clock(gateway: MockGateway, chat: Chat) -> None:
    gateway.clock.advance(42.7)
    assert chat().json()["created"] == 1_700_000_042
    gateway.clock.set(1_800_000_000)
    assert chat().json()["created"] == 1_800_000_000


def test_completion_ids_are_unique(chat: Chat) -> None:
    ids = {chat().json()["id"] for _ in range(5)}
    assert len(ids) == 5


@pytest.mark.parametrize(
    ("messages", "prompt_tokens"),
    [
        (user("Hello, world!"), 4 + 4),
        (user(""), 0 + 4),
        (
            [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "What's 2+2?"},
            ],
            (3 + 4) + (7 + 4),
        ),
        ([{"role": "user", "content": [{"type": "text", "text": "one two"}]}], 2 + 4),
        ([{"role": "user", "content": [{"type": "text", "text": "look"}, IMAGE]}], 1 + 85 + 4),
        (
            [
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}"},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "42"},
            ],
            (1 + 4) + (1 + 2 + 4) + (1 + 4),
        ),
    ],
)
def test_usage_arithmetic(chat: Chat, messages: list[dict[str, Any]], prompt_tokens: int) -> None:
    body = chat(messages=messages).json()
    usage = body["usage"]
    assert usage["prompt_tokens"] == prompt_tokens
    assert usage["completion_tokens"] == tokens(body["choices"][0]["message"]["content"])
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


# -- validation: the spec's section 8, exactly as the client checks it ---------------------------


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"temperature": 2.5}, "temperature"),
        ({"temperature": -0.1}, "temperature"),
        ({"top_p": -0.1}, "top_p"),
        ({"top_p": 1.5}, "top_p"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_tokens": 128_001}, "max_tokens"),
        ({"max_tokens": 10.5}, "max_tokens"),
        ({"stop": ["a", "b", "c", "d", "e"]}, "stop"),
        ({"presence_penalty": 2.5}, "presence_penalty"),
        ({"frequency_penalty": -2.1}, "frequency_penalty"),
        ({"messages": []}, "messages"),
        ({"messages": [{"role": "robot", "content": "hi"}]}, "messages.0"),
        ({"messages": [{"role": "user"}]}, "messages.0.content"),
        ({"seed": 1.5}, "seed"),
        ({"stream": "maybe"}, "stream"),
        ({"response_format": {"type": "xml"}}, "response_format"),
    ],
)
def test_each_limit_violation_is_400_naming_the_field(
    gateway: MockGateway, chat: Chat, fields: dict[str, Any], param: str
) -> None:
    response = chat(**fields)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["code"] == "invalid_parameter"
    assert error["param"] == param
    assert param.split(".")[0] in error["message"]
    assert "allowed" in error["message"]
    assert gateway.charges == []


@pytest.mark.parametrize("missing", ["model", "messages"])
def test_missing_required_field_is_400(client: httpx.Client, missing: str) -> None:
    body: dict[str, Any] = {"model": "gpt-4o", "messages": user()}
    del body[missing]
    response = client.post("/chat/completions", json=body)
    assert response.status_code == 400
    assert response.json()["error"]["param"] == missing


def test_every_violation_is_listed(chat: Chat) -> None:
    error = chat(temperature=9, top_p=9, max_tokens=0).json()["error"]
    for field in ("temperature", "top_p", "max_tokens"):
        assert field in error["message"]
    assert error["param"] in {"temperature", "top_p", "max_tokens"}
    assert error["message"].startswith(error["param"] + "=")


@pytest.mark.parametrize(
    "fields",
    [
        {"temperature": 0},
        {"temperature": 2},
        {"top_p": 0},
        {"top_p": 1},
        {"max_tokens": 1},
        {"max_tokens": 128_000},
        {"stop": ["a", "b", "c", "d"]},
        {"stop": "a"},
        {"presence_penalty": -2, "frequency_penalty": 2},
        {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]},
        {"user": "end-user-1", "seed": 3},
        {"unknown_extension_field": {"kept": "out"}},
    ],
)
def test_values_at_the_limits_are_accepted(chat: Chat, fields: dict[str, Any]) -> None:
    assert chat(**fields).status_code == 200


# -- models and capabilities ---------------------------------------------------------------------


def test_unknown_model_is_404_naming_closest_ids(gateway: MockGateway, chat: Chat) -> None:
    response = chat(model="claude-3-sonet")
    assert response.status_code == 404
    error = response.json()["error"]
    assert error["code"] == "model_not_found"
    assert "claude-3-5-sonnet" in error["message"] or "claude-3-opus" in error["message"]
    assert gateway.charges == []


def test_image_part_to_a_non_vision_model_is_400(gateway: MockGateway, chat: Chat) -> None:
    messages = [{"role": "user", "content": [{"type": "text", "text": "what is it?"}, IMAGE]}]
    response = chat(model="gpt-3.5-turbo", messages=messages)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "model_not_vision_capable"
    assert error["type"] == "invalid_request_error"
    assert "gpt-3.5-turbo" in error["message"]
    assert "gpt-4o" in error["message"]
    assert "claude-3-5-sonnet" in error["message"]
    assert gateway.charges == []


def test_image_part_to_a_vision_model_is_accepted(chat: Chat) -> None:
    messages = [{"role": "user", "content": [IMAGE]}]
    response = chat(model="claude-3-haiku", messages=messages)
    assert response.status_code == 200
    assert response.json()["usage"]["prompt_tokens"] == 85 + 4


def test_tools_to_a_model_without_tools_is_400(gateway: MockGateway, chat: Chat) -> None:
    gateway.catalogue.add(ModelSpec("plain", "us", 1, tools=False))
    tools = [{"type": "function", "function": {"name": "f"}}]
    response = chat(model="plain", tools=tools)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "model_not_tool_capable"
    assert chat(model="plain").status_code == 200


def test_prompt_longer_than_the_context_window_is_400(gateway: MockGateway, chat: Chat) -> None:
    gateway.catalogue.add(ModelSpec("tiny-window", "us", 1, context_window=10))
    assert (
        chat(model="tiny-window", messages=user("one two three four five six")).status_code == 200
    )
    response = chat(model="tiny-window", messages=user("one two three four five six seven"))
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "context_length_exceeded"


# -- limits on the output ------------------------------------------------------------------------


@pytest.mark.parametrize("max_tokens", [1, 3, 7, 12])
def test_max_tokens_truncates_with_finish_reason_length(chat: Chat, max_tokens: int) -> None:
    full = content_of(chat())
    response = chat(max_tokens=max_tokens)
    body = response.json()
    cut = content_of(response)
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"]["completion_tokens"] == max_tokens == tokens(cut)
    assert full.startswith(cut)


def test_max_tokens_above_the_reply_changes_nothing(chat: Chat) -> None:
    full = chat().json()
    roomy = chat(max_tokens=1000).json()
    assert roomy["choices"] == full["choices"]
    assert roomy["usage"] == full["usage"]


def test_stop_sequence_cuts_the_reply(chat: Chat) -> None:
    full = content_of(chat())
    words = full.split(" ")
    stop = " " + words[len(words) // 2]
    index = full.index(stop)
    response = chat(stop=stop)
    assert content_of(response) == full[:index]
    assert response.json()["choices"][0]["finish_reason"] == "stop"
    assert response.json()["usage"]["completion_tokens"] == tokens(full[:index])


def test_the_earliest_of_several_stop_sequences_wins(chat: Chat) -> None:
    full = content_of(chat())
    late, early = full[-6:], full[5:9]
    assert content_of(chat(stop=[late, "never-there", early])) == full[: full.index(early)]


def test_stop_then_max_tokens(chat: Chat) -> None:
    full = content_of(chat())
    stop = full[len(full) // 2 :][:4]
    response = chat(stop=stop, max_tokens=2)
    assert response.json()["choices"][0]["finish_reason"] == "length"
    assert tokens(content_of(response)) == 2


def test_json_mode_returns_a_json_object(chat: Chat) -> None:
    for text in ("Give me JSON", "Another question", "Third"):
        response = chat(messages=user(text), response_format={"type": "json_object"})
        parsed = json.loads(content_of(response))
        assert isinstance(parsed, dict)
        assert parsed
        assert response.json()["choices"][0]["finish_reason"] == "stop"


def test_text_response_format_is_prose(chat: Chat) -> None:
    text = content_of(chat(response_format={"type": "text"}))
    assert text == content_of(chat())
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)


# -- determinism ---------------------------------------------------------------------------------


def _raw_reply(seed: int, body: dict[str, Any]) -> bytes:
    gateway = MockGateway(seed=seed)
    request = MockRequest.build(
        "POST", "/v1/chat/completions", json_body=body, api_key=gateway.api_key
    )
    response = gateway.handle(request)
    assert isinstance(response.body, bytes)
    return response.body


def test_same_seed_same_request_gives_identical_bytes() -> None:
    body = {"model": "claude-3-opus", "messages": user("Tell me a story")}
    assert _raw_reply(3, body) == _raw_reply(3, body)


def test_another_gateway_seed_gives_another_reply() -> None:
    body = {"model": "claude-3-opus", "messages": user("Tell me a story")}
    assert json.loads(_raw_reply(3, body))["choices"] != json.loads(_raw_reply(4, body))["choices"]


def test_request_seed_fixes_the_reply_and_another_seed_changes_it(chat: Chat) -> None:
    a1, a2, b = (content_of(chat(seed=s)) for s in (11, 11, 12))
    assert a1 == a2
    assert a1 != b


def test_other_inputs_change_the_reply(chat: Chat) -> None:
    base = content_of(chat())
    assert content_of(chat()) == base
    assert content_of(chat(messages=user("Something else"))) != base
    assert content_of(chat(model="gemini-1.5-pro")) != base


# -- tool results and legacy functions -----------------------------------------------------------


def test_a_tool_result_gets_a_text_answer_mentioning_it(chat: Chat) -> None:
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
    messages = [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c": 21}'},
    ]
    response = chat(messages=messages, tools=tools)
    body = response.json()
    text = content_of(response)
    assert '{"temp_c": 21}' in text
    assert "get_weather" in text
    assert "tool_calls" not in body["choices"][0]["message"]
    assert body["choices"][0]["finish_reason"] == "stop"


def test_legacy_functions_give_a_function_call(chat: Chat) -> None:
    functions = [
        {
            "name": "lookup",
            "description": "Look a word up",
            "parameters": {
                "type": "object",
                "properties": {"word": {"type": "string"}},
                "required": ["word"],
            },
        }
    ]
    body = chat(functions=functions).json()
    choice = body["choices"][0]
    assert choice["finish_reason"] == "function_call"
    assert choice["message"]["content"] is None
    call = choice["message"]["function_call"]
    assert call["name"] == "lookup"
    assert isinstance(json.loads(call["arguments"])["word"], str)
    assert body["usage"]["completion_tokens"] == tokens("lookup") + tokens(call["arguments"])


def test_legacy_function_call_none_and_named(chat: Chat) -> None:
    functions = [{"name": "a"}, {"name": "b"}]
    assert (
        "function_call"
        not in chat(functions=functions, function_call="none").json()["choices"][0]["message"]
    )
    named = chat(functions=functions, function_call={"name": "b"}).json()
    assert named["choices"][0]["message"]["function_call"] == {"name": "b", "arguments": "{}"}


# -- scripted replies ----------------------------------------------------------------------------


def test_enqueued_replies_come_first_in_first_out(gateway: MockGateway, chat: Chat) -> None:
    gateway.enqueue_reply("First scripted reply.")
    gateway.enqueue_reply("Second one.")
    first, second, third = chat(), chat(), chat()
    assert content_of(first) == "First scripted reply."
    assert first.json()["usage"]["completion_tokens"] == 4
    assert first.json()["choices"][0]["finish_reason"] == "stop"
    assert content_of(second) == "Second one."
    assert content_of(third) not in {"First scripted reply.", "Second one."}


def test_enqueued_reply_is_subject_to_stop_and_max_tokens(gateway: MockGateway, chat: Chat) -> None:
    gateway.enqueue_reply("one two three four five")
    gateway.enqueue_reply("one two three four five")
    cut = chat(max_tokens=2).json()
    assert cut["choices"][0]["message"]["content"] == "one two"
    assert cut["choices"][0]["finish_reason"] == "length"
    stopped = chat(stop=" four").json()
    assert stopped["choices"][0]["message"]["content"] == "one two three"
    assert stopped["choices"][0]["finish_reason"] == "stop"


def test_enqueued_finish_reason(gateway: MockGateway, chat: Chat) -> None:
    gateway.enqueue_reply("[filtered]", finish_reason="content_filter")
    assert chat().json()["choices"][0]["finish_reason"] == "content_filter"


def test_enqueued_tool_calls_in_short_and_wire_form(gateway: MockGateway, chat: Chat) -> None:
    gateway.enqueue_reply(
        tool_calls=[
            {"name": "search", "arguments": {"q": "cats"}},
            {
                "id": "call_fixed",
                "type": "function",
                "function": {"name": "fetch", "arguments": '{"url": "https://x"}'},
            },
        ]
    )
    body = chat().json()
    choice = body["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    first, second = choice["message"]["tool_calls"]
    assert re.fullmatch(r"call_[0-9a-f]{24}", first["id"])
    assert first["type"] == "function"
    assert first["function"] == {"name": "search", "arguments": '{"q": "cats"}'}
    assert second == {
        "id": "call_fixed",
        "type": "function",
        "function": {"name": "fetch", "arguments": '{"url": "https://x"}'},
    }
    expected = sum(
        tokens(c["function"]["name"]) + tokens(c["function"]["arguments"]) for c in (first, second)
    )
    assert body["usage"]["completion_tokens"] == expected


def test_enqueued_reply_is_kept_when_the_request_fails(gateway: MockGateway, chat: Chat) -> None:
    gateway.enqueue_reply("Scripted.")
    assert chat(temperature=5).status_code == 400
    assert chat(model="nope").status_code == 404
    gateway.set_credits(gateway.api_key, 0)
    assert chat().status_code == 402
    gateway.set_credits(gateway.api_key, 20)
    assert content_of(chat()) == "Scripted."


def test_enqueue_reply_rejects_a_call_without_name(gateway: MockGateway) -> None:
    with pytest.raises(ValueError, match="function name"):
        gateway.enqueue_reply(tool_calls=[{"arguments": "{}"}])
