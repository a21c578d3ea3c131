"""What ``POST /chat/completions`` accepts, with the API's limits.

One set of TypedDicts serves three purposes: the keyword arguments of
``client.chat.completions.create`` (type checkers see them through ``Unpack``), the strict
check made before anything is sent (pydantic validates them), and the JSON body (pydantic
serialises the validated dict in one pass). The mock gateway checks requests with the same
definitions, so client and mock agree on every limit.

Roles: the API lists ``system``, ``user`` and ``assistant``; ``tool`` is accepted as well,
because returning a tool's result (``tools``) needs it, as in the OpenAI convention,
and so are ``developer`` (OpenAI's newer name for ``system``) and the legacy ``function``.

Beyond the API's documented fields, the ones OpenAI-compatible clients send today are typed and checked
the same way: ``n``, ``logprobs`` and ``top_logprobs``, ``max_completion_tokens``,
``parallel_tool_calls``, ``stream_options``, ``logit_bias`` and ``response_format`` of type
``json_schema``. Checks that involve two fields are made on the later one (``top_logprobs``
needs ``logprobs``; ``tool_choice`` must name a tool of ``tools``; ``max_tokens`` cannot be
given with ``max_completion_tokens``, which replaces it, as OpenAI answers).
"""

# Annotations here are evaluated at import, not postponed (no `from __future__ import
# annotations`): postponed, the first chat call compiled and evaluated every one of them
# twice, for the methods' signatures and for pydantic.
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, Protocol, TypeVar, Union

from pydantic import AfterValidator, ConfigDict, Field, ValidationInfo, with_config
from pydantic_core import PydanticCustomError
from typing_extensions import NotRequired, Required, TypedDict

from aigateway.types._json_schema import schema_problem
from aigateway.types.chat import ChatCompletion, Choice, Message

__all__ = [
    "ALLOWED",
    "AssistantMessageParam",
    "ChatCompletionCreateParams",
    "ChatCompletionCreateParamsNonStreaming",
    "ChatCompletionCreateParamsStreaming",
    "ChatCompletionParseParams",
    "ChatCompletionRequest",
    "ChatCompletionRequestFields",
    "ChatCompletionStreamParams",
    "ChatMessageInput",
    "ChatMessageParam",
    "ContentPartParam",
    "DeveloperMessageParam",
    "FunctionDefinitionInput",
    "FunctionDefinitionParam",
    "FunctionMessageParam",
    "ImagePartParam",
    "JSONSchemaParam",
    "RequestOptions",
    "ResponseFormatJSONObjectParam",
    "ResponseFormatJSONSchemaParam",
    "ResponseFormatParam",
    "ResponseFormatTextParam",
    "StreamOptionsParam",
    "SystemMessageParam",
    "TextPartParam",
    "TimeoutLike",
    "ToolChoiceParam",
    "ToolInput",
    "ToolMessageParam",
    "ToolParam",
    "UserMessageParam",
    "tool_choice_problem",
]

ALLOWED: Mapping[str, str] = {
    "model": "a model id string (see client.models.list())",
    "messages": "a list of at least 1 message",
    "role": "one of 'system', 'developer', 'user', 'assistant', 'tool', 'function'",
    "max_tokens": "an integer from 1 to 128000, not with max_completion_tokens (which replaces it)",
    "max_completion_tokens": "an integer from 1 to 128000",
    "n": "an integer from 1 to 128",
    "logprobs": "true or false",
    "top_logprobs": "an integer from 0 to 20, with logprobs: true",
    "logit_bias": "a map of token ids (strings of digits) to integers from -100 to 100",
    "parallel_tool_calls": "true or false",
    "stream_options": "{'include_usage': true or false}",
    "temperature": "a number from 0 to 2",
    "top_p": "a number from 0 to 1",
    "presence_penalty": "a number from -2 to 2",
    "frequency_penalty": "a number from -2 to 2",
    "stop": "a string or a list of at most 4 strings",
    "stream": "true or false",
    "function_call": "'auto', 'none' or {'name': ...} naming one of functions (the legacy tool_choice)",
    "tool_choice": (
        "'auto', 'none', 'required' (with tools) or "
        "{'type': 'function', 'function': {'name': <a function in tools>}}"
    ),
    "response_format": (
        "{'type': 'text'}, {'type': 'json_object'} or "
        "{'type': 'json_schema', 'json_schema': {'name': ..., 'schema': {...}, 'strict': ...}}"
    ),
    "json_schema": (
        "{'name': 1 to 64 letters, digits, '_' or '-', 'description': a string, "
        "'schema': a JSON schema object, 'strict': true or false}"
    ),
    "seed": "an integer",
    "tools": (
        "a list of {'type': 'function', 'function': {'name': ..., 'description': ..., "
        "'parameters': {...}, 'strict': true or false}}"
    ),
    "functions": "a list of {'name': ..., 'description': ..., 'parameters': {...}}",
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
class DeveloperMessageParam(TypedDict, total=False):
    """Instructions, as ``system`` gives them (OpenAI's newer name for that role)."""

    role: Required[Literal["developer"]]
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


@with_config(ConfigDict(extra="allow"))
class FunctionMessageParam(TypedDict, total=False):
    """A legacy ``function_call``'s result, named by the function."""

    role: Required[Literal["function"]]
    content: Required[str | None]
    name: Required[str]


ChatMessageParam = Annotated[
    SystemMessageParam
    | DeveloperMessageParam
    | UserMessageParam
    | AssistantMessageParam
    | ToolMessageParam
    | FunctionMessageParam,
    Field(discriminator="role"),
]
"""A message written as a dict."""

ChatMessageInput = Union[ChatMessageParam, Message, Choice, ChatCompletion, Mapping[str, object]]
"""What ``messages`` items may be: a dict, or a reply object passed back as it is.

For type checkers any ``Mapping[str, object]`` is accepted too, so that a list built in a
variable (inferred as ``list[dict[str, str]]``) can be passed; the message TypedDicts stay in
the union, so editors still complete the keys and roles of a dict written inline. Every message
is checked against the TypedDicts before the request is sent, whatever its static type.
"""


@with_config(ConfigDict(extra="forbid"))
class FunctionDefinitionParam(TypedDict, total=False):
    """A function the model may call; an unknown key (a misspelt ``description``, say) is
    refused rather than dropped."""

    name: Required[str]
    description: str | None
    """What the function does, for the model; null is accepted as absent (some clients send
    it for a function without a docstring)."""
    parameters: dict[str, Any]
    """A JSON-schema object describing the arguments."""
    strict: Annotated[bool, Field(strict=True)]
    """True: the arguments follow ``parameters`` exactly (structured outputs)."""


@with_config(ConfigDict(extra="forbid"))
class ToolParam(TypedDict):
    type: Literal["function"]
    function: FunctionDefinitionParam


ToolInput = Union[ToolParam, Mapping[str, object]]
"""What ``tools`` items may be: a `ToolParam`, or for type checkers any ``Mapping[str, object]``,
so that tools built as dicts in a variable (inferred as ``list[dict[str, ...]]``) can be passed
and the reply keeps its type. Every tool is checked against `ToolParam` before the request is
sent, whatever its static type: a bad one raises `InvalidRequestError` naming it."""

FunctionDefinitionInput = Union[FunctionDefinitionParam, Mapping[str, object]]
"""What the legacy ``functions`` items may be, as `ToolInput` for ``tools``."""


class NamedToolChoiceFunction(TypedDict):
    name: str


class NamedToolChoiceParam(TypedDict):
    type: Literal["function"]
    function: NamedToolChoiceFunction


ToolChoiceParam = Union[Literal["auto", "none", "required"], NamedToolChoiceParam]


class FunctionNameParam(TypedDict):
    name: Required[str]


FunctionCallChoiceParam = Union[Literal["auto", "none"], FunctionNameParam]
"""The legacy ``function_call`` of a request: which of ``functions`` to call."""


class ResponseFormatTextParam(TypedDict):
    type: Literal["text"]


class ResponseFormatJSONObjectParam(TypedDict):
    """Any JSON object."""

    type: Literal["json_object"]


def json_schema_shape(schema: dict[str, Any]) -> dict[str, Any]:
    problem = schema_problem(schema)
    if problem is not None:
        raise PydanticCustomError(
            "json_schema", "not a JSON schema: {problem}", {"problem": problem}
        )
    return schema


class JSONSchemaParam(TypedDict, total=False):
    name: Required[Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")]]
    description: str
    schema: Annotated[dict[str, Any], AfterValidator(json_schema_shape)]
    """The JSON schema the reply follows (pydantic's ``Model.model_json_schema()``, say)."""
    strict: bool | None
    """True: the reply follows the schema exactly (every property present, no others)."""


class ResponseFormatJSONSchemaParam(TypedDict):
    """JSON that follows a schema (OpenAI's structured outputs)."""

    type: Literal["json_schema"]
    json_schema: JSONSchemaParam


ResponseFormatParam = Annotated[
    ResponseFormatTextParam | ResponseFormatJSONObjectParam | ResponseFormatJSONSchemaParam,
    Field(discriminator="type"),
]


class StreamOptionsParam(TypedDict, total=False):
    include_usage: Annotated[bool, Field(strict=True)]
    """True: a last chunk with ``choices: []`` carries the ``usage`` of the whole stream."""


class TimeoutLike(Protocol):
    """An ``httpx.Timeout`` or an ``httpx2.Timeout``: a request's four limits (connect, read,
    write, pool) in seconds, None for no limit."""

    def as_dict(self) -> dict[str, float | None]: ...


class RequestOptions(TypedDict, total=False):
    """Per-call options every method takes; they shape the HTTP request, not its body."""

    extra_headers: Mapping[str, str]
    """Headers added to (or replacing) the client's for this call."""
    extra_body: Mapping[str, object]
    """Fields merged into the JSON body as they are, unchecked (for gateway extensions)."""
    timeout: float | TimeoutLike | None
    """This call's timeout (seconds, an ``httpx.Timeout`` or an ``httpx2.Timeout``), replacing
    the client's."""
    deadline: float | None
    """Seconds the whole call may take: connecting, every attempt, every wait between attempts
    and, for a stream, its whole life; then `APITimeoutError` (``limit_name == "deadline"``). The
    client's by default: 600 for a plain call, none for a stream; None for no deadline."""
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
    """Deprecated (removed in the next release; warns): ``deadline`` for streams only."""
    fallback_models: Sequence[str]
    """Up to 5 models to try in turn when the call's model is unavailable (404, 5xx or 429
    after the retries, no connection), before any output reached you; the reply's
    ``fallback`` says which model served it."""


T = TypeVar("T")


def _needs(earlier: str, problem: str) -> AfterValidator:
    """A check that a field goes with an ``earlier`` one (declared before it)."""

    def check(value: T, info: ValidationInfo) -> T:
        if not info.data.get(earlier):
            raise PydanticCustomError("needs_field", problem)
        return value

    check.__doc__ = problem  # the limit, as the API reference shows it

    return AfterValidator(check)


def _alone_with(earlier: str, problem: str) -> AfterValidator:
    """A check that a field is not given together with an ``earlier`` one."""

    def check(value: T, info: ValidationInfo) -> T:
        if earlier in info.data:
            raise PydanticCustomError("conflicting_fields", problem)
        return value

    check.__doc__ = problem  # the limit, as the API reference shows it

    return AfterValidator(check)


def tool_choice_problem(tool_choice: object, tools: Sequence[ToolParam] | None) -> str | None:
    """Why ``tool_choice`` cannot go with ``tools`` (it names a function not in them, or is
    ``required`` without any), or None."""
    names = [tool["function"]["name"] for tool in tools or ()]
    known = f"(tools: {', '.join(repr(n) for n in names) or 'none'})"
    if isinstance(tool_choice, Mapping):
        name = tool_choice.get("function", {}).get("name")
        if name not in names:
            return f"names the function {name!r}, which is not in tools {known}"
    if tool_choice == "required" and not names:
        return "'required' needs tools"
    return None


def tool_choice_in_tools(choice: T, info: ValidationInfo) -> T:
    """a named function must be in tools; 'required' needs tools"""
    problem = tool_choice_problem(choice, info.data.get("tools"))
    if problem is not None:
        raise PydanticCustomError("tool_choice", "{problem}", {"problem": problem})
    return choice


class _ChatSettingsBase(TypedDict, total=False):
    max_completion_tokens: Annotated[int, Field(strict=True, ge=1, le=128_000)]
    """The most tokens the reply may have; a longer one stops with ``finish_reason`` ``length``."""
    max_tokens: Annotated[
        int,
        Field(strict=True, ge=1, le=128_000),
        _alone_with("max_completion_tokens", "cannot be given with max_completion_tokens"),
    ]
    """Deprecated by OpenAI in favour of ``max_completion_tokens``; the same meaning."""
    temperature: Annotated[float, Field(ge=0, le=2)]
    """Randomness of the reply: 0 picks the likeliest tokens, higher varies more."""
    top_p: Annotated[float, Field(ge=0, le=1)]
    """Sample only from the tokens making up this much probability (an alternative to ``temperature``)."""
    n: Annotated[int, Field(strict=True, ge=1, le=128)]
    """How many alternative replies (choices) to make; all are billed."""
    stop: str | Annotated[list[str], Field(max_length=4)]
    """Text at which the reply stops (not included in it)."""
    presence_penalty: Annotated[float, Field(ge=-2, le=2)]
    """Positive: favour tokens not yet used (new topics)."""
    frequency_penalty: Annotated[float, Field(ge=-2, le=2)]
    """Positive: penalise tokens by how often they were used (less repetition)."""
    logit_bias: dict[
        Annotated[str, Field(pattern=r"^[0-9]+$")],
        Annotated[int, Field(strict=True, ge=-100, le=100)],
    ]
    """Token ids (as strings) mapped to a bias added to their likelihood; -100 bans, 100 forces."""
    logprobs: Annotated[bool, Field(strict=True)]
    """True: each choice carries the log probability of every token of its content."""
    top_logprobs: Annotated[
        int, Field(strict=True, ge=0, le=20), _needs("logprobs", "needs logprobs: true")
    ]
    """How many likeliest alternatives to list at each token (needs ``logprobs``)."""
    user: str
    """Your id for the end user, passed to the provider for abuse monitoring."""


class _RequestTools(TypedDict, total=False):
    """``tools`` and ``functions`` as the body carries them, checked strictly."""

    tools: list[ToolParam]
    functions: list[FunctionDefinitionParam]


class _ToolArguments(TypedDict, total=False):
    """``tools`` and ``functions`` as the methods take them (see `ToolInput`)."""

    tools: Sequence[ToolInput]
    """Functions the model may call; their calls come back in ``message.tool_calls``."""
    functions: Sequence[FunctionDefinitionInput]
    """The legacy form of ``tools``."""


class _ToolSettings(TypedDict, total=False):
    """The settings after ``tools``, which pydantic reads first (``tool_choice`` is checked
    against them)."""

    tool_choice: Annotated[ToolChoiceParam, AfterValidator(tool_choice_in_tools)]
    """Whether and which tool to call: ``auto``, ``none``, ``required`` or a named function."""
    parallel_tool_calls: Annotated[bool, Field(strict=True)]
    """False: at most one tool call per reply."""
    function_call: FunctionCallChoiceParam
    """The legacy form of ``tool_choice``: ``"auto"``, ``"none"`` or ``{"name": ...}``."""
    seed: Annotated[int, Field(strict=True)]
    """Asks for repeatable sampling: the same seed and arguments tend to give the same reply."""
    stream_options: StreamOptionsParam
    """Streams only: ``{'include_usage': True}`` adds a last chunk with the usage."""


class _ResponseFormat(TypedDict, total=False):
    response_format: ResponseFormatParam
    """The reply's form: text, any JSON object, or JSON following a schema (see ``parse``)."""


class _ChatSettings(_ChatSettingsBase, _RequestTools, _ToolSettings, _ResponseFormat, total=False):
    """The body's settings (all but ``model``, ``messages`` and ``stream``)."""


class _ChatArguments(_ChatSettingsBase, _ToolArguments, _ToolSettings, total=False):
    """The settings as the methods take them (all but ``model``, ``messages``,
    ``response_format`` and ``stream``)."""


class ChatCompletionRequestFields(_ChatSettings, total=False):
    """What a `ChatCompletionCreateRequest` holds: the body of ``POST /chat/completions`` but
    ``stream`` (how the reply comes back is the call's choice)."""

    model: Required[str]
    messages: Required[Annotated[list[ChatMessageParam], Field(min_length=1)]]


class ChatCompletionRequest(ChatCompletionRequestFields, total=False):
    """The JSON body of ``POST /chat/completions``, as checked by the client and the mock."""

    stream: bool


class _ChatCompletionCreateParamsBase(_ChatArguments, _ResponseFormat, RequestOptions, total=False):
    model: Required[str]
    """The model id (see ``client.models.list()``)."""
    messages: Required[Sequence[ChatMessageInput]]
    """The conversation so far: dicts with ``role`` and ``content``, or replies passed back."""


class ChatCompletionCreateParamsNonStreaming(_ChatCompletionCreateParamsBase, total=False):
    stream: NotRequired[Literal[False]]


class ChatCompletionCreateParamsStreaming(_ChatCompletionCreateParamsBase, total=False):
    stream: Required[Literal[True]]


class ChatCompletionStreamParams(_ChatCompletionCreateParamsBase, total=False):
    """Every keyword argument of ``client.chat.completions.stream`` and ``connect``
    (those of ``create`` but ``stream``)."""


class ChatCompletionParseParams(_ChatArguments, RequestOptions, total=False):
    """The keyword arguments of ``client.chat.completions.parse`` but ``response_format``
    (those of ``stream`` too, when it is given a type)."""

    model: Required[str]
    messages: Required[Sequence[ChatMessageInput]]


class ChatCompletionCreateParams(_ChatCompletionCreateParamsBase, total=False):
    """Every keyword argument of ``client.chat.completions.create``."""

    stream: bool
    """True: the reply comes as a `Stream` of chunks while it is made."""
