"""The accumulator rebuilds a completion from chunks, whatever the provider's quirks."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from aigateway._streams.chat_stream import ChatCompletionAccumulator, accumulate
from aigateway.types import ChatCompletionChunk


def chunk(*deltas: dict[str, Any], finish: str | None = None, **extra: Any) -> ChatCompletionChunk:
    choices = [{"index": d.pop("choice", 0), "delta": d, "finish_reason": finish} for d in deltas]
    return ChatCompletionChunk.model_validate(
        {"id": "chatcmpl-9", "created": 5, "model": "m", "choices": choices, **extra}
    )


def call(index: int | None = None, **fields: Any) -> dict[str, Any]:
    function = {k: fields.pop(k) for k in ("name", "arguments") if k in fields}
    delta: dict[str, Any] = {**fields, "function": function}
    if index is not None:
        delta["index"] = index
    return {"tool_calls": [delta]}


def calls_of(chunks: list[ChatCompletionChunk]) -> list[tuple[str | None, str, str]]:
    message = accumulate(chunks).choices[0].message
    return [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []]


def test_content_role_finish_usage_and_credits() -> None:
    chunks = [
        chunk({"role": "assistant", "content": "Hel"}),
        chunk({"content": "lo"}),
        chunk({}, finish="stop", _remaining_credits=3.5, _balance_warning=True),
        ChatCompletionChunk.model_validate(
            {
                "choices": [],
                "usage": {"prompt_tokens": 2, "completion_tokens": 3, "total_tokens": 5},
            }
        ),
    ]
    completion = accumulate(chunks)
    assert completion.id == "chatcmpl-9"
    assert completion.created == 5
    assert completion.object == "chat.completion"
    assert completion.text == "Hello"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None
    assert completion.usage.total_tokens == 5
    assert completion.remaining_credits == 3.5
    assert completion.balance_warning is True


def test_tool_calls_by_index_interleaved() -> None:
    chunks = [
        chunk({"role": "assistant", "content": None, **call(0, id="a", name="f", arguments="")}),
        chunk(call(1, id="b", name="g", arguments='{"y"')),
        chunk(call(0, arguments='{"x": 1}')),
        chunk(call(1, arguments=": 2}")),
        chunk({}, finish="tool_calls"),
    ]
    assert calls_of(chunks) == [("a", "f", '{"x": 1}'), ("b", "g", '{"y": 2}')]
    assert accumulate(chunks).choices[0].message.content is None


def test_a_provider_repeating_index_zero_for_every_call() -> None:
    chunks = [
        chunk(call(0, id="a", name="f", arguments='{"x"')),
        chunk(call(0, arguments=": 1}")),
        chunk(call(0, id="b", name="g", arguments="{}")),
        chunk(call(0, id="b", arguments="")),  # the id repeated on a later fragment
    ]
    assert calls_of(chunks) == [("a", "f", '{"x": 1}'), ("b", "g", "{}")]


def test_a_provider_omitting_index() -> None:
    chunks = [
        chunk(call(id="a", name="f", arguments='{"x": ')),
        chunk(call(arguments="1}")),
        chunk(call(id="b", name="g", arguments='{"y": 2}')),
    ]
    assert calls_of(chunks) == [("a", "f", '{"x": 1}'), ("b", "g", '{"y": 2}')]


def test_a_repeated_name_is_not_doubled() -> None:
    chunks = [
        chunk(call(0, id="a", name="f", arguments="{")),
        chunk(call(0, name="f", arguments="}")),
    ]
    assert calls_of(chunks) == [("a", "f", "{}")]


def test_several_choices_and_the_legacy_function_call() -> None:
    chunks = [
        chunk({"content": "A", "choice": 0}, {"content": "B", "choice": 1}),
        chunk({"function_call": {"name": "f", "arguments": "{"}, "choice": 2}),
        chunk({"function_call": {"arguments": "}"}, "choice": 2}, finish="function_call"),
    ]
    completion = accumulate(chunks)
    assert [c.index for c in completion.choices] == [0, 1, 2]
    assert [c.message.content for c in completion.choices[:2]] == ["A", "B"]
    function = completion.choices[2].message.function_call
    assert function is not None
    assert (function.name, function.arguments) == ("f", "{}")


def test_add_returns_the_text_delta_of_the_first_choice() -> None:
    accumulator = ChatCompletionAccumulator()
    assert accumulator.add(chunk({"content": "x", "choice": 1})) == ""
    assert accumulator.add(chunk({"content": "hi"})) == "hi"
    assert accumulator.received == 2
    assert accumulator.completion().choices[0].message.content == "hi"


def test_no_chunks_give_an_empty_completion() -> None:
    completion = accumulate([])
    assert completion.choices == []
    assert completion.text == ""


@given(st.lists(st.text(max_size=5), max_size=20), st.lists(st.text(max_size=5), max_size=20))
def test_any_split_of_content_and_arguments_adds_up(pieces: list[str], args: list[str]) -> None:
    chunks = [chunk({"content": piece}) for piece in pieces]
    chunks += [chunk(call(0, id="c", name="f", arguments=""))]
    chunks += [chunk(call(0, arguments=arg)) for arg in args]
    completion = accumulate(chunks)
    assert completion.choices[0].message.content == ("".join(pieces) if pieces else None)
    assert calls_of(chunks) == [("c", "f", "".join(args))]


def test_streamed_logprobs_and_every_choice_of_n_add_up() -> None:
    from aigateway.testing import MockGateway

    gateway = MockGateway(seed=2)
    params: dict[str, Any] = {
        "model": "gpt-4o",
        "messages": [{"role": "user", "content": "hi"}],
        "n": 2,
        "logprobs": True,
        "top_logprobs": 2,
    }
    with gateway.client() as client:
        whole = client.chat.completions.create(**params)
        with client.chat.completions.stream(**params) as stream:
            rebuilt = stream.get_final_completion()
    assert [c.index for c in rebuilt.choices] == [0, 1]
    for plain, streamed in zip(whole.choices, rebuilt.choices, strict=True):
        assert streamed.message.content == plain.message.content
        assert streamed.logprobs is not None
        assert plain.logprobs is not None
        tokens = [t.token for t in streamed.logprobs.content or []]
        assert "".join(tokens) == streamed.message.content
        assert tokens == [t.token for t in plain.logprobs.content or []]
