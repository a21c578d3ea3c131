"""The mock gateway's fake model: deterministic text, JSON, tool calls, and their stream chunks.

Nothing here is a language model. The engine makes replies that have the shape and the
bookkeeping of real ones, reproducibly:

* **Tokens.** `count_tokens` counts words and punctuation marks (``\\w+`` or one other
  non-space character each). A prompt costs the tokens of every message's text (text parts,
  tool-call names and arguments), plus `MESSAGE_OVERHEAD` per message and `IMAGE_TOKENS` per
  image part.
* **Determinism.** A reply is drawn from ``random.Random`` seeded with a SHA-256 hash of the
  gateway's seed, the request's ``seed``, the model id (catalogue spelling) and the messages, so
  the same request to a gateway with the same seed gets the same reply, and another seed
  (either one) gets another. ``stop``, ``max_tokens`` and ``stream`` are not part of the hash:
  they only cut or carry the same reply.
* **What is said.** Plain requests get 20 to 60 tokens of pseudo-sentences from a small
  vocabulary; ``response_format: {"type": "json_object"}`` gets a JSON object; ``tools`` (unless
  ``tool_choice`` is ``"none"``, or is ``"auto"`` right after a tool result) get one call of the
  named or else the first tool, with arguments generated from its JSON schema
  (`aigateway.testing._schema`); a ``tool`` result gets text that quotes it; legacy
  ``functions`` get ``message.function_call``. A test can script the next replies instead
  (`ScriptedReply`, via ``MockGateway.enqueue_reply``).
* **Limits.** The reply is cut at the first ``stop`` sequence (``finish_reason: stop``, nothing
  generated after it), then at ``max_tokens`` tokens (``finish_reason: length``; tool-call
  arguments are cut the same way, as real models do). Unset ``max_tokens`` means 4096
  (design section 2).
* **Streaming.** `stream_chunks` splits the very same completion into spec section 6 chunks, so
  a streamed reply always adds up to the non-streamed one.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._schema import sample_arguments

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "IMAGE_TOKENS",
    "MESSAGE_OVERHEAD",
    "Completion",
    "Engine",
    "FunctionCallOut",
    "ScriptedReply",
    "ToolCallOut",
    "completion_body",
    "count_prompt_tokens",
    "count_tokens",
    "has_image",
    "split_pieces",
    "stream_chunks",
    "tool_choice_problem",
    "truncate_tokens",
]

DEFAULT_MAX_TOKENS = 4096
"""``max_tokens`` when a request leaves it unset (the spec says 1000 or 4096; we use 4096)."""
MESSAGE_OVERHEAD = 4
"""Prompt tokens every message costs besides its text."""
IMAGE_TOKENS = 85
"""Prompt tokens one image part costs."""

_TOKEN = re.compile(r"\w+|[^\w\s]")
_PIECE = re.compile(r"\s*\S+")

_VOCABULARY = (
    "the", "a", "gateway", "model", "answer", "request", "reply", "token", "credit", "stream",
    "simple", "clear", "quick", "small", "steady", "useful", "careful", "bright", "result",
    "question", "message", "system", "value", "detail", "example", "pattern", "signal", "number",
    "returns", "reads", "writes", "checks", "sends", "keeps", "builds", "finds", "shows", "counts",
    "every", "each", "some", "many", "another", "this", "that", "with", "for", "from", "into",
    "about", "before", "after", "today", "again", "here", "now", "well", "also",
)  # fmt: skip


def count_tokens(text: str) -> int:
    """Tokens in ``text``: each run of word characters and each other non-space character."""
    return len(_TOKEN.findall(text))


def truncate_tokens(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut after its first ``limit`` tokens, and whether anything was cut."""
    if limit <= 0:
        return "", bool(_TOKEN.search(text))
    for index, match in enumerate(_TOKEN.finditer(text), start=1):
        if index == limit:
            end = match.end()
            return text[:end], _TOKEN.search(text, end) is not None
    return text, False


def split_pieces(text: str) -> list[str]:
    """``text`` as word-sized pieces (each with its leading spaces) that join back to it."""
    pieces = _PIECE.findall(text)
    if not pieces:
        return [text]
    joined = "".join(pieces)
    if len(joined) < len(text):
        pieces[-1] += text[len(joined) :]
    return pieces


def _content_text(content: object) -> tuple[str, int]:
    """The text of a message's content and its number of image parts."""
    if isinstance(content, str):
        return content, 0
    texts: list[str] = []
    images = 0
    if isinstance(content, list):
        for part in content:
            if not isinstance(part, Mapping):
                continue
            if part.get("type") == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif part.get("type") == "image_url":
                images += 1
    return "\n".join(texts), images


def _message_text(message: Mapping[str, Any]) -> tuple[str, int]:
    text, images = _content_text(message.get("content"))
    extra: list[str] = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(function, Mapping):
            extra += [str(function.get("name", "")), str(function.get("arguments", ""))]
    function_call = message.get("function_call")
    if isinstance(function_call, Mapping):
        extra += [str(function_call.get("name", "")), str(function_call.get("arguments", ""))]
    return "\n".join([text, *extra]) if extra else text, images


def count_prompt_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """Prompt tokens of ``messages`` (see the module docstring for the rule)."""
    total = 0
    for message in messages:
        text, images = _message_text(message)
        total += count_tokens(text) + MESSAGE_OVERHEAD + images * IMAGE_TOKENS
    return total


def has_image(messages: Sequence[Mapping[str, Any]]) -> bool:
    """True when any message has an ``image_url`` content part."""
    return any(_content_text(message.get("content"))[1] for message in messages)


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
class ScriptedReply:
    """A reply a test queued (``MockGateway.enqueue_reply``); ``tool_calls`` items are
    ``(id or None, name, arguments as a JSON string)``."""

    content: str | None = None
    tool_calls: tuple[tuple[str | None, str, str], ...] = ()
    finish_reason: str | None = None

    @classmethod
    def build(
        cls,
        content: str | None = None,
        tool_calls: Sequence[Mapping[str, Any]] | None = None,
        finish_reason: str | None = None,
    ) -> ScriptedReply:
        """Normalise the calls: wire form ``{"id"?, "type"?, "function": {"name", "arguments"}}``
        or short form ``{"name", "arguments"}``; arguments a JSON string or any JSON value."""
        calls: list[tuple[str | None, str, str]] = []
        for call in tool_calls or ():
            function = call.get("function", call)
            if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
                raise ValueError(f"a tool call needs a function name, got {call!r}")
            arguments = function.get("arguments", {})
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False)
            call_id = call.get("id")
            calls.append(
                (call_id if isinstance(call_id, str) else None, function["name"], arguments)
            )
        return cls(content, tuple(calls), finish_reason)


@dataclass(frozen=True)
class Completion:
    """One finished reply: what was said, why it ended, and the tokens it cost."""

    content: str | None
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    tool_calls: tuple[ToolCallOut, ...] = ()
    function_call: FunctionCallOut | None = None

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

    def message(self) -> dict[str, Any]:
        """The assistant ``message`` of a non-streamed reply."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [call.wire() for call in self.tool_calls]
        if self.function_call is not None:
            message["function_call"] = self.function_call.wire()
        return message


@dataclass
class _Draft:
    """A reply before ``stop`` and ``max_tokens`` are applied."""

    content: str | None
    finish_reason: str
    calls: list[tuple[str, str]] = field(default_factory=list)  # (name, arguments)
    call_ids: list[str | None] = field(default_factory=list)
    legacy: bool = False


def tool_choice_problem(request: Mapping[str, Any]) -> str | None:
    """Why ``tool_choice`` cannot be honoured (it names a tool not in ``tools``), or None."""
    choice = request.get("tool_choice")
    if not isinstance(choice, Mapping):
        return None
    name = choice.get("function", {}).get("name")
    names = [tool["function"]["name"] for tool in request.get("tools") or ()]
    if name not in names:
        known = ", ".join(repr(n) for n in names) or "none"
        return f"tool_choice names the function {name!r}, which is not in tools (tools: {known})"
    return None


class Engine:
    """The seeded fake model. `complete` turns a validated request into a `Completion`."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def rng(self, request: Mapping[str, Any], model_id: str) -> random.Random:
        """The generator for one request: seeded by gateway seed, request seed, model, messages."""
        material = json.dumps(
            [self.seed, request.get("seed"), model_id, request.get("messages")],
            sort_keys=True,
            ensure_ascii=False,
            default=str,
        )
        digest = hashlib.sha256(material.encode("utf-8")).digest()
        return random.Random(int.from_bytes(digest[:16], "big"))

    def complete(
        self,
        request: Mapping[str, Any],
        *,
        model_id: str,
        new_call_id: Callable[[], str],
        scripted: ScriptedReply | None = None,
        function_call: object = None,
    ) -> Completion:
        """The reply to ``request`` (a validated ChatCompletionRequest) from model ``model_id``.

        ``function_call`` is the request's legacy ``function_call`` field, which the validated
        request does not carry; ``scripted`` replaces the generated reply.
        """
        messages: Sequence[Mapping[str, Any]] = request["messages"]
        draft = (
            self._scripted(scripted)
            if scripted is not None
            else self._generate(request, self.rng(request, model_id), function_call)
        )
        stop = request.get("stop")
        stops = [stop] if isinstance(stop, str) else list(stop or [])
        max_tokens: int = request.get("max_tokens", DEFAULT_MAX_TOKENS)
        return _finish(draft, stops, max_tokens, count_prompt_tokens(messages), new_call_id)

    @staticmethod
    def _scripted(reply: ScriptedReply) -> _Draft:
        calls = [(name, arguments) for _, name, arguments in reply.tool_calls]
        content = reply.content if reply.content is not None or calls else ""
        finish = reply.finish_reason or ("tool_calls" if calls else "stop")
        return _Draft(content, finish, calls, [call_id for call_id, _, _ in reply.tool_calls])

    def _generate(
        self, request: Mapping[str, Any], rng: random.Random, function_call: object
    ) -> _Draft:
        messages: Sequence[Mapping[str, Any]] = request["messages"]
        last_role = messages[-1].get("role")
        tools: list[Mapping[str, Any]] = list(request.get("tools") or [])
        functions: list[Mapping[str, Any]] = list(request.get("functions") or [])
        choice = request.get("tool_choice", "auto")
        if tools and choice != "none" and (choice != "auto" or last_role != "tool"):
            wanted = choice["function"]["name"] if isinstance(choice, Mapping) else None
            function = next(
                (t["function"] for t in tools if t["function"]["name"] == wanted),
                tools[0]["function"],
            )
            arguments = sample_arguments(function.get("parameters"), rng)
            return _Draft(None, "tool_calls", [(function["name"], json.dumps(arguments))])
        if functions and not tools and function_call != "none" and last_role != "tool":
            wanted = function_call.get("name") if isinstance(function_call, Mapping) else None
            function = next((f for f in functions if f["name"] == wanted), functions[0])
            arguments = sample_arguments(function.get("parameters"), rng)
            return _Draft(
                None, "function_call", [(function["name"], json.dumps(arguments))], legacy=True
            )
        if last_role == "tool":
            return _Draft(_tool_answer(messages, rng), "stop")
        response_format = request.get("response_format") or {}
        if response_format.get("type") == "json_object":
            return _Draft(_json_text(rng), "stop")
        return _Draft(_prose(rng, 20, 60), "stop")


def _finish(
    draft: _Draft,
    stops: Sequence[str],
    max_tokens: int,
    prompt_tokens: int,
    new_call_id: Callable[[], str],
) -> Completion:
    """Apply ``stop`` then ``max_tokens`` to a draft, in generation order: text, then calls."""
    content, calls, finish = draft.content, list(draft.calls), draft.finish_reason
    if content is not None:
        cuts = [content.find(s) for s in stops if s and s in content]
        if cuts:
            content, calls, finish = content[: min(cuts)], [], "stop"
    used = 0
    if content is not None:
        content, cut = truncate_tokens(content, max_tokens)
        used = count_tokens(content)
        if cut:
            calls, finish = [], "length"
    kept: list[tuple[str, str]] = []
    for name, arguments in calls:
        room = max_tokens - used - count_tokens(name)
        if room < 0:
            finish = "length"
            break
        arguments, cut = truncate_tokens(arguments, room)
        kept.append((name, arguments))
        used += count_tokens(name) + count_tokens(arguments)
        if cut:
            finish = "length"
            break
    if content is None and not kept:
        content = ""
    if draft.legacy:
        function_call = FunctionCallOut(*kept[0]) if kept else None
        return Completion(content, finish, prompt_tokens, used, (), function_call)
    ids = draft.call_ids + [None] * len(kept)
    tool_calls = tuple(
        ToolCallOut(ids[i] or new_call_id(), name, arguments)
        for i, (name, arguments) in enumerate(kept)
    )
    return Completion(content, finish, prompt_tokens, used, tool_calls)


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_VOCABULARY) for _ in range(rng.randint(4, 11))]
    if len(words) > 6 and rng.random() < 0.4:
        words[rng.randint(2, len(words) - 3)] += ","
    return " ".join(words).capitalize() + "."


def _prose(rng: random.Random, low: int, high: int) -> str:
    target = rng.randint(low, high)
    sentences: list[str] = []
    tokens = 0
    while tokens < target:
        sentence = _sentence(rng)
        sentences.append(sentence)
        tokens += count_tokens(sentence)
    return " ".join(sentences)


def _json_text(rng: random.Random) -> str:
    obj = {
        "answer": _prose(rng, 8, 20),
        "confidence": round(rng.uniform(0.5, 0.99), 2),
        "keywords": [rng.choice(_VOCABULARY[2:28]) for _ in range(rng.randint(1, 4))],
        "complete": True,
    }
    return json.dumps(obj, ensure_ascii=False)


def _tool_answer(messages: Sequence[Mapping[str, Any]], rng: random.Random) -> str:
    last = messages[-1]
    result = " ".join(_content_text(last.get("content"))[0].split())
    name = "the tool"
    for message in reversed(messages[:-1]):
        for call in message.get("tool_calls") or []:
            if isinstance(call, Mapping) and call.get("id") == last.get("tool_call_id"):
                name = f"the {call.get('function', {}).get('name', 'tool')} tool"
                break
        else:
            continue
        break
    return f"According to {name}, the result is {result}. {_prose(rng, 8, 20)}"


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
        "choices": [
            {"index": 0, "message": completion.message(), "finish_reason": completion.finish_reason}
        ],
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
    """The ``chat.completion.chunk`` objects of a streamed reply (spec section 6).

    The first delta carries ``role`` and the first piece of content (``content: null`` and the
    first tool-call fragment for a tool call); later deltas carry content pieces, then each
    call as ``index``/``id``/``type``/``function.name`` followed by ``arguments`` pieces; the
    last chunk has an empty delta, the finish reason and the ``credits`` fields. With
    ``include_usage`` a final chunk with ``choices: []`` and ``usage`` follows (OpenAI's
    ``stream_options`` convention).
    """

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {
            "id": id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }

    deltas: list[dict[str, Any]] = []

    def add(delta: dict[str, Any]) -> None:
        if deltas:
            deltas.append(delta)
        else:  # the first delta of all carries the role and the (possibly null) content
            deltas.append({"role": "assistant", "content": None, **delta})

    if completion.content is not None:
        for piece in split_pieces(completion.content):
            add({"content": piece})
    for index, call in enumerate(completion.tool_calls):
        head = {"index": index, "id": call.id, "type": "function"}
        add({"tool_calls": [{**head, "function": {"name": call.name, "arguments": ""}}]})
        for piece in split_pieces(call.arguments) if call.arguments else []:
            add({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    if completion.function_call is not None:
        add({"function_call": {"name": completion.function_call.name, "arguments": ""}})
        for piece in split_pieces(completion.function_call.arguments):
            if piece:
                add({"function_call": {"arguments": piece}})
    if not deltas:
        add({"content": ""})
    chunks = [chunk(delta) for delta in deltas]
    chunks.append({**chunk({}, completion.finish_reason), **credits})
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
