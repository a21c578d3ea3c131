"""Chat completion replies and stream chunks, parsed leniently.

``finish_reason`` is typed as a string: the known values are ``stop``, ``length``,
``content_filter`` and ``tool_calls``, and an unknown value is kept, not rejected. Choices carry
``logprobs`` when the request asked for them (``logprobs=True``).
"""

# Annotations here are evaluated at import, not postponed (no `from __future__ import
# annotations`): postponed, pydantic compiled and evaluated every one of them as a string
# when it made the models.
import json
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, Field

from aigateway._display import card, field, guarded, plain, table
from aigateway.errors import InvalidRequestError, Violation
from aigateway.types._base import CreditsMixin, GatewayModel, ReplyMixin

__all__ = [
    "ChatCompletion",
    "ChatCompletionChunk",
    "Choice",
    "ChoiceLogprobs",
    "ChunkChoice",
    "ChunkDelta",
    "FinishReason",
    "FunctionCall",
    "Message",
    "ParsedChatCompletion",
    "ParsedChoice",
    "ParsedFunction",
    "ParsedMessage",
    "ParsedToolCall",
    "TokenLogprob",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallFunctionDelta",
    "TopLogprob",
    "Usage",
    "message_param",
]

FinishReason = Literal["stop", "length", "content_filter", "tool_calls"]
"""The finish reasons the API names; replies may carry others, kept as plain strings."""


class FunctionCall(GatewayModel):
    """The function a model wants called: its name and its arguments as a JSON string."""

    name: str
    arguments: str = ""

    def parsed_arguments(self) -> Any:
        """The arguments decoded from JSON (raises ``json.JSONDecodeError`` when not JSON)."""
        return json.loads(self.arguments) if self.arguments else {}


class ToolCall(GatewayModel):
    """One tool call in an assistant message."""

    id: str | None = None
    type: Literal["function"] | str = "function"
    function: FunctionCall


class Message(GatewayModel):
    """A chat message in a reply. It can be passed back in ``messages`` as it is."""

    role: Literal["system", "developer", "user", "assistant", "tool", "function"] | str = (
        "assistant"
    )
    content: str | None = None
    refusal: str | None = None
    """The model's reason for declining to answer in the requested format, else None."""
    tool_calls: list[ToolCall] | None = None
    function_call: FunctionCall | None = None


class TopLogprob(GatewayModel):
    """A token the model could have written at a position, and its log probability."""

    token: str
    logprob: float
    bytes: list[int] | None = None
    """The token's UTF-8 bytes (a token may hold part of a character)."""


class TokenLogprob(TopLogprob):
    """A token of the reply, its log probability, and the likeliest tokens at its position."""

    top_logprobs: list[TopLogprob] = []


class ChoiceLogprobs(GatewayModel):
    """The log probabilities of a choice's tokens, in order (``logprobs=True``)."""

    content: list[TokenLogprob] | None = None
    refusal: list[TokenLogprob] | None = None


class Choice(GatewayModel):
    """One alternative of a completion."""

    index: int = 0
    message: Message
    finish_reason: FinishReason | str | None = None
    logprobs: ChoiceLogprobs | None = None


class Usage(GatewayModel):
    """Tokens billed for a call."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class ChatCompletion(ReplyMixin, GatewayModel):
    """A whole (non-streamed) chat completion."""

    id: str
    object: Literal["chat.completion"] | str = "chat.completion"
    created: int | None = None
    model: str | None = None
    choices: list[Choice]
    usage: Usage | None = None

    @property
    def text(self) -> str:
        """The first choice's content, or ``""`` when it has none (a tool call, say)."""
        return (self.choices[0].message.content or "") if self.choices else ""

    @guarded
    def __repr__(self) -> str:
        finish = self.choices[0].finish_reason if self.choices else None
        tokens = self.usage.total_tokens if self.usage else None
        parts = (field("model", self.model), field("text", self.text), field("finish", finish))
        return plain(self, *parts, field("tokens", tokens))

    @guarded
    def _repr_html_(self) -> str:
        return card(self, _reply_fields(self), text=self.text, body=_calls_html(self))


class ToolCallFunctionDelta(GatewayModel):
    """A fragment of a streamed function call: the name comes first, the arguments in pieces."""

    name: str | None = None
    arguments: str | None = None


class ToolCallDelta(GatewayModel):
    """A fragment of a streamed tool call, matched to its call by ``index``."""

    index: int | None = None
    id: str | None = None
    type: str | None = None
    function: ToolCallFunctionDelta | None = None


class ChunkDelta(GatewayModel):
    """What one stream chunk adds to the message."""

    role: str | None = None
    content: str | None = None
    refusal: str | None = None
    tool_calls: list[ToolCallDelta] | None = None
    function_call: ToolCallFunctionDelta | None = None


class ChunkChoice(GatewayModel):
    """One choice of a stream chunk."""

    index: int = 0
    delta: ChunkDelta = Field(default_factory=ChunkDelta)
    finish_reason: FinishReason | str | None = None
    logprobs: ChoiceLogprobs | None = None
    """The log probabilities of the tokens this chunk adds."""


class ChatCompletionChunk(CreditsMixin, GatewayModel):
    """One event of a streamed chat completion (``object`` = ``chat.completion.chunk``)."""

    id: str = ""
    object: Literal["chat.completion.chunk"] | str = "chat.completion.chunk"
    created: int | None = None
    model: str | None = None
    choices: list[ChunkChoice] = []
    usage: Usage | None = None

    @property
    def _delta_text(self) -> str:
        return "".join(c.delta.content or "" for c in self.choices if c.index == 0)

    @guarded
    def __repr__(self) -> str:
        finish = next((c.finish_reason for c in self.choices if c.finish_reason), None)
        parts = (field("delta", self._delta_text), field("finish", finish))
        return plain(self, field("id", self.id or None), *parts)

    @guarded
    def _repr_html_(self) -> str:
        finish = next((c.finish_reason for c in self.choices if c.finish_reason), None)
        return card(self, [("id", self.id), ("finish reason", finish)], text=self._delta_text)


ResponseFormatT = TypeVar("ResponseFormatT")
"""What ``parse`` turns a reply's content into (the ``response_format`` type)."""


class ParsedFunction(GatewayModel):
    """A call of a strict tool, its arguments also parsed (``parsed_arguments``)."""

    name: str
    arguments: str = ""
    parsed_arguments: Any = None
    """The arguments as the tool's model (a tool from `pydantic_function_tool`), else the
    decoded JSON."""


class ParsedToolCall(ToolCall):
    """A tool call of a parsed completion."""

    function: ParsedFunction  # type: ignore[assignment]


class ParsedMessage(Message, Generic[ResponseFormatT]):
    """A reply message whose content was parsed into the ``response_format`` type."""

    parsed: ResponseFormatT | None = None
    """The content as the requested type; None when the model refused (see ``refusal``)."""
    tool_calls: list[ParsedToolCall] | None = None  # type: ignore[assignment]


class ParsedChoice(Choice, Generic[ResponseFormatT]):
    """A choice of a parsed completion."""

    message: ParsedMessage[ResponseFormatT]


class ParsedChatCompletion(ChatCompletion, Generic[ResponseFormatT]):
    """A chat completion whose every choice's content was parsed (``message.parsed``)."""

    choices: list[ParsedChoice[ResponseFormatT]]  # type: ignore[assignment]

    @property
    def _parsed(self) -> Any:
        return self.choices[0].message.parsed if self.choices else None

    @guarded
    def __repr__(self) -> str:
        return plain(self, field("model", self.model), field("parsed", self._parsed))

    @guarded
    def _repr_html_(self) -> str:
        fields = [*_reply_fields(self), ("parsed", self._parsed)]
        return card(self, fields, text=self.text, body=_calls_html(self))


_MESSAGE_FIELDS = {"role", "content", "tool_calls", "function_call", "name", "tool_call_id"}


def message_param(message: object) -> object:
    """A message as the wire wants it: a `ChatCompletion` or `Choice` as its (first) message,
    a `Message` as a dict of its message fields; anything else as it is."""
    if isinstance(message, ChatCompletion):
        if not message.choices:
            raise InvalidRequestError(
                [
                    Violation(
                        "messages", message.id, "a ChatCompletion without choices has no message"
                    )
                ]
            )
        message = message.choices[0].message
    if isinstance(message, Choice):
        message = message.message
    if isinstance(message, BaseModel):
        return message.model_dump(mode="json", include=_MESSAGE_FIELDS, exclude_none=True)
    return message


def _reply_fields(reply: ChatCompletion) -> list[tuple[str, object]]:
    finish = reply.choices[0].finish_reason if reply.choices else None
    usage = reply.usage
    tokens = f"{usage.prompt_tokens} in, {usage.completion_tokens} out" if usage else None
    return [
        ("model", reply.model),
        ("id", reply.id),
        ("finish reason", finish),
        ("tokens", tokens),
        ("remaining credits", reply.remaining_credits),
    ]


def _calls_html(reply: ChatCompletion) -> str:
    """The first choice's tool calls, as a table (empty without any)."""
    calls = (reply.choices[0].message.tool_calls or []) if reply.choices else []
    if not calls:
        return ""
    return table(["tool", "arguments"], [(c.function.name, c.function.arguments) for c in calls])
