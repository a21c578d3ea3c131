"""Structured outputs: a Python type sent as a strict JSON schema, and replies parsed into it.

``client.chat.completions.parse(response_format=Model, ...)`` (and ``stream`` given a type)
sends ``response_format`` as ``{"type": "json_schema", "json_schema": {"name", "schema",
"strict": true}}``, the schema made from a pydantic model, a TypedDict or a dataclass (through
``pydantic.TypeAdapter``), then validates every choice's content into that type. Strict mode,
as OpenAI defines it, wants ``additionalProperties: false`` and every property required on
every object; a type whose schema cannot be made so (a free-form ``dict[str, Any]``, an ``Any``
field) is refused with `InvalidRequestError` before anything is sent.

Tools marked ``"strict": True`` (`pydantic_function_tool` builds one from a model) get their
calls' arguments parsed too: ``tool_call.function.parsed_arguments``.

This is the chat resource's machinery for ``parse``, so it sits beside it; users import its
public names from `aigateway.helpers.structured` (or ``aigateway.pydantic_function_tool``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, NoReturn, TypeVar, cast

from pydantic import BaseModel, PydanticUserError, TypeAdapter, ValidationError

from aigateway.errors import (
    InvalidRequestError,
    LengthFinishReasonError,
    StructuredOutputError,
    Violation,
)
from aigateway.types.chat import ChatCompletion, ParsedChatCompletion
from aigateway.types.chat_params import ToolParam

__all__ = ["StructuredRequest", "prepare", "pydantic_function_tool", "strict_schema"]

T = TypeVar("T")

_STRICT_NEEDS = (
    "strict structured outputs need every object's properties named (a pydantic model, a "
    "TypedDict or a dataclass), with no free-form dict or Any"
)
_TYPED = ("type", "$ref", "anyOf", "oneOf", "allOf", "enum", "const", "not")


class _ModelTool(dict[str, Any]):
    """A tool definition that remembers the model its arguments are parsed into."""

    def __init__(self, definition: Mapping[str, Any], model: type[BaseModel]) -> None:
        super().__init__(definition)
        self.model = model


def pydantic_function_tool(
    model: type[BaseModel], *, name: str | None = None, description: str | None = None
) -> ToolParam:
    """A strict function tool whose arguments are ``model``: pass it in ``tools``, and
    ``parse`` gives each call's arguments as a ``model`` (``function.parsed_arguments``).

    The name defaults to the model's class name, the description to its docstring.
    """
    tool_name = name or model.__name__
    function: dict[str, Any] = {
        "name": tool_name,
        "parameters": strict_schema(_schema_of(model, f"tools.{tool_name}"), f"tools.{tool_name}"),
        "strict": True,
    }
    text = description if description is not None else model.__doc__
    if text:
        function["description"] = text.strip()
    return cast(ToolParam, _ModelTool({"type": "function", "function": function}, model))


def strict_schema(schema: dict[str, Any], field: str) -> dict[str, Any]:
    """``schema`` made strict in place: every object closed and all its properties required.

    Raises `InvalidRequestError` naming ``field`` and the offending property when an object
    cannot be closed (free-form keys) or a value has no type at all.
    """
    defs = schema.get("$defs", {})
    _Strictener(field, defs if isinstance(defs, dict) else {}).walk(schema, "")
    if schema.get("type") != "object":
        raise InvalidRequestError(
            [
                Violation(
                    field,
                    schema.get("type"),
                    "the schema's root must be an object; " + _STRICT_NEEDS,
                )
            ]
        )
    return schema


@dataclass
class _Strictener:
    field: str
    defs: dict[str, Any]

    def __post_init__(self) -> None:
        self.seen: set[str] = set()

    def walk(self, node: object, path: str) -> None:
        if not isinstance(node, dict):
            return
        node.pop("default", None)  # every property is required, so defaults never apply
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            if name not in self.seen and name in self.defs:
                self.seen.add(name)
                self.walk(self.defs[name], path)
        elif not any(key in node for key in _TYPED):
            self.refuse(path, node, "accepts any value")
        if node.get("type") == "object" or "properties" in node:
            properties = node.get("properties")
            extra = node.get("additionalProperties")
            if not isinstance(properties, dict) or extra not in (None, False):
                self.refuse(path, node, "is an object with free-form keys")
            node["additionalProperties"] = False
            node["required"] = list(properties)
            for key, value in properties.items():
                self.walk(value, f"{path}.{key}" if path else key)
        items = node.get("items")
        self.walk(items, f"{path}[]")
        for key in ("prefixItems", "anyOf", "oneOf", "allOf"):
            for value in node.get(key) or ():
                self.walk(value, path)

    def refuse(self, path: str, node: object, problem: str) -> NoReturn:
        where = f"{self.field}.{path}" if path else self.field
        raise InvalidRequestError([Violation(where, node, f"{problem}; {_STRICT_NEEDS}")])


def _schema_of(tp: Any, field: str) -> dict[str, Any]:
    """The JSON schema pydantic makes for ``tp``, or InvalidRequestError saying why not.

    ``tp`` is whatever the caller passed (typed Any, not object: pydantic's `TypeAdapter`
    takes a type form, which an object is not); pydantic itself says whether it is a type."""
    try:
        schema = TypeAdapter(tp).json_schema()
    except PydanticUserError as error:
        problem = str(error).splitlines()[0]
        raise InvalidRequestError(
            [Violation(field, tp, f"pydantic cannot make a JSON schema of it: {problem}")]
        ) from None
    return schema


def _schema_name(tp: object) -> str:
    name = getattr(tp, "__name__", None) or "response"
    return re.sub(r"[^A-Za-z0-9_-]", "_", str(name))[:64]


@dataclass(frozen=True)
class StructuredRequest(Generic[T]):
    """How to parse the reply to one request: the ``response_format`` type (None: content is
    left as text), and each strict tool's name with its arguments' type (None: decoded JSON)."""

    format: TypeAdapter[T] | None
    format_name: str
    tools: Mapping[str, TypeAdapter[Any] | None]

    def parse(self, completion: ChatCompletion) -> ParsedChatCompletion[T]:
        """``completion`` with every choice parsed; a choice cut by the token limit raises
        `LengthFinishReasonError`, content or arguments of the wrong shape
        `StructuredOutputError`. A refusal leaves ``parsed`` None."""
        dumped = completion.model_dump(by_alias=True)
        parsed = cast("ParsedChatCompletion[T]", ParsedChatCompletion.model_validate(dumped))
        for choice in parsed.choices:
            if choice.finish_reason == "length":
                raise LengthFinishReasonError(
                    f"choice {choice.index} was cut at the token limit (finish_reason 'length') "
                    "before its JSON was complete; allow more max_completion_tokens",
                    completion=completion,
                )
            message = choice.message
            if self.format is not None and message.content is not None and not message.refusal:
                message.parsed = _validated(
                    self.format, message.content, f"choice {choice.index}: {self.format_name}"
                )
            for call in message.tool_calls or ():
                function = call.function
                if function.name in self.tools:
                    adapter = self.tools[function.name]
                    where = f"choice {choice.index}: the arguments of {function.name!r}"
                    function.parsed_arguments = (
                        _decoded(function.arguments, where)
                        if adapter is None
                        else _validated(adapter, function.arguments, where)
                    )
        return parsed


def _validated(adapter: TypeAdapter[T], text: str, where: str) -> T:
    try:
        return adapter.validate_json(text)
    except ValidationError as error:
        errors = error.errors(include_url=False)
        raise StructuredOutputError(
            f"{where}: the reply does not validate ({errors[0]['msg']})",
            body=text.encode("utf-8"),
            errors=errors,
        ) from None


def _decoded(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as error:
        errors = [{"type": "json_invalid", "msg": str(error)}]
        raise StructuredOutputError(
            f"{where}: the reply is not JSON ({error})", body=text.encode("utf-8"), errors=errors
        ) from None


def prepare(
    params: Mapping[str, Any], method: str
) -> tuple[dict[str, Any], StructuredRequest[Any]]:
    """The arguments of a ``parse`` call as ``create`` takes them (``response_format`` as its
    strict JSON schema) and how to parse the reply. Checks the tools are strict."""
    body = dict(params)
    response_format = body.get("response_format")
    adapter: TypeAdapter[Any] | None = None
    name = ""
    if response_format is not None and not isinstance(response_format, Mapping):
        name = _schema_name(response_format)
        schema = strict_schema(_schema_of(response_format, "response_format"), "response_format")
        adapter = TypeAdapter(response_format)
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": schema, "strict": True},
        }
    return body, StructuredRequest(adapter, name, _strict_tools(body.get("tools"), method))


def _strict_tools(tools: object, method: str) -> dict[str, TypeAdapter[Any] | None]:
    """Each strict tool's name and its arguments' type; a tool not marked strict is refused,
    since its arguments could not be trusted to parse."""
    strict: dict[str, TypeAdapter[Any] | None] = {}
    if not isinstance(tools, Sequence):
        return strict  # create's own check names what is wrong
    for index, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if not isinstance(function, Mapping):
            continue
        if function.get("strict") is not True:
            raise InvalidRequestError(
                [
                    Violation(
                        f"tools.{index}.function.strict",
                        function.get("strict"),
                        f"{method} takes strict function tools only, whose arguments it can "
                        "parse: build them with aigateway.pydantic_function_tool(Model) or "
                        "set 'strict': True",
                    )
                ]
            )
        model = tool.model if isinstance(tool, _ModelTool) else None
        strict[str(function.get("name"))] = None if model is None else TypeAdapter(model)
    return strict
