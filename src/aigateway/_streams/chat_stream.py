"""Rebuilding a whole `ChatCompletion` from its stream chunks, and the ``stream()`` helper.

`ChatCompletionAccumulator` is sans-io: hand it chunks (from an SSE stream, a WebSocket, a
list in a test) and ask for the completion so far. Content is joined per choice; tool calls
are assembled from their fragments by ``index``, and also by ``id`` for providers that repeat
one ``index`` for every call or omit it (a fragment with neither continues the last call);
the last non-null ``finish_reason``, the ``usage`` chunk, the credit fields and the tokens'
``logprobs`` are kept.

`ChatCompletionStream` / `AsyncChatCompletionStream` wrap a chunk stream with an accumulator:
``for text in s.text_stream`` gives the text deltas and ``s.get_final_completion()`` the
rebuilt completion. A stream cut short raises `IncompleteStreamError` whose ``partial`` holds
the completion rebuilt so far. Given a ``finish`` function (``stream(response_format=Model)``),
the final completion is what it makes of the rebuilt one: a `ParsedChatCompletion`.
"""

from __future__ import annotations

from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
)
from dataclasses import dataclass, field
from typing import Generic, cast

from typing_extensions import TypeVar

from aigateway._closing import AsyncClosing, Closing
from aigateway._display import guarded, stream_html, stream_repr
from aigateway._streams.streams import AsyncStream, Stream
from aigateway.errors import IncompleteStreamError
from aigateway.types.chat import (
    ChatCompletion,
    ChatCompletionChunk,
    Choice,
    ChoiceLogprobs,
    FunctionCall,
    Message,
    TokenLogprob,
    ToolCall,
    ToolCallDelta,
    ToolCallFunctionDelta,
    Usage,
)

__all__ = [
    "AsyncChatCompletionStream",
    "ChatCompletionAccumulator",
    "ChatCompletionStream",
    "accumulate",
    "aaccumulate",
]

CompletionT = TypeVar("CompletionT", bound=ChatCompletion, default=ChatCompletion)
"""What a stream's final completion is: a `ChatCompletion`, or a `ParsedChatCompletion`."""
StreamT = TypeVar("StreamT", bound=Stream[ChatCompletionChunk] | AsyncStream[ChatCompletionChunk])
"""The chunk stream a chat stream wraps: a `Stream`, or an `AsyncStream`."""


@dataclass
class _CallDraft:
    id: str | None = None
    type: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)

    def add(self, function: ToolCallFunctionDelta | None) -> None:
        if function is None:
            return
        if function.name and not self.name:  # names arrive whole; a repeated one is not added
            self.name = function.name
        if function.arguments:
            self.arguments.append(function.arguments)

    def tool_call(self) -> ToolCall:
        return ToolCall(
            id=self.id,
            type=self.type or "function",
            function=FunctionCall(name=self.name, arguments="".join(self.arguments)),
        )


@dataclass
class _ChoiceDraft:
    role: str | None = None
    content: list[str] | None = None
    refusal: list[str] | None = None
    finish_reason: str | None = None
    calls: list[_CallDraft] = field(default_factory=list)
    calls_by_index: dict[int, _CallDraft] = field(default_factory=dict)
    calls_by_id: dict[str, _CallDraft] = field(default_factory=dict)
    function_call: _CallDraft | None = None
    logprobs: list[TokenLogprob] | None = None

    def add_tool_call(self, delta: ToolCallDelta) -> None:
        call = self._call_for(delta)
        if delta.id and call.id is None:
            call.id = delta.id
            self.calls_by_id[delta.id] = call
        if delta.type:
            call.type = delta.type
        call.add(delta.function)

    def _call_for(self, delta: ToolCallDelta) -> _CallDraft:
        """The call a fragment belongs to: by id, else by index unless the ids differ, else
        the last call for a fragment with neither; otherwise a new call."""
        if delta.id and delta.id in self.calls_by_id:
            return self.calls_by_id[delta.id]
        if delta.index is not None:
            known = self.calls_by_index.get(delta.index)
            if known is not None and not (delta.id and known.id and known.id != delta.id):
                return known
        elif not delta.id and self.calls:
            return self.calls[-1]
        call = _CallDraft()
        self.calls.append(call)
        if delta.index is not None:
            self.calls_by_index[delta.index] = call  # a repeated index now means this call
        return call

    def message(self) -> Message:
        tool_calls = [call.tool_call() for call in self.calls] or None
        function_call = self.function_call
        return Message(
            role=self.role or "assistant",
            content=None if self.content is None else "".join(self.content),
            refusal=None if self.refusal is None else "".join(self.refusal),
            tool_calls=tool_calls,
            function_call=None if function_call is None else function_call.tool_call().function,
        )


class ChatCompletionAccumulator:
    """Adds up stream chunks into the `ChatCompletion` they stand for.

    ``add(chunk)`` each chunk in order; ``completion()`` at any time gives the completion so
    far. Works on chunks from any source::

        accumulator = ChatCompletionAccumulator()
        for chunk in chunks:
            accumulator.add(chunk)
        completion = accumulator.completion()
    """

    def __init__(self) -> None:
        self._choices: dict[int, _ChoiceDraft] = {}
        self._first: ChatCompletionChunk | None = None
        self._usage: Usage | None = None
        self._remaining_credits: float | None = None
        self._balance_warning: bool | None = None
        self.received = 0
        """How many chunks were added."""

    def add(self, chunk: ChatCompletionChunk) -> str:
        """Take one chunk in; return the text it adds to the first choice (``""`` if none)."""
        self.received += 1
        if self._first is None:
            self._first = chunk
        if chunk.usage is not None:
            self._usage = chunk.usage
        if chunk.remaining_credits is not None:
            self._remaining_credits = chunk.remaining_credits
            self._balance_warning = chunk.balance_warning
        text = ""
        for choice in chunk.choices:
            draft = self._choices.get(choice.index)
            if draft is None:
                draft = self._choices[choice.index] = _ChoiceDraft()
            delta = choice.delta
            if delta.role:
                draft.role = delta.role
            if delta.content is not None:
                if draft.content is None:
                    draft.content = []
                draft.content.append(delta.content)
                if choice.index == 0:
                    text = delta.content
            if delta.refusal is not None:
                if draft.refusal is None:
                    draft.refusal = []
                draft.refusal.append(delta.refusal)
            for call in delta.tool_calls or ():
                draft.add_tool_call(call)
            if delta.function_call is not None:
                if draft.function_call is None:
                    draft.function_call = _CallDraft()
                draft.function_call.add(delta.function_call)
            if choice.logprobs is not None and choice.logprobs.content:
                if draft.logprobs is None:
                    draft.logprobs = []
                draft.logprobs.extend(choice.logprobs.content)
            if choice.finish_reason is not None:
                draft.finish_reason = choice.finish_reason
        return text

    def completion(self) -> ChatCompletion:
        """The completion the chunks added so far make up."""
        first = self._first
        choices = [
            Choice(
                index=index,
                message=draft.message(),
                finish_reason=draft.finish_reason,
                logprobs=None if draft.logprobs is None else ChoiceLogprobs(content=draft.logprobs),
            )
            for index, draft in sorted(self._choices.items())
        ]
        return ChatCompletion(
            id=first.id if first is not None else "",
            object="chat.completion",
            created=first.created if first is not None else None,
            model=first.model if first is not None else None,
            choices=choices,
            usage=self._usage,
            remaining_credits=self._remaining_credits,
            balance_warning=self._balance_warning,
        )


def accumulate(chunks: Iterable[ChatCompletionChunk]) -> ChatCompletion:
    """The `ChatCompletion` an iterable of chunks adds up to (a `Stream`, a list, ...)."""
    accumulator = ChatCompletionAccumulator()
    for chunk in chunks:
        accumulator.add(chunk)
    return accumulator.completion()


async def aaccumulate(chunks: AsyncIterable[ChatCompletionChunk]) -> ChatCompletion:
    """`accumulate` for an async iterable of chunks (an `AsyncStream`, ...)."""
    accumulator = ChatCompletionAccumulator()
    async for chunk in chunks:
        accumulator.add(chunk)
    return accumulator.completion()


class _ChatStreamBase(Generic[StreamT, CompletionT]):
    """What both chat streams share: the chunk stream, the accumulator, the final completion."""

    def __init__(
        self, stream: StreamT, finish: Callable[[ChatCompletion], CompletionT] | None = None
    ) -> None:
        self.stream = stream
        """The underlying chunk stream (``stream.response`` is the HTTP reply)."""
        self.accumulator = ChatCompletionAccumulator()
        """What has been received so far; ``accumulator.completion()`` is the snapshot."""
        self._text = ""  # the text the last chunk added to the first choice
        self._finish = finish

    def _added(self, chunk: ChatCompletionChunk) -> ChatCompletionChunk:
        """Add the next chunk in (and note the text it adds); return it."""
        self._text = self.accumulator.add(chunk)
        return chunk

    def _cut(self, error: IncompleteStreamError) -> None:
        """The stream was cut short: its error gets the completion rebuilt so far (``partial``)."""
        error.partial = self.accumulator.completion()

    def _final(self) -> CompletionT:
        completion = self.accumulator.completion()
        if self._finish is None:
            return cast(CompletionT, completion)  # no finish: CompletionT is ChatCompletion
        return self._finish(completion)

    def current_completion(self) -> ChatCompletion:
        """The completion rebuilt from the chunks received so far."""
        return self.accumulator.completion()

    @guarded
    def __repr__(self) -> str:
        text = self.accumulator.completion().text
        return stream_repr(self, self.stream.state, self.accumulator.received, text)

    @guarded
    def _repr_html_(self) -> str:
        text = self.accumulator.completion().text
        return stream_html(self, self.stream.state, self.accumulator.received, text)


class ChatCompletionStream(_ChatStreamBase[Stream[ChatCompletionChunk], CompletionT], Closing):
    """A streamed chat completion that adds its chunks up as they come.

    Iterate it for the chunks, or ``text_stream`` for the text deltas; then
    ``get_final_completion()``. Use it in a ``with`` block: leaving it releases the connection.
    """

    def __iter__(self) -> Iterator[ChatCompletionChunk]:
        return self

    def __next__(self) -> ChatCompletionChunk:
        try:
            return self._added(next(self.stream))
        except IncompleteStreamError as error:
            self._cut(error)
            raise

    def close(self) -> None:
        """Stop the iteration and release the connection (idempotent)."""
        self.stream.close()

    @property
    def text_stream(self) -> Iterator[str]:
        """The text deltas of the first choice, as they arrive (empty ones skipped)."""
        for _ in self:
            if self._text:
                yield self._text

    def until_done(self) -> None:
        """Read the rest of the stream."""
        for _ in self:
            pass

    def get_final_completion(self) -> CompletionT:
        """Read the rest of the stream; return the whole completion rebuilt from it (parsed,
        for ``stream(response_format=Model)``)."""
        self.until_done()
        return self._final()


class AsyncChatCompletionStream(
    _ChatStreamBase[AsyncStream[ChatCompletionChunk], CompletionT], AsyncClosing
):
    """`ChatCompletionStream` for async code: ``async for``, ``await get_final_completion()``,
    ``async with``."""

    def __aiter__(self) -> AsyncIterator[ChatCompletionChunk]:
        return self

    async def __anext__(self) -> ChatCompletionChunk:
        try:
            return self._added(await anext(self.stream))
        except IncompleteStreamError as error:
            self._cut(error)
            raise

    async def close(self) -> None:
        """Stop the iteration and release the connection (idempotent, shielded)."""
        await self.stream.close()

    @property
    def text_stream(self) -> AsyncIterator[str]:
        """The text deltas of the first choice, as they arrive (empty ones skipped)."""
        return _TextDeltas(self._next_text)

    async def _next_text(self) -> str:
        """The next non-empty text delta (`StopAsyncIteration` at the end)."""
        while True:
            await self.__anext__()
            if self._text:
                return self._text

    async def until_done(self) -> None:
        """Read the rest of the stream."""
        async for _ in self:
            pass

    async def get_final_completion(self) -> CompletionT:
        """Read the rest of the stream; return the whole completion rebuilt from it (parsed,
        for ``stream(response_format=Model)``)."""
        await self.until_done()
        return self._final()


class _TextDeltas:
    """`AsyncChatCompletionStream.text_stream`: an iterator object rather than an async
    generator, which, left unfinished, would be the garbage collector's to close (trio warns
    of each)."""

    __slots__ = ("_next_text",)

    def __init__(self, next_text: Callable[[], Awaitable[str]]) -> None:
        self._next_text = next_text

    def __aiter__(self) -> AsyncIterator[str]:
        return self

    async def __anext__(self) -> str:
        return await self._next_text()
