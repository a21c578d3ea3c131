"""The request fields OpenAI-compatible clients send today, honoured by the mock and by our
client: the ``developer`` and ``function`` roles, ``n``, ``logprobs``/``top_logprobs``,
``max_completion_tokens``, ``parallel_tool_calls`` and the ``tool_choice`` forms,
``stream_options``, ``logit_bias`` and ``seed``. Each over the in-process transport, with raw
JSON (httpx) and with our client."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from aigateway import AsyncClient, Client, Stream, accumulate
from aigateway._streams.chat_stream import aaccumulate
from aigateway.testing import MockGateway
from aigateway.types.chat import ChatCompletion

from ..conftest import resolve
from ._helpers import LOOKUP_TOOL, Chat, ok, parse_sse, tokens, user

pytestmark = pytest.mark.anyio


async def whole(stream: Any) -> ChatCompletion:
    """The completion a stream of our client adds up to."""
    if isinstance(stream, Stream):
        with stream:
            return accumulate(stream)
    async with stream:
        return await aaccumulate(stream)


def streamed(client: httpx.Client, **body: Any) -> list[dict[str, Any]]:
    """The chunks of a streamed reply (``[DONE]`` checked and dropped)."""
    body = {"model": "gpt-4o", "messages": user(), "stream": True, **body}
    response = client.post("/chat/completions", json=body)
    assert response.status_code == 200, response.text
    events = parse_sse(response.content)
    assert events[-1] == "[DONE]"
    return events[:-1]


# -- roles -------------------------------------------------------------------------------------


def test_developer_is_taken_like_system(chat: Chat) -> None:
    as_system = ok(chat(messages=[{"role": "system", "content": "Be brief."}, *user()]))
    as_developer = ok(chat(messages=[{"role": "developer", "content": "Be brief."}, *user()]))
    assert as_developer["usage"]["prompt_tokens"] == as_system["usage"]["prompt_tokens"]
    assert isinstance(as_developer["choices"][0]["message"]["content"], str)


async def test_our_client_sends_developer_and_function_messages(
    gateway: MockGateway, ours: Client | AsyncClient
) -> None:
    messages = [
        {"role": "developer", "content": "Answer from the function's result."},
        {"role": "user", "content": "Define 'gateway'."},
        {
            "role": "assistant",
            "content": None,
            "function_call": {"name": "lookup", "arguments": "{}"},
        },
        {"role": "function", "name": "lookup", "content": "a door between networks"},
    ]
    reply = await resolve(ours.chat.completions.create(model="gpt-4o", messages=messages))
    assert "a door between networks" in reply.text
    assert "lookup" in reply.text
    assert [m["role"] for m in gateway.requests[-1].json()["messages"]] == [
        "developer",
        "user",
        "assistant",
        "function",
    ]


def test_a_function_message_needs_its_name(chat: Chat) -> None:
    response = chat(messages=[*user(), {"role": "function", "content": "42"}])
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "messages.1.name"


# -- n -----------------------------------------------------------------------------------------


def test_n_gives_that_many_choices_all_billed(gateway: MockGateway, chat: Chat) -> None:
    single = ok(chat(seed=5))
    body = ok(chat(seed=5, n=3))
    choices = body["choices"]
    assert [choice["index"] for choice in choices] == [0, 1, 2]
    contents = [choice["message"]["content"] for choice in choices]
    assert len(set(contents)) == 3
    assert contents[0] == single["choices"][0]["message"]["content"]
    assert body["usage"]["completion_tokens"] == sum(tokens(text) for text in contents)
    assert body["usage"]["prompt_tokens"] == single["usage"]["prompt_tokens"]
    assert gateway.charges[-1].completion_tokens == body["usage"]["completion_tokens"]
    assert ok(chat(seed=5, n=3))["choices"] == choices


def test_n_streamed_sends_chunks_for_every_choice(client: httpx.Client, chat: Chat) -> None:
    whole = ok(chat(n=3, max_tokens=7))
    chunks = streamed(client, n=3, max_tokens=7, stream_options={"include_usage": True})
    texts: dict[int, str] = {}
    finishes: dict[int, str] = {}
    for chunk in chunks[:-1]:
        (choice,) = chunk["choices"]
        texts[choice["index"]] = texts.get(choice["index"], "") + (
            choice["delta"].get("content") or ""
        )
        if choice["finish_reason"]:
            finishes[choice["index"]] = choice["finish_reason"]
    assert texts == {c["index"]: c["message"]["content"] for c in whole["choices"]}
    assert finishes == {c["index"]: c["finish_reason"] for c in whole["choices"]}
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"] == whole["usage"]
    assert "_remaining_credits" in chunks[-2]


async def test_our_client_gets_n_choices_plain_and_streamed(ours: Client | AsyncClient) -> None:
    reply = await resolve(ours.chat.completions.create(model="gpt-4o", messages=user(), n=2))
    assert [choice.index for choice in reply.choices] == [0, 1]
    stream = await resolve(
        ours.chat.completions.create(model="gpt-4o", messages=user(), n=2, stream=True)
    )
    final = await whole(stream)
    assert [c.message.content for c in final.choices] == [c.message.content for c in reply.choices]


# -- logprobs ----------------------------------------------------------------------------------


def test_logprobs_cover_the_content_token_by_token(chat: Chat) -> None:
    body = ok(chat(logprobs=True, top_logprobs=3, seed=2))
    choice = body["choices"][0]
    entries = choice["logprobs"]["content"]
    assert "".join(entry["token"] for entry in entries) == choice["message"]["content"]
    assert len(entries) == body["usage"]["completion_tokens"]
    for entry in entries:
        assert entry["logprob"] <= 0
        assert entry["bytes"] == list(entry["token"].encode("utf-8"))
        top = entry["top_logprobs"]
        assert len(top) == 3
        assert top[0] == {k: entry[k] for k in ("token", "logprob", "bytes")}
        assert [t["logprob"] for t in top] == sorted((t["logprob"] for t in top), reverse=True)
        assert len({t["token"] for t in top}) == 3
        assert sum(2.718281828 ** t["logprob"] for t in top) <= 1.0
    assert ok(chat(logprobs=True, top_logprobs=3, seed=2))["choices"] == body["choices"]


def test_logprobs_without_top_logprobs_and_not_asked(chat: Chat) -> None:
    entries = ok(chat(logprobs=True))["choices"][0]["logprobs"]["content"]
    assert all(entry["top_logprobs"] == [] for entry in entries)
    assert "logprobs" not in ok(chat(logprobs=False))["choices"][0]
    assert "logprobs" not in ok(chat())["choices"][0]


def test_a_tool_call_has_no_content_logprobs(chat: Chat) -> None:
    choice = ok(chat(logprobs=True, tools=[LOOKUP_TOOL]))["choices"][0]
    assert choice["message"]["content"] is None
    assert choice["logprobs"] == {"content": None, "refusal": None}


def test_streamed_logprobs_add_up_to_the_whole(client: httpx.Client, chat: Chat) -> None:
    whole = ok(chat(logprobs=True, top_logprobs=2, n=2))
    by_index: dict[int, list[Any]] = {0: [], 1: []}
    for chunk in streamed(client, logprobs=True, top_logprobs=2, n=2):
        for choice in chunk["choices"]:
            if choice["delta"].get("content"):
                assert (
                    "".join(e["token"] for e in choice["logprobs"]["content"])
                    == (choice["delta"]["content"])
                )
            if "logprobs" in choice:
                by_index[choice["index"]] += choice["logprobs"]["content"]
    assert by_index == {c["index"]: c["logprobs"]["content"] for c in whole["choices"]}


async def test_our_client_types_logprobs(ours: Client | AsyncClient) -> None:
    reply = await resolve(
        ours.chat.completions.create(model="gpt-4o", messages=user(), logprobs=True, top_logprobs=1)
    )
    logprobs = reply.choices[0].logprobs
    assert logprobs is not None
    assert logprobs.content
    first = logprobs.content[0]
    assert first.logprob <= 0
    assert first.top_logprobs[0].token == first.token
    assert "".join(t.token for t in logprobs.content) == reply.text


# -- max_completion_tokens ---------------------------------------------------------------------


def test_max_completion_tokens_cuts_like_max_tokens(chat: Chat) -> None:
    old = ok(chat(max_tokens=6))
    new = ok(chat(max_completion_tokens=6))
    assert new["choices"] == old["choices"]
    assert new["choices"][0]["finish_reason"] == "length"
    assert new["usage"]["completion_tokens"] == 6


async def test_our_client_sends_max_completion_tokens(ours: Client | AsyncClient) -> None:
    reply = await resolve(
        ours.chat.completions.create(model="gpt-4o", messages=user(), max_completion_tokens=3)
    )
    assert reply.usage is not None
    assert reply.usage.completion_tokens == 3
    assert reply.choices[0].finish_reason == "length"


# -- tools -------------------------------------------------------------------------------------

SECOND_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "convert",
        "parameters": {
            "type": "object",
            "properties": {"amount": {"type": "number"}},
            "required": ["amount"],
        },
    },
}
AFTER_A_TOOL_RESULT = [
    *user("Look up 'gateway'."),
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "a door"},
]


def calls_of(body: dict[str, Any]) -> list[str]:
    return [c["function"]["name"] for c in body["choices"][0]["message"].get("tool_calls", [])]


def test_parallel_tool_calls(chat: Chat) -> None:
    tools = [LOOKUP_TOOL, SECOND_TOOL]
    assert calls_of(ok(chat(tools=tools))) == ["lookup"]
    assert calls_of(ok(chat(tools=tools, parallel_tool_calls=False))) == ["lookup"]
    both = ok(chat(tools=tools, parallel_tool_calls=True))
    assert calls_of(both) == ["lookup", "convert"]
    ids = [c["id"] for c in both["choices"][0]["message"]["tool_calls"]]
    assert len(set(ids)) == 2
    assert both["choices"][0]["finish_reason"] == "tool_calls"
    named = {"type": "function", "function": {"name": "convert"}}
    assert calls_of(ok(chat(tools=tools, parallel_tool_calls=True, tool_choice=named))) == [
        "convert"
    ]


def test_tool_choice_forms(chat: Chat) -> None:
    tools = [LOOKUP_TOOL, SECOND_TOOL]
    assert calls_of(ok(chat(tools=tools, tool_choice="none"))) == []
    assert calls_of(ok(chat(messages=AFTER_A_TOOL_RESULT, tools=tools))) == []
    assert calls_of(
        ok(chat(messages=AFTER_A_TOOL_RESULT, tools=tools, tool_choice="required"))
    ) == ["convert"]  # the tool not called yet
    named = {"type": "function", "function": {"name": "convert"}}
    assert calls_of(ok(chat(tools=tools, tool_choice=named))) == ["convert"]


async def test_our_client_with_tool_forms(ours: Client | AsyncClient) -> None:
    reply = await resolve(
        ours.chat.completions.create(
            model="gpt-4o",
            messages=user(),
            tools=[LOOKUP_TOOL, SECOND_TOOL],
            tool_choice={"type": "function", "function": {"name": "convert"}},
            parallel_tool_calls=False,
        )
    )
    (call,) = reply.choices[0].message.tool_calls or []
    assert call.function.name == "convert"
    assert isinstance(call.function.parsed_arguments()["amount"], float | int)


# -- stream_options, logit_bias, seed ----------------------------------------------------------


def test_include_usage_adds_a_final_usage_chunk(client: httpx.Client, chat: Chat) -> None:
    usage = ok(chat())["usage"]
    with_usage = streamed(client, stream_options={"include_usage": True})
    assert with_usage[-1]["choices"] == []
    assert with_usage[-1]["usage"] == usage
    assert all("usage" not in chunk for chunk in with_usage[:-1])
    without = streamed(client, stream_options={"include_usage": False})
    assert all("usage" not in chunk for chunk in without)
    assert len(without) == len(with_usage) - 1


async def test_our_client_stream_with_usage(ours: Client | AsyncClient) -> None:
    stream = await resolve(
        ours.chat.completions.create(
            model="gpt-4o",
            messages=user(),
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    final = await whole(stream)
    assert final.usage is not None
    assert final.usage.completion_tokens == tokens(final.text)


def test_logit_bias_is_accepted_and_changes_nothing(chat: Chat) -> None:
    plain = ok(chat(seed=4))
    biased = ok(chat(seed=4, logit_bias={"50256": -100, "1234": 5}))
    assert biased["choices"] == plain["choices"]


def test_same_seed_same_reply_other_seed_other_reply(chat: Chat) -> None:
    fields = {"n": 2, "logprobs": True, "top_logprobs": 2, "seed": 11}
    first, second = ok(chat(**fields)), ok(chat(**fields))
    assert first["choices"] == second["choices"]
    assert ok(chat(**{**fields, "seed": 12}))["choices"] != first["choices"]
