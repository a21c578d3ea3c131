"""A finished reply of the fake model, and its two wire forms: one JSON object, or stream chunks.

`stream_chunks` splits the very same `Completion` that `completion_body` writes whole, so a
streamed reply always adds up to the non-streamed one, choice by choice, log probabilities
included.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aigateway.testing._model.logprobs import logprob_tokens

__all__ = [
    "ChoiceOut",
    "Completion",
    "FunctionCallOut",
    "ToolCallOut",
    "completion_body",
    "split_pieces",
    "stream_chunks",
]

_PIECE = re.compile(r"\s*\S+")


def split_pieces(text: str) -> list[str]:
    """``text`` as word-sized pieces (each with its leading spaces) that join back to it."""
    pieces = _PIECE.findall(text)
    if not pieces:
        return [text]
    joined = "".join(pieces)
    if len(joined) < len(text):
        pieces[-1] += text[len(joined) :]
    return pieces


@dataclass(frozen=True)
class ToolCallOut:
    """A tool call in a reply."""

    id: str
    name: str
    arguments: str

    def wire(self) -> dict[str, Any]:
        """The call as it appears in ``message.tool_calls``."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(frozen=True)
class FunctionCallOut:
    """A legacy ``message.function_call`` in a reply."""

    name: str
    arguments: str

    def wire(self) -> dict[str, Any]:
        return {"name": self.name, "arguments": self.arguments}


@dataclass(frozen=True)
class ChoiceOut:
    """One alternative of a reply: what was said, why it ended, and the tokens it cost.

    ``logprobs`` holds the ``logprobs.content`` entries of ``content`` when the request asked
    for them, else None.
    """

    content: str | None
    finish_reason: str
    completion_tokens: int
    tool_calls: tuple[ToolCallOut, ...] = ()
    function_call: FunctionCallOut | None = None
    logprobs: tuple[dict[str, Any], ...] | None = None

    def message(self) -> dict[str, Any]:
        """The assistant ``message`` of a non-streamed reply."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [call.wire() for call in self.tool_calls]
        if self.function_call is not None:
            message["function_call"] = self.function_call.wire()
        return message

    def wire(self, index: int) -> dict[str, Any]:
        """The choice as it appears in ``choices``."""
        choice = {"index": index, "message": self.message(), "finish_reason": self.finish_reason}
        if self.logprobs is not None:
            content = None if self.content is None else list(self.logprobs)
            choice["logprobs"] = _logprobs_object(content)
        return choice


@dataclass(frozen=True)
class Completion:
    """A whole reply: its choices (``n`` of them) and the prompt they answer."""

    choices: tuple[ChoiceOut, ...]
    prompt_tokens: int

    @property
    def completion_tokens(self) -> int:
        """The tokens of every choice: all are billed."""
        return sum(choice.completion_tokens for choice in self.choices)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def usage(self) -> dict[str, int]:
        """The ``usage`` object."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
        }


def completion_body(
    completion: Completion,
    *,
    id: str,
    created: int,
    model: str,
    credits: Mapping[str, Any],
) -> dict[str, Any]:
    """The ``chat.completion`` object (spec 2.3), ``credits`` fields appended."""
    return {
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [choice.wire(index) for index, choice in enumerate(completion.choices)],
        "usage": completion.usage(),
        **credits,
    }


def stream_chunks(
    completion: Completion,
    *,
    id: str,
    created: int,
    model: str,
    credits: Mapping[str, Any],
    include_usage: bool = False,
) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects of a streamed reply.

    Each chunk carries one choice; with several choices their chunks take turns. A choice's
    first delta carries ``role`` and the first piece of content (``content: null`` and the
    first tool-call fragment for a tool call); later deltas carry content pieces (with the
    ``logprobs`` of their tokens when asked for), then each call as
    ``index``/``id``/``type``/``function.name`` followed by ``arguments`` pieces. Then each
    choice ends with an empty delta and its finish reason; the very last chunk also carries
    the ``credits`` fields. With ``include_usage`` a final chunk with ``choices: []`` and
    ``usage`` follows (OpenAI's ``stream_options`` convention).
    """

    def chunk(choice: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [choice],
        }

    chunks: list[dict[str, Any]] = []
    deltas = [_deltas(choice) for choice in completion.choices]
    for turn in itertools.zip_longest(*deltas):
        for index, item in enumerate(turn):
            if item is not None:
                delta, logprobs = item
                choice = {"index": index, "delta": delta, "finish_reason": None}
                if logprobs is not None:
                    choice["logprobs"] = _logprobs_object(logprobs)
                chunks.append(chunk(choice))
    for index, out in enumerate(completion.choices):
        chunks.append(chunk({"index": index, "delta": {}, "finish_reason": out.finish_reason}))
    chunks[-1].update(credits)
    if include_usage:
        chunks.append(
            {
                "id": id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [],
                "usage": completion.usage(),
            }
        )
    return chunks


_Delta = tuple[dict[str, Any], "list[dict[str, Any]] | None"]


def _deltas(choice: ChoiceOut) -> list[_Delta]:
    """One choice's deltas, each with the log probabilities of the content it adds (or None)."""
    deltas: list[_Delta] = []
    entries = list(choice.logprobs) if choice.logprobs is not None else None

    def add(delta: dict[str, Any], logprobs: list[dict[str, Any]] | None = None) -> None:
        if not deltas:  # the first delta carries the role and the (possibly null) content
            delta = {"role": "assistant", "content": None, **delta}
        deltas.append((delta, logprobs))

    if choice.content is not None:
        for piece in split_pieces(choice.content):
            logprobs = None
            if entries is not None:
                count = len(logprob_tokens(piece))
                logprobs, entries = entries[:count], entries[count:]
            add({"content": piece}, logprobs)
    for index, call in enumerate(choice.tool_calls):
        head = {"index": index, "id": call.id, "type": "function"}
        add({"tool_calls": [{**head, "function": {"name": call.name, "arguments": ""}}]})
        for piece in split_pieces(call.arguments) if call.arguments else []:
            add({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    if choice.function_call is not None:
        add({"function_call": {"name": choice.function_call.name, "arguments": ""}})
        for piece in split_pieces(choice.function_call.arguments):
            if piece:
                add({"function_call": {"arguments": piece}})
    if not deltas:
        add({"content": ""})
    return deltas


def _logprobs_object(content: list[dict[str, Any]] | None) -> dict[str, Any]:
    return {"content": content, "refusal": None}
