"""The fake model's policy: what a request asks of its reply, read from its messages.

Agent frameworks loop: they send the conversation, run the tools the reply calls, send their
results back, and stop when a reply calls none. The policy makes every such loop end. It reads
the messages since the last ``user`` message (a new question starts the tools over):

* ``tool_choice`` ``"auto"`` (or unset): the first tool, as long as no tool result came since
  the last user message; then an answer;
* ``"required"``: the first tool not called since the last user message; once every tool was
  called, an answer (so pydantic-ai's output tool, offered after its function tools, is called
  once they were, and ends its loop);
* a named tool: that tool, up to `NAMED_TOOL_ROUNDS` times since the last user message (room
  for a library re-asking after a validation error); then an answer;
* ``"none"``: an answer.

With ``parallel_tool_calls: true``, ``auto`` and ``required`` call at once every tool they
would call one by one; the legacy ``functions`` follow the same rules with ``function_call``.

An answer is JSON on every turn, tool results or not (`Conversation.json_reply`): a value of
the ``json_schema`` response format's schema; else a value of a JSON schema written in the
messages, in a Markdown ``json`` code block when the prompt asks for one and the response
format is not JSON; else, for ``json_object``, any JSON object. Libraries that want JSON without
a ``json_schema`` response format write the schema into the prompt, each in its own words:

* instructor's ``JSON`` and ``MD_JSON`` modes, in the system message: "...provide the parsed
  objects in json that match the following json_schema:" then the schema, indented; ``MD_JSON``
  adds "Return the correct JSON response within a \\`\\`\\`json codeblock";
* LangChain's output parsers' format instructions (which ``json_mode`` users put in their
  prompt): an example schema first, then "Here is the output schema:" and the schema in a
  \\`\\`\\` fence;
* pydantic-ai's prompted output, in the instructions: "Always respond with a JSON object
  that's compatible with this schema:" then the schema on one line.

`prompt_schema` finds such a schema wherever it sits: the last JSON object in the system,
developer and user messages (the latest message first) that is a JSON schema of an object,
one whose ``properties`` is an object of schemas. A text is searched only when it contains
``"properties"``, and the work is bounded: at most `MAX_ATTEMPTS` JSON decodes per
conversation, over at most the last `MAX_TEXT` characters of a message.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from aigateway.types._json_schema import schema_problem

__all__ = [
    "MAX_ATTEMPTS",
    "MAX_TEXT",
    "NAMED_TOOL_ROUNDS",
    "Conversation",
    "JsonReply",
    "asks_for_code_block",
    "content_text",
    "is_object_schema",
    "prompt_schema",
]

NAMED_TOOL_ROUNDS = 3
"""How many times a tool named by ``tool_choice`` is called after the last user message
before the model answers instead."""
MAX_ATTEMPTS = 64
"""The most JSON objects decoded while looking for a schema in one conversation."""
MAX_TEXT = 200_000
"""The characters of a message searched (its end, where instructions usually close)."""

_MARKER = '"properties"'
_DECODER = json.JSONDecoder()
_CODE_BLOCK = re.compile(r"code ?(?:block|snippet)", re.IGNORECASE)


def content_text(content: object) -> tuple[str, int]:
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


@dataclass(frozen=True)
class JsonReply:
    """The JSON an answer is: a value of ``schema`` (every property with ``strict``), or any
    JSON object when ``schema`` is None; in a ``json`` code block when ``fenced``."""

    schema: Mapping[str, Any] | None
    strict: bool = False
    fenced: bool = False


class Conversation:
    """A request's messages as the policy reads them, worked out once for all the request's
    choices and only when a reply needs it."""

    def __init__(self, messages: Sequence[Mapping[str, Any]]) -> None:
        self.messages = messages

    @cached_property
    def turn(self) -> tuple[Counter[str], bool]:
        """How often each function was called since the last user message, and whether a
        tool result came since."""
        calls: Counter[str] = Counter()
        has_results = False
        for message in reversed(self.messages):
            role = message.get("role")
            if role == "user":
                break
            if role in ("tool", "function"):
                has_results = True
            elif role == "assistant":
                for call in message.get("tool_calls") or ():
                    function = call.get("function") if isinstance(call, Mapping) else None
                    if isinstance(function, Mapping):
                        calls[str(function.get("name"))] += 1
                legacy = message.get("function_call")
                if isinstance(legacy, Mapping):
                    calls[str(legacy.get("name"))] += 1
        return calls, has_results

    def functions_to_call(
        self, functions: Sequence[Mapping[str, Any]], choice: object, *, parallel: bool
    ) -> list[Mapping[str, Any]]:
        """The functions the reply calls under ``choice``, a ``tool_choice`` (empty: the reply
        answers)."""
        if choice == "none":
            return []
        calls, has_results = self.turn
        if isinstance(choice, Mapping):
            name = choice["function"]["name"]
            if calls[name] >= NAMED_TOOL_ROUNDS:
                return []
            return [f for f in functions if f["name"] == name][:1]
        if choice != "required" and has_results:
            return []
        waiting = [f for f in functions if f["name"] not in calls]
        return waiting if parallel else waiting[:1]

    def json_reply(self, response_format: Mapping[str, Any] | None) -> JsonReply | None:
        """The JSON an answer is under ``response_format`` and the prompt, or None for text."""
        kind = (response_format or {}).get("type")
        if kind == "json_schema":
            assert response_format is not None
            spec = response_format["json_schema"]
            return JsonReply(spec.get("schema") or None, strict=spec.get("strict") is True)
        schema, fenced = self.prompt
        if schema is not None:
            return JsonReply(schema, strict=True, fenced=fenced and kind != "json_object")
        return JsonReply(None) if kind == "json_object" else None

    @cached_property
    def prompt(self) -> tuple[dict[str, Any] | None, bool]:
        """The JSON schema written in the messages (or None), and whether the prompt asks for
        the JSON in a code block."""
        schema = prompt_schema(self._instructions())
        if schema is None:
            return None, False
        return schema, asks_for_code_block(self._instructions())

    def _instructions(self) -> Iterator[str]:
        """The text of each system, developer and user message, the latest first."""
        for message in reversed(self.messages):
            if message.get("role") in ("system", "developer", "user"):
                yield content_text(message.get("content"))[0]


def is_object_schema(value: object) -> bool:
    """True for a JSON schema of an object: ``properties`` maps names to schemas."""
    if not isinstance(value, Mapping):
        return False
    properties = value.get("properties")
    return (
        isinstance(properties, Mapping)
        and all(isinstance(item, Mapping | bool) for item in properties.values())
        and schema_problem(value) is None
    )


def prompt_schema(texts: Iterable[str]) -> dict[str, Any] | None:
    """The JSON schema the ``texts`` (the latest message first) ask the reply to follow, or
    None: the last one written in the first text that has one."""
    attempts = MAX_ATTEMPTS
    for text in texts:
        if _MARKER not in text:
            continue
        text = text[-MAX_TEXT:]
        found: dict[str, Any] | None = None
        start = text.find("{")
        while start != -1 and attempts > 0:
            attempts -= 1
            try:
                value, end = _DECODER.raw_decode(text, start)
            except (ValueError, RecursionError):
                start = text.find("{", start + 1)
                continue
            if is_object_schema(value):
                found = value
            start = text.find("{", end)
        if found is not None:
            return found
    return None


def asks_for_code_block(texts: Iterable[str]) -> bool:
    """True when a text asks for the JSON in a Markdown code block (it names \\`\\`\\`json and a
    code block or snippet, as instructor's ``MD_JSON`` mode and LangChain's structured output
    parser do)."""
    return any("```json" in text and _CODE_BLOCK.search(text) for text in texts)
