"""``client.chat.completions``: ``POST /chat/completions``, plain, streamed or parsed."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import replace
from functools import cache, cached_property
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast, overload

from pydantic import TypeAdapter
from typing_extensions import Unpack

from aigateway._call.call import APICall
from aigateway._lazy import collector_paused
from aigateway.resources._base import (
    AsyncResource,
    Resource,
    SyncResource,
    async_raw_twin,
    async_streaming_twin,
    check_keywords,
    keyword_signature,
    one_request,
    raw_twin,
    split_options,
    streaming_twin,
    twin_view,
    with_request,
)
from aigateway.types._base import built
from aigateway.types._validation import validate
from aigateway.types.chat import (
    ChatCompletion,
    ChatCompletionChunk,
    ParsedChatCompletion,
    message_param,
)
from aigateway.types.chat_params import (
    ALLOWED,
    ChatCompletionCreateParams,
    ChatCompletionCreateParamsNonStreaming,
    ChatCompletionCreateParamsStreaming,
    ChatCompletionParseParams,
    ChatCompletionRequest,
    ChatCompletionStreamParams,
    RequestOptions,
)

if TYPE_CHECKING:
    from aigateway._streams.chat_stream import AsyncChatCompletionStream, ChatCompletionStream
    from aigateway._streams.opening import Opening
    from aigateway._streams.sockets import AsyncChatSocket, ChatSocket
    from aigateway._streams.streams import AsyncStream, Stream
    from aigateway.resources._structured import StructuredRequest
    from aigateway.types.requests import ChatCompletionCreateRequest

__all__ = ["AsyncChat", "AsyncCompletions", "Chat", "Completions", "build_create_call"]

T = TypeVar("T")

_KEYWORDS = frozenset(ChatCompletionCreateParams.__annotations__)
_STREAM_KEYWORDS = _KEYWORDS - {"stream"}


@cache
def _request_adapter() -> TypeAdapter[ChatCompletionRequest]:
    """The request body's validator, built on the first call rather than at import: building
    it costs tens of milliseconds a process that never sends a chat request need not pay."""
    with collector_paused():
        return TypeAdapter(ChatCompletionRequest)


def _chunk_parser() -> Callable[[str | bytes], ChatCompletionChunk]:
    """`ChatCompletionChunk.model_validate_json` without its Python wrapper, which costs about
    as much again as the validation of a small chunk; the model's validator is built on first
    use (reply models defer their build), so this is looked up per call, not at import."""
    return built(ChatCompletionChunk).__pydantic_validator__.validate_json


def build_create_call(
    params: Mapping[str, Any], checked: Collection[str] = frozenset()
) -> APICall[Any]:
    """Check the arguments of ``create`` and describe the call; raises before anything is sent.

    ``checked``: fields a request model checked when it was built; when the body holds only
    those (and a boolean ``stream``), it is not checked again."""
    check_keywords(params, _KEYWORDS, "chat.completions.create")
    body, options = split_options(params)
    adapter = _request_adapter()
    if checked and all(
        name in checked or (name == "stream" and isinstance(value, bool))
        for name, value in body.items()
    ):
        validated = cast("ChatCompletionRequest", body)
    else:
        messages = body.get("messages")
        if isinstance(messages, Iterable) and not isinstance(messages, (str, bytes, Mapping)):
            body["messages"] = [message_param(m) for m in messages]
        validated = validate(adapter, body, ALLOWED)
    stream = bool(validated.get("stream"))
    return APICall(
        "POST",
        "chat/completions",
        parse=_chunk_parser() if stream else built(ChatCompletion).model_validate_json,
        payload=validated,
        body=adapter.dump_json(validated),
        options=options,  # type: ignore[arg-type]
        stream=stream,
    )


def create_params(request: object, params: dict[str, Any]) -> tuple[dict[str, Any], frozenset[str]]:
    """``create``'s keywords, with a `ChatCompletionCreateRequest`'s fields when given one,
    and the names of those fields (checked when the request was built)."""
    if request is None:
        return params, frozenset()
    from aigateway.types.requests import ChatCompletionCreateRequest  # when one is given

    return with_request(request, ChatCompletionCreateRequest, "chat.completions.create", params)


def build_stream_call(params: Mapping[str, Any], method: str = "stream") -> APICall[Any]:
    """``create(stream=True)`` for the ``stream`` helper, which takes no ``stream`` keyword."""
    check_keywords(params, _STREAM_KEYWORDS, f"chat.completions.{method}")
    return build_create_call({**params, "stream": True})


def build_parse_call(
    params: Mapping[str, Any], method: str = "parse"
) -> tuple[APICall[Any], StructuredRequest[Any]]:
    """The checked call of ``parse`` (or of ``stream`` given a type as ``response_format``),
    and how to parse its reply; a type that cannot be a strict schema raises here."""
    check_keywords(params, _STREAM_KEYWORDS, f"chat.completions.{method}")
    from aigateway.resources._structured import prepare  # only parsed calls need it: not at import

    body, structured = prepare(params, f"chat.completions.{method}")
    call = build_stream_call(body, method) if method == "stream" else build_create_call(body)
    return call, structured


def build_chat_stream_call(
    params: Mapping[str, Any],
) -> tuple[APICall[Any], Callable[[ChatCompletion], ChatCompletion] | None]:
    """The call of ``stream`` and what makes its final completion: parsing, when
    ``response_format`` is a type rather than a dict."""
    response_format = params.get("response_format")
    if response_format is None or isinstance(response_format, Mapping):
        return build_stream_call(params), None
    call, structured = build_parse_call(params, "stream")
    return call, structured.parse


def build_socket_call(params: Mapping[str, Any]) -> APICall[Any]:
    """The checked request of ``connect``: a chat body (no ``stream`` field) sent over the
    WebSocket endpoint, its frames parsed as chunks."""
    check_keywords(params, _STREAM_KEYWORDS, "chat.completions.connect")
    call = build_create_call(params)
    return replace(call, method="GET", path="stream", parse=_chunk_parser(), websocket=True)


class CompletionsWithRawResponse:
    def __init__(self, completions: Completions) -> None:
        self.create = raw_twin(completions.create)


class AsyncCompletionsWithRawResponse:
    def __init__(self, completions: AsyncCompletions) -> None:
        self.create = async_raw_twin(completions.create)


class CompletionsWithStreamingResponse:
    def __init__(self, completions: Completions) -> None:
        self.create = streaming_twin(completions.create)


class AsyncCompletionsWithStreamingResponse:
    def __init__(self, completions: AsyncCompletions) -> None:
        self.create = async_streaming_twin(completions.create)


class _CompletionsViews(Resource):
    """What `Completions` and `AsyncCompletions` share: their views. Their methods are written
    in each: their streams differ (a `Stream`, or an `Opening` of an `AsyncStream`)."""

    with_raw_response = twin_view(CompletionsWithRawResponse, AsyncCompletionsWithRawResponse)
    """The same methods, returning the raw response (status, headers, attempts) too."""

    with_streaming_response = twin_view(
        CompletionsWithStreamingResponse, AsyncCompletionsWithStreamingResponse
    )
    """The same methods, returning the reply with its body unread: ``with
    ...with_streaming_response.create(...) as response: response.iter_lines()`` (``async
    with`` on an `AsyncClient`)."""


class Completions(_CompletionsViews, SyncResource):
    """Chat completions: ``create(model=..., messages=[...])``."""

    @overload
    def create(
        self,
        request: ChatCompletionCreateRequest,
        /,
        *,
        stream: Literal[False] = ...,
        **options: Unpack[RequestOptions],
    ) -> ChatCompletion: ...
    @overload
    def create(
        self,
        request: ChatCompletionCreateRequest,
        /,
        *,
        stream: Literal[True],
        **options: Unpack[RequestOptions],
    ) -> Stream[ChatCompletionChunk]: ...
    @overload
    def create(
        self, **params: Unpack[ChatCompletionCreateParamsNonStreaming]
    ) -> ChatCompletion: ...
    @overload
    def create(
        self, **params: Unpack[ChatCompletionCreateParamsStreaming]
    ) -> Stream[ChatCompletionChunk]: ...
    @overload
    def create(
        self, **params: Unpack[ChatCompletionCreateParams]
    ) -> ChatCompletion | Stream[ChatCompletionChunk]: ...
    @keyword_signature(ChatCompletionCreateParams, request="ChatCompletionCreateRequest")
    def create(self, *args: Any, **params: Any) -> ChatCompletion | Stream[ChatCompletionChunk]:
        """Create a chat completion; with ``stream=True``, a `Stream` of chunks.

        Every argument is checked against the API's limits first: a bad one raises
        `InvalidRequestError` and nothing is sent. Arguments not passed are not sent.
        A `ChatCompletionCreateRequest` may be passed instead of the keywords (options and
        ``stream`` still go as keywords).
        """
        result: ChatCompletion | Stream[ChatCompletionChunk] = self._request(
            build_create_call(*create_params(one_request(args, "chat.completions.create"), params))
        )
        return result

    @overload
    def parse(
        self, *, response_format: type[T], **params: Unpack[ChatCompletionParseParams]
    ) -> ParsedChatCompletion[T]: ...
    @overload
    def parse(self, **params: Unpack[ChatCompletionParseParams]) -> ParsedChatCompletion[None]: ...
    @keyword_signature(ChatCompletionStreamParams)
    def parse(self, **params: Any) -> ParsedChatCompletion[Any]:
        """Create a chat completion whose content is parsed into ``response_format``.

        ``response_format`` is a pydantic model, a TypedDict or a dataclass; it is sent as a
        strict JSON schema and every choice comes back as ``choice.message.parsed``, an
        instance of it (None when the model refused: see ``message.refusal``). Strict tools
        get ``function.parsed_arguments``. A reply cut by the token limit raises
        `LengthFinishReasonError`, content that does not validate `StructuredOutputError`.
        """
        call, structured = build_parse_call(params)
        completion: ChatCompletion = self._request(call)
        return structured.parse(completion)

    @overload
    def stream(
        self, *, response_format: type[T], **params: Unpack[ChatCompletionParseParams]
    ) -> ChatCompletionStream[ParsedChatCompletion[T]]: ...
    @overload
    def stream(self, **params: Unpack[ChatCompletionStreamParams]) -> ChatCompletionStream: ...
    @keyword_signature(ChatCompletionStreamParams)
    def stream(self, **params: Any) -> ChatCompletionStream[Any]:
        """Stream a chat completion and add it up as it comes.

        ``with client.chat.completions.stream(...) as s``, then ``for text in s.text_stream``
        and ``s.get_final_completion()``. A non-2xx reply raises here, before iteration.
        Given a type as ``response_format``, the final completion is parsed, as by ``parse``.
        """
        from aigateway._streams.chat_stream import ChatCompletionStream

        call, finish = build_chat_stream_call(params)
        return ChatCompletionStream(self._request(call), finish)

    @keyword_signature(ChatCompletionStreamParams)
    def connect(self, **params: Unpack[ChatCompletionStreamParams]) -> ChatSocket:
        """Stream a chat completion over the WebSocket endpoint (``/v1/stream``).

        ``with client.chat.completions.connect(...) as socket: for chunk in socket: ...``;
        the same chunks as ``create(stream=True)``. Needs the ``ws`` extra (in a checkout,
        ``python -m pip install -e '.[ws]'``).
        """
        socket: ChatSocket = self._request(build_socket_call(params))
        return socket


class AsyncCompletions(_CompletionsViews, AsyncResource):
    """Chat completions: ``await create(model=..., messages=[...])``."""

    @overload
    async def create(
        self,
        request: ChatCompletionCreateRequest,
        /,
        *,
        stream: Literal[False] = ...,
        **options: Unpack[RequestOptions],
    ) -> ChatCompletion: ...
    @overload
    async def create(
        self,
        request: ChatCompletionCreateRequest,
        /,
        *,
        stream: Literal[True],
        **options: Unpack[RequestOptions],
    ) -> AsyncStream[ChatCompletionChunk]: ...
    @overload
    async def create(
        self, **params: Unpack[ChatCompletionCreateParamsNonStreaming]
    ) -> ChatCompletion: ...
    @overload
    async def create(
        self, **params: Unpack[ChatCompletionCreateParamsStreaming]
    ) -> AsyncStream[ChatCompletionChunk]: ...
    @overload
    async def create(
        self, **params: Unpack[ChatCompletionCreateParams]
    ) -> ChatCompletion | AsyncStream[ChatCompletionChunk]: ...
    @keyword_signature(ChatCompletionCreateParams, request="ChatCompletionCreateRequest")
    async def create(
        self, *args: Any, **params: Any
    ) -> ChatCompletion | AsyncStream[ChatCompletionChunk]:
        """Create a chat completion; with ``stream=True``, an `AsyncStream` of chunks.

        Every argument is checked against the API's limits first: a bad one raises
        `InvalidRequestError` and nothing is sent. Arguments not passed are not sent.
        A `ChatCompletionCreateRequest` may be passed instead of the keywords (options and
        ``stream`` still go as keywords).
        """
        result: ChatCompletion | AsyncStream[ChatCompletionChunk] = await self._request(
            build_create_call(*create_params(one_request(args, "chat.completions.create"), params))
        )
        return result

    @overload
    async def parse(
        self, *, response_format: type[T], **params: Unpack[ChatCompletionParseParams]
    ) -> ParsedChatCompletion[T]: ...
    @overload
    async def parse(
        self, **params: Unpack[ChatCompletionParseParams]
    ) -> ParsedChatCompletion[None]: ...
    @keyword_signature(ChatCompletionStreamParams)
    async def parse(self, **params: Any) -> ParsedChatCompletion[Any]:
        """Create a chat completion whose content is parsed into ``response_format``.

        ``response_format`` is a pydantic model, a TypedDict or a dataclass; it is sent as a
        strict JSON schema and every choice comes back as ``choice.message.parsed``, an
        instance of it (None when the model refused: see ``message.refusal``). Strict tools
        get ``function.parsed_arguments``. A reply cut by the token limit raises
        `LengthFinishReasonError`, content that does not validate `StructuredOutputError`.
        """
        call, structured = build_parse_call(params)
        completion: ChatCompletion = await self._request(call)
        return structured.parse(completion)

    @overload
    def stream(
        self, *, response_format: type[T], **params: Unpack[ChatCompletionParseParams]
    ) -> Opening[AsyncChatCompletionStream[ParsedChatCompletion[T]]]: ...
    @overload
    def stream(
        self, **params: Unpack[ChatCompletionStreamParams]
    ) -> Opening[AsyncChatCompletionStream]: ...
    @keyword_signature(ChatCompletionStreamParams)
    def stream(self, **params: Any) -> Opening[AsyncChatCompletionStream[Any]]:
        """Stream a chat completion and add it up as it comes.

        ``async with client.chat.completions.stream(...) as s`` (or ``s = await ...``), then
        ``async for text in s.text_stream`` and ``await s.get_final_completion()``.
        Bad arguments raise at once; a non-2xx reply raises on entering, before iteration.
        Given a type as ``response_format``, the final completion is parsed, as by ``parse``.
        """
        from aigateway._streams.chat_stream import AsyncChatCompletionStream
        from aigateway._streams.opening import Opening

        call, finish = build_chat_stream_call(params)

        async def open_stream() -> AsyncChatCompletionStream[Any]:
            return AsyncChatCompletionStream(await self._request(call), finish)

        return Opening(open_stream)

    @keyword_signature(ChatCompletionStreamParams)
    def connect(self, **params: Unpack[ChatCompletionStreamParams]) -> Opening[AsyncChatSocket]:
        """Stream a chat completion over the WebSocket endpoint (``/v1/stream``), on asyncio.

        ``async with client.chat.completions.connect(...) as socket:
        async for chunk in socket: ...`` (or ``socket = await ...``). Needs the ``ws`` extra
        (in a checkout, ``python -m pip install -e '.[ws]'``).
        """
        from aigateway._streams.opening import Opening

        call = build_socket_call(params)

        async def open_socket() -> AsyncChatSocket:
            socket: AsyncChatSocket = await self._request(call)
            return socket

        return Opening(open_socket)


class Chat(SyncResource):
    """``client.chat``: the chat endpoints."""

    @cached_property
    def completions(self) -> Completions:
        return Completions(self._pipeline)


class AsyncChat(AsyncResource):
    """``client.chat``: the chat endpoints."""

    @cached_property
    def completions(self) -> AsyncCompletions:
        return AsyncCompletions(self._pipeline)
