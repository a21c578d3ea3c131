"""Structured outputs: a Python type sent as a strict JSON schema, and replies parsed into it.

``client.chat.completions.parse(response_format=Model, ...)`` (and ``stream`` given a type)
sends the type as a strict JSON schema and parses every choice into it; `pydantic_function_tool`
makes a strict tool whose calls' arguments are parsed too. The machinery sits beside the chat
resource that uses it (``aigateway.resources._structured``); this is the module to import it
from.
"""

from aigateway.resources._structured import (
    StructuredRequest,
    prepare,
    pydantic_function_tool,
    strict_schema,
)

__all__ = ["StructuredRequest", "prepare", "pydantic_function_tool", "strict_schema"]
