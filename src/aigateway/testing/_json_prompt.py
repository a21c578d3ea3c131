"""The JSON a conversation asks for in words: a JSON schema written into its messages, and
whether the reply goes in a Markdown ``json`` code block.

Libraries that want JSON without ``response_format: json_schema`` write the schema into the
prompt, each in its own words:

* instructor's ``JSON`` and ``MD_JSON`` modes, in the system message: "...provide the parsed
  objects in json that match the following json_schema:" then the schema, indented; ``MD_JSON``
  adds "Return the correct JSON response within a \\`\\`\\`json codeblock";
* LangChain's output parsers' format instructions (which ``json_mode`` users put in their
  prompt): an example schema first, then "Here is the output schema:" and the schema in a
  \\`\\`\\` fence;
* pydantic-ai's prompted output, in the instructions: "Always respond with a JSON object
  that's compatible with this schema:" then the schema on one line.

`prompt_schema` finds such a schema wherever it sits in the text: the last JSON object in the
system, developer and user messages (the latest message first) that is a JSON schema of an
object, that is one whose ``properties`` is an object of schemas. A text is searched only when
it contains ``"properties"``, and the work is bounded: at most `MAX_ATTEMPTS` JSON decodes per
conversation, over at most the last `MAX_TEXT` characters of a message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..types._json_schema import schema_problem

__all__ = ["MAX_ATTEMPTS", "MAX_TEXT", "asks_for_code_block", "is_object_schema", "prompt_schema"]

MAX_ATTEMPTS = 64
"""The most JSON objects decoded while looking for a schema in one conversation."""
MAX_TEXT = 200_000
"""The characters of a message searched (its end, where instructions usually close)."""

_MARKER = '"properties"'
_DECODER = json.JSONDecoder()
_CODE_BLOCK = re.compile(r"code ?(?:block|snippet)", re.IGNORECASE)


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
