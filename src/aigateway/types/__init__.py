"""Typed request parameters and reply models, a module per resource.

The names load on first use: importing one module (``aigateway.types.chat``) does not import
the others, so a process pays only for the types it uses."""

from typing import TYPE_CHECKING

from aigateway._lazy import lazy_names

if TYPE_CHECKING:  # the same names as _LAZY, for type checkers (X as X re-exports)
    from aigateway.types.chat import ChatCompletion as ChatCompletion
    from aigateway.types.chat import ChatCompletionChunk as ChatCompletionChunk
    from aigateway.types.chat import Choice as Choice
    from aigateway.types.chat import ChunkChoice as ChunkChoice
    from aigateway.types.chat import ChunkDelta as ChunkDelta
    from aigateway.types.chat import FinishReason as FinishReason
    from aigateway.types.chat import FunctionCall as FunctionCall
    from aigateway.types.chat import Message as Message
    from aigateway.types.chat import ToolCall as ToolCall
    from aigateway.types.chat import ToolCallDelta as ToolCallDelta
    from aigateway.types.chat import ToolCallFunctionDelta as ToolCallFunctionDelta
    from aigateway.types.chat import Usage as Usage
    from aigateway.types.chat_params import ChatCompletionCreateParams as ChatCompletionCreateParams
    from aigateway.types.chat_params import ChatCompletionRequest as ChatCompletionRequest
    from aigateway.types.chat_params import ChatMessageInput as ChatMessageInput
    from aigateway.types.chat_params import ChatMessageParam as ChatMessageParam
    from aigateway.types.chat_params import ContentPartParam as ContentPartParam
    from aigateway.types.chat_params import FunctionDefinitionParam as FunctionDefinitionParam
    from aigateway.types.chat_params import RequestOptions as RequestOptions
    from aigateway.types.chat_params import ResponseFormatParam as ResponseFormatParam
    from aigateway.types.chat_params import ToolChoiceParam as ToolChoiceParam
    from aigateway.types.chat_params import ToolParam as ToolParam
    from aigateway.types.error_body import ErrorBody as ErrorBody
    from aigateway.types.error_body import ErrorObject as ErrorObject
    from aigateway.types.models import Model as Model
    from aigateway.types.models import ModelList as ModelList
    from aigateway.types.requests import ChatCompletionCreateRequest as ChatCompletionCreateRequest
    from aigateway.types.requests import ImageGenerateRequest as ImageGenerateRequest
    from aigateway.types.requests import RequestModel as RequestModel
    from aigateway.types.requests import RunRequest as RunRequest
    from aigateway.types.requests import load_requests as load_requests

_LAZY = {
    "ChatCompletion": ".chat",
    "ChatCompletionChunk": ".chat",
    "Choice": ".chat",
    "ChunkChoice": ".chat",
    "ChunkDelta": ".chat",
    "FinishReason": ".chat",
    "FunctionCall": ".chat",
    "Message": ".chat",
    "ToolCall": ".chat",
    "ToolCallDelta": ".chat",
    "ToolCallFunctionDelta": ".chat",
    "Usage": ".chat",
    "ChatCompletionCreateParams": ".chat_params",
    "ChatCompletionRequest": ".chat_params",
    "ChatMessageInput": ".chat_params",
    "ChatMessageParam": ".chat_params",
    "ContentPartParam": ".chat_params",
    "FunctionDefinitionParam": ".chat_params",
    "RequestOptions": ".chat_params",
    "ResponseFormatParam": ".chat_params",
    "ToolChoiceParam": ".chat_params",
    "ToolParam": ".chat_params",
    "Model": ".models",
    "ModelList": ".models",
    "ChatCompletionCreateRequest": ".requests",
    "ImageGenerateRequest": ".requests",
    "RequestModel": ".requests",
    "RunRequest": ".requests",
    "load_requests": ".requests",
    "ErrorBody": ".error_body",
    "ErrorObject": ".error_body",
}
"""Each public name -> the module defining it: the one list (``__all__`` is its names)."""

__all__ = [*_LAZY]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
