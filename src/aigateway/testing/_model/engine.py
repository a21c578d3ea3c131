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
  (either one) gets another. With ``n`` above 1 each choice adds its index to the hash (choice
  0 is the reply ``n: 1`` gets). ``stop``, ``max_tokens`` and ``stream`` are not part of the
  hash: they only cut or carry the same reply.
* **What is said.** Plain requests get 20 to 60 tokens of pseudo-sentences from a small
  vocabulary; ``response_format`` ``json_object`` gets a JSON object and ``json_schema`` a value
  of its schema (every property present when ``strict``; `aigateway.testing._model.schema`);
  ``tools`` (unless ``tool_choice`` is ``"none"``, or is ``"auto"`` right after a tool result)
  get one call of the named or else the first tool, or one call of every tool when the request
  says ``parallel_tool_calls: true`` outright, with arguments generated from each tool's JSON
  schema; a ``tool`` or ``function`` result gets text that quotes it; legacy ``functions`` get
  ``message.function_call``. A test can script the next replies instead (`ScriptedReply`, via
  ``MockGateway.enqueue_reply``); a script fills every choice and is only cut by the limits.
* **Limits.** The reply is cut at the first ``stop`` sequence (``finish_reason: stop``, nothing
  generated after it), then at ``max_completion_tokens`` (or the older ``max_tokens``) tokens
  per choice (``finish_reason: length``; tool-call arguments are cut the same way, as real
  models do). Unset, the limit is 4096. Every choice's tokens are billed. All choices together
  get at most `MAX_REPLY_TOKENS`, so ``n`` cannot make a reply of unbounded size.
* **Log probabilities.** With ``logprobs`` each choice lists its content's tokens with fake,
  seeded log probabilities and ``top_logprobs`` alternatives (`aigateway.testing._model.logprobs`).
* **Streaming.** `stream_chunks` splits the very same completion into the API's stream chunks, so
  a streamed reply always adds up to the non-streamed one (`aigateway.testing._model.reply`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from aigateway.testing._model.logprobs import token_logprobs
from aigateway.testing._model.policy import Conversation, content_text
from aigateway.testing._model.reply import (
    ChoiceOut,
    Completion,
    FunctionCallOut,
    ToolCallOut,
    completion_body,
    split_pieces,
    stream_chunks,
)
from aigateway.testing._model.schema import sample_arguments, sample_schema

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "IMAGE_TOKENS",
    "MAX_REPLY_TOKENS",
    "MESSAGE_OVERHEAD",
    "ChoiceOut",
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
    "truncate_tokens",
]

DEFAULT_MAX_TOKENS = 4096
"""``max_tokens`` when a request leaves it unset (the API description says 1000 or 4096; the
mock uses 4096)."""
MESSAGE_OVERHEAD = 4
"""Prompt tokens every message costs besides its text."""
IMAGE_TOKENS = 85
"""Prompt tokens one image part costs."""
MAX_REPLY_TOKENS = 16_384
"""The most completion tokens one reply holds, all its choices together (past it: ``length``)."""

_TOKEN = re.compile(r"\w+|[^\w\s]")

_VOCABULARY = (
    "the", "a", "gateway", "model", "answer", "request", "reply", "token", "credit", "stream",
    "simple", "clear", "quick", "small", "steady", "useful", "careful", "bright", "result",
    "question", "message", "system", "value", "detail", "example", "pattern", "signal", "number",
    "returns", "reads", "writes", "checks", "sends", "keeps", "builds", "finds", "shows", "counts",
    "every", "each", "some", "many", "another", "this", "that", "with", "for", "from", "into",
    "about", "before", "after", "today", "again", "here", "now", "well", "also",
)  # fmt: skip


def count_tokens(text: str, limit: int | None = None) -> int:
    """Tokens in ``text``: each run of word characters and each other non-space character;
    with ``limit``, counting stops at ``limit + 1`` (memory and time stay bounded)."""
    if limit is None or len(text) <= limit:  # at most a token per character
        return len(_TOKEN.findall(text))
    return sum(1 for _ in itertools.islice(_TOKEN.finditer(text), limit + 1))


def truncate_tokens(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut after its first ``limit`` tokens, and whether anything was cut."""
    if limit <= 0:
        return "", bool(_TOKEN.search(text))
    if count_tokens(text) <= limit:  # the common case, without a match object per token
        return text, False
    for index, match in enumerate(_TOKEN.finditer(text), start=1):
        if index == limit:
            end = match.end()
            return text[:end], _TOKEN.search(text, end) is not None
    return text, False


def _message_text(message: Mapping[str, Any]) -> tuple[str, int]:
    text, images = content_text(message.get("content"))
    extra: list[str] = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(function, Mapping):
            extra += [str(function.get("name", "")), str(function.get("arguments", ""))]
    function_call = message.get("function_call")
    if isinstance(function_call, Mapping):
        extra += [str(function_call.get("name", "")), str(function_call.get("arguments", ""))]
    return "\n".join([text, *extra]) if extra else text, images


MAX_CHARS_PER_TOKEN = 32
"""With a limit, a prompt of more characters than this per token of it is over the limit
without being counted (real tokenizers average about four; a long word is one token here)."""


def count_prompt_tokens(messages: Sequence[Mapping[str, Any]], limit: int | None = None) -> int:
    """Prompt tokens of ``messages`` (see the module docstring for the rule); with ``limit``,
    counting stops once past it."""
    texts = [_message_text(message) for message in messages]
    if limit is not None and sum(len(text) for text, _ in texts) > limit * MAX_CHARS_PER_TOKEN:
        return limit + 1
    total = 0
    for text, images in texts:
        left = None if limit is None else max(0, limit - total)
        total += count_tokens(text, left) + MESSAGE_OVERHEAD + images * IMAGE_TOKENS
        if limit is not None and total > limit:
            break
    return total


def has_image(messages: Sequence[Mapping[str, Any]]) -> bool:
    """True when any message has an ``image_url`` content part."""
    return any(content_text(message.get("content"))[1] for message in messages)


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


@dataclass
class _Draft:
    """A reply before ``stop`` and ``max_tokens`` are applied."""

    content: str | None
    finish_reason: str
    calls: list[tuple[str, str]] = field(default_factory=list)  # (name, arguments)
    call_ids: list[str | None] = field(default_factory=list)
    legacy: bool = False


class Engine:
    """The seeded fake model. `complete` turns a validated request into a `Completion`."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def rng(self, request: Mapping[str, Any], model_id: str, *salt: object) -> random.Random:
        """The generator for one request: seeded by gateway seed, request seed, model, messages,
        and ``salt`` (which tells a request's choices, and their log probabilities, apart)."""
        material = json.dumps(
            [self.seed, request.get("seed"), model_id, request.get("messages"), *salt],
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
        request does not carry; ``scripted`` replaces the generated reply (in every choice).
        """
        stop = request.get("stop")
        stops = [stop] if isinstance(stop, str) else list(stop or [])
        conversation = Conversation(request["messages"])
        max_tokens: int = request.get(
            "max_completion_tokens", request.get("max_tokens", DEFAULT_MAX_TOKENS)
        )
        choices: list[ChoiceOut] = []
        room = MAX_REPLY_TOKENS
        for index in range(request.get("n", 1)):
            salt = (index,) if index else ()
            draft = (
                self._scripted(scripted)
                if scripted is not None
                else self._generate(
                    request, self.rng(request, model_id, *salt), conversation, function_call
                )
            )
            choice = _finish(draft, stops, min(max_tokens, room), new_call_id)
            room -= choice.completion_tokens
            if request.get("logprobs") and choice.content is not None:
                rng = self.rng(request, model_id, "logprobs", index)
                entries = token_logprobs(choice.content, rng, request.get("top_logprobs", 0))
                choice = replace(choice, logprobs=tuple(entries))
            elif request.get("logprobs"):
                choice = replace(choice, logprobs=())
            choices.append(choice)
        return Completion(tuple(choices), count_prompt_tokens(request["messages"]))

    @staticmethod
    def _scripted(reply: ScriptedReply) -> _Draft:
        calls = [(name, arguments) for _, name, arguments in reply.tool_calls]
        content = reply.content if reply.content is not None or calls else ""
        finish = reply.finish_reason or ("tool_calls" if calls else "stop")
        return _Draft(content, finish, calls, [call_id for call_id, _, _ in reply.tool_calls])

    def _generate(
        self,
        request: Mapping[str, Any],
        rng: random.Random,
        conversation: Conversation,
        function_call: object,
    ) -> _Draft:
        tools = request.get("tools")
        if tools:
            choice = request.get("tool_choice", "auto")
            parallel = request.get("parallel_tool_calls") is True
            functions = [tool["function"] for tool in tools]
            called = conversation.functions_to_call(functions, choice, parallel=parallel)
            if called:
                return _Draft(None, "tool_calls", [(f["name"], _arguments(f, rng)) for f in called])
        elif request.get("functions"):
            choice = _as_tool_choice(function_call)
            called = conversation.functions_to_call(request["functions"], choice, parallel=False)
            if called:
                call = (called[0]["name"], _arguments(called[0], rng))
                return _Draft(None, "function_call", [call], legacy=True)
        return _Draft(_answer(request, rng, conversation), "stop")


def _answer(request: Mapping[str, Any], rng: random.Random, conversation: Conversation) -> str:
    """The reply's text when it calls no tool: JSON as `Conversation.json_reply` says, else
    prose (quoting the tool result it follows)."""
    form = conversation.json_reply(request.get("response_format"))
    if form is not None and form.schema is not None:
        value = sample_schema(form.schema, rng, strict=form.strict)
        text = json.dumps(value, ensure_ascii=False)
        return f"```json\n{text}\n```" if form.fenced else text
    messages = request["messages"]
    answering = messages[-1].get("role") in ("tool", "function")
    quote = _tool_answer(messages, rng) if answering else None
    if form is not None:
        return _json_text(rng, quote)
    return quote if quote is not None else _prose(rng, 20, 60)


def _as_tool_choice(function_call: object) -> object:
    """The legacy ``function_call`` in the words of ``tool_choice``."""
    if isinstance(function_call, Mapping):
        return {"function": {"name": function_call.get("name")}}
    return function_call or "auto"


def _arguments(function: Mapping[str, Any], rng: random.Random) -> str:
    strict = function.get("strict") is True
    return json.dumps(sample_arguments(function.get("parameters"), rng, strict=strict))


def _finish(
    draft: _Draft, stops: Sequence[str], max_tokens: int, new_call_id: Callable[[], str]
) -> ChoiceOut:
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
        return ChoiceOut(content, finish, used, (), function_call)
    ids = draft.call_ids + [None] * len(kept)
    tool_calls = tuple(
        ToolCallOut(ids[i] or new_call_id(), name, arguments)
        for i, (name, arguments) in enumerate(kept)
    )
    return ChoiceOut(content, finish, used, tool_calls)


def _sentence(rng: random.Random) -> tuple[str, int]:
    """A pseudo-sentence and its tokens: every word of the vocabulary is one token, and so
    are the comma and the full stop (counted here, not by `count_tokens`: the hot path)."""
    words = rng.choices(_VOCABULARY, k=rng.randint(4, 11))  # one call: the hot path of replies
    tokens = len(words) + 1
    if len(words) > 6 and rng.random() < 0.4:
        words[rng.randint(2, len(words) - 3)] += ","
        tokens += 1
    return " ".join(words).capitalize() + ".", tokens


def _prose(rng: random.Random, low: int, high: int) -> str:
    target = rng.randint(low, high)
    sentences: list[str] = []
    tokens = 0
    while tokens < target:
        sentence, count = _sentence(rng)
        sentences.append(sentence)
        tokens += count
    return " ".join(sentences)


def _json_text(rng: random.Random, answer: str | None = None) -> str:
    """A JSON object for ``json_object`` without a schema: ``answer`` (else prose), a
    confidence, keywords and ``complete``."""
    obj = {
        "answer": _prose(rng, 8, 20) if answer is None else answer,
        "confidence": round(rng.uniform(0.5, 0.99), 2),
        "keywords": [rng.choice(_VOCABULARY[2:28]) for _ in range(rng.randint(1, 4))],
        "complete": True,
    }
    return json.dumps(obj, ensure_ascii=False)


def _tool_answer(messages: Sequence[Mapping[str, Any]], rng: random.Random) -> str:
    last = messages[-1]
    result = " ".join(content_text(last.get("content"))[0].split())
    name = "the tool"
    if last.get("role") == "function":
        name = f"the {last.get('name', 'function')} function"
    for message in reversed(messages[:-1]):
        for call in message.get("tool_calls") or []:
            if isinstance(call, Mapping) and call.get("id") == last.get("tool_call_id"):
                name = f"the {call.get('function', {}).get('name', 'tool')} tool"
                break
        else:
            continue
        break
    return f"According to {name}, the result is {result}. {_prose(rng, 8, 20)}"
