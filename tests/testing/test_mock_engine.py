"""The fake engine's parts: tokenizer, cutting, stream pieces, clock and scripted replies."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aigateway.testing import MockClock
from aigateway.testing._model.engine import (
    DEFAULT_MAX_TOKENS,
    Engine,
    ScriptedReply,
    count_prompt_tokens,
    count_tokens,
    split_pieces,
    truncate_tokens,
)

from ._helpers import tokens


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("", 0),
        ("   ", 0),
        ("Hello", 1),
        ("Hello, world!", 4),
        ("don't", 3),
        ('{"a": 1}', 7),
        ("naïve café", 2),
        ("3.14", 3),
    ],
)
def test_count_tokens(text: str, count: int) -> None:
    assert count_tokens(text) == count


@given(st.text())
def test_count_tokens_matches_the_documented_rule(text: str) -> None:
    assert count_tokens(text) == tokens(text)


@given(st.text(), st.integers(0, 50))
def test_truncate_tokens(text: str, limit: int) -> None:
    cut, was_cut = truncate_tokens(text, limit)
    assert text.startswith(cut)
    assert count_tokens(cut) == min(limit, count_tokens(text))
    assert was_cut == (count_tokens(text) > limit)
    if was_cut and cut:
        assert not cut[-1].isspace()


@given(st.text())
def test_split_pieces_join_back(text: str) -> None:
    pieces = split_pieces(text)
    assert "".join(pieces) == text
    assert pieces
    assert all(piece.strip() for piece in pieces[:-1]) or len(pieces) == 1


def test_split_pieces_are_word_sized() -> None:
    assert split_pieces("Hello big world. ") == ["Hello", " big", " world. "]
    assert split_pieces("") == [""]


def test_prompt_tokens_rule() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "Be nice."},
        {"role": "user", "content": [{"type": "text", "text": "a b"}, {"type": "image_url"}]},
    ]
    assert count_prompt_tokens(messages) == (3 + 4) + (2 + 85 + 4)


def test_default_max_tokens_is_4096() -> None:
    assert DEFAULT_MAX_TOKENS == 4096
    completion = Engine(0).complete(
        {"model": "m", "messages": [{"role": "user", "content": "x"}]},
        model_id="m",
        new_call_id=lambda: "call_x",
        scripted=ScriptedReply("word " * 5000),
    )
    assert completion.completion_tokens == 4096
    assert completion.choices[0].finish_reason == "length"


def test_generated_prose_is_20_to_60_tokens_typically() -> None:
    engine = Engine(0)
    lengths = [
        engine.complete(
            {"model": "m", "messages": [{"role": "user", "content": str(i)}]},
            model_id="m",
            new_call_id=lambda: "call_x",
        ).completion_tokens
        for i in range(200)
    ]
    assert min(lengths) >= 20
    assert max(lengths) <= 75
    assert len(set(lengths)) > 10


def test_scripted_reply_build_normalises_calls() -> None:
    reply = ScriptedReply.build(
        None, [{"name": "f", "arguments": {"a": [1]}}, {"function": {"name": "g"}}], None
    )
    assert reply.tool_calls == ((None, "f", '{"a": [1]}'), (None, "g", "{}"))
    with pytest.raises(ValueError, match="function name"):
        ScriptedReply.build(None, [{"function": {"arguments": "{}"}}])


def test_clock() -> None:
    clock = MockClock()
    assert clock.now() == 1_700_000_000.0
    assert clock.advance(1.5) == 1_700_000_001.5
    clock.set(5)
    assert clock.now() == 5.0
    with pytest.raises(ValueError, match="forward"):
        clock.advance(-1)
    assert "5.0" in repr(clock)


def test_a_gateway_can_share_a_clock() -> None:
    from aigateway.testing import MockGateway

    clock = MockClock(start=1_234)
    gateway = MockGateway(clock=clock)
    assert gateway.clock is clock
