"""What ``POST /chat/completions`` accepts (spec 2.1, 2.2 and the limits of section 8).

One set of TypedDicts serves three purposes: the keyword arguments of
``client.chat.completions.create`` (type checkers see them through ``Unpack``), the strict
check made before anything is sent (pydantic validates them), and the JSON body (pydantic
serialises the validated dict in one pass). The mock gateway checks requests with the same
definitions, so client and mock agree on every limit.

Roles: the spec lists ``system``, ``user`` and ``assistant``; ``tool`` is accepted as well,
because returning a tool's result (spec 2.1, ``tools``) needs it, as in the OpenAI convention.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, Union

import httpx
from pydantic import ConfigDict, Field, with_config
from typing_extensions import NotRequired, Required, TypedDict

from .chat import ChatCompletion, Choice, Message

__all__ = [
    "ALLOWED",
    "AssistantMessageParam",
    "ChatCompletionCreateParams",
    "ChatCompletionCreateParamsNonStreaming",
    "ChatCompletionCreateParamsStreaming",
    "ChatCompletionRequest",
    "ChatCompletionStreamParams",
    "ChatMessageInput",
    "ChatMessageParam",
    "ContentPartParam",
    "FunctionDefinitionParam",
    "ImagePartParam",
    "RequestOptions",
    "ResponseFormatParam",
    "SystemMessageParam",
    "TextPartParam",
    "ToolChoiceParam",
    "ToolMessageParam",
    "ToolParam",
    "UserMessageParam",
]

ALLOWED: Mapping[str, str] = {
    "model": "a model id string (see client.models.list())",
    "messages": "a list of at least 1 message",
    "role": "one of 'system', 'user', 'assistant', 'tool'",
    "max_tokens": "an integer from 1 to 128000",
    "temperature": "a number from 0 to 2",
    "top_p": "a number from 0 to 1",
    "presence_penalty": "a number from -2 to 2",
    "frequency_penalty": "a number from -2 to 2",
    "stop": "a string or a list of at most 4 strings",
    "stream": "true or false",
    "tool_choice": "'auto', 'none', 'required' or {'type': 'function', 'function': {'name': ...}}",
    "response_format": "{'type': 'json_object'} or {'type': 'text'}",
    "seed": "an integer",
    "content": "a string or a list of {'type': 'text'} / {'type': 'image_url'} parts",
}
"""What each field allows, in words: quoted by the errors of both client and mock."""


class TextPartParam(TypedDict):
    """A text part of a message's content."""

    type: Literal["text"]
    text: str


class ImageURLParam(TypedDict, total=False):
    url: Required[str]
    detail: Literal["auto", "low", "high"]


class ImagePartParam(TypedDict):
    """An image part (vision-capable models only): an http(s) URL or a ``data:`` URL."""

    type: Literal["image_url"]
    image_url: ImageURLParam


ContentPartParam = Annotated[TextPartParam | ImagePartParam, Field(discriminator="type")]


class FunctionCallParam(TypedDict):
    name: str
    arguments: str


class ToolCallParam(TypedDict, total=False):
    id: str
    type: Literal["function"]
    function: Required[FunctionCallParam]


@with_config(ConfigDict(extra="allow"))
class SystemMessageParam(TypedDict, total=False):
    role: Required[Literal["system"]]
    content: Required[str | list[TextPartParam]]
    name: str


@with_config(ConfigDict(extra="allow"))
class UserMessageParam(TypedDict, total=False):
    role: Required[Literal["user"]]
    content: Required[str | list[ContentPartParam]]
    name: str


@with_config(ConfigDict(extra="allow"))
class AssistantMessageParam(TypedDict, total=False):
    role: Required[Literal["assistant"]]
    content: str | list[TextPartParam] | None
    tool_calls: list[ToolCallParam]
    function_call: FunctionCallParam
    name: str


@with_config(ConfigDict(extra="allow"))
class ToolMessageParam(TypedDict, total=False):
    role: Required[Literal["tool"]]
    content: Required[str | list[TextPartParam]]
    tool_call_id: Required[str]


ChatMessageParam = Annotated[
    SystemMessageParam | UserMessageParam | AssistantMessageParam | ToolMessageParam,
    Field(discriminator="role"),
]
"""A message written as a dict."""

ChatMessageInput = Union[ChatMessageParam, Message, Choice, ChatCompletion]
"""What ``messages`` items may be: a dict, or a reply object passed back as it is."""


class FunctionDefinitionParam(TypedDict, total=False):
    name: Required[str]
    description: str
    parameters: dict[str, Any]
    """A JSON-schema object describing the arguments."""


class ToolParam(TypedDict):
    type: Literal["function"]
    function: FunctionDefinitionParam


class NamedToolChoiceFunction(TypedDict):
    name: str


class NamedToolChoiceParam(TypedDict):
    type: Literal["function"]
    function: NamedToolChoiceFunction


ToolChoiceParam = Union[Literal["auto", "none", "required"], NamedToolChoiceParam]


class ResponseFormatParam(TypedDict):
    type: Literal["json_object", "text"]


class RequestOptions(TypedDict, total=False):
    """Per-call options every method takes; they shape the HTTP request, not its body."""

    extra_headers: Mapping[str, str]
    """Headers added to (or replacing) the client's for this call."""
    extra_body: Mapping[str, object]
    """Fields merged into the JSON body as they are, unchecked (for gateway extensions)."""
    timeout: float | httpx.Timeout | None
    """This call's timeout, replacing the client's."""
    max_retries: int
    """This call's retry budget, replacing the client's."""
    idempotency_key: str
    """Sent as ``Idempotency-Key`` and reused across this call's retries, so the gateway
    performs the call at most once; calls that act on the world are retried only with one."""
    stream_first_event_timeout: float | None
    """Streams only: seconds from sending the request to the first event before the attempt
    fails with `StreamTimeoutError` (retried, since nothing reached you yet); the idle timeout
    when unset."""
    stream_idle_timeout: float | None
    """Streams only: seconds without an event (keep-alive comments do not count) before the
    stream raises `StreamTimeoutError`; 300 by default, None for no limit."""
    stream_deadline: float | None
    """Streams only: seconds the whole stream may take, from sending the request; no limit by
    default."""


class _ChatSettings(TypedDict, total=False):
    max_tokens: Annotated[int, Field(strict=True, ge=1, le=128_000)]
    temperature: Annotated[float, Field(ge=0, le=2)]
    top_p: Annotated[float, Field(ge=0, le=1)]
    stop: str | Annotated[list[str], Field(max_length=4)]
    presence_penalty: Annotated[float, Field(ge=-2, le=2)]
    frequency_penalty: Annotated[float, Field(ge=-2, le=2)]
    user: str
    tools: list[ToolParam]
    tool_choice: ToolChoiceParam
    functions: list[FunctionDefinitionParam]
    response_format: ResponseFormatParam
    seed: Annotated[int, Field(strict=True)]


class ChatCompletionRequest(_ChatSettings, total=False):
    """The JSON body of ``POST /chat/completions``, as checked by the client and the mock."""

    model: Required[str]
    messages: Required[Annotated[list[ChatMessageParam], Field(min_length=1)]]
    stream: bool


class _ChatCompletionCreateParamsBase(_ChatSettings, RequestOptions, total=False):
    model: Required[str]
    messages: Required[Sequence[ChatMessageInput]]


class ChatCompletionCreateParamsNonStreaming(_ChatCompletionCreateParamsBase, total=False):
    stream: NotRequired[Literal[False]]


class ChatCompletionCreateParamsStreaming(_ChatCompletionCreateParamsBase, total=False):
    stream: Required[Literal[True]]


class ChatCompletionStreamParams(_ChatCompletionCreateParamsBase, total=False):
    """Every keyword argument of ``client.chat.completions.stream`` and ``connect``
    (those of ``create`` but ``stream``)."""


class ChatCompletionCreateParams(_ChatCompletionCreateParamsBase, total=False):
    """Every keyword argument of ``client.chat.completions.create``."""

    stream: bool
