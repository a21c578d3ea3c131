"""Typed request parameters and reply models, a module per resource.

The names load on first use: importing one module (``aigateway.types.chat``) does not import
the others, so a process pays only for the types it uses."""

from typing import TYPE_CHECKING

from aigateway._lazy import lazy_names

if TYPE_CHECKING:
    from aigateway.types.chat import (
        ChatCompletion,
        ChatCompletionChunk,
        Choice,
        ChunkChoice,
        ChunkDelta,
        FinishReason,
        FunctionCall,
        Message,
        ToolCall,
        ToolCallDelta,
        ToolCallFunctionDelta,
        Usage,
    )
    from aigateway.types.chat_params import (
        ChatCompletionCreateParams,
        ChatCompletionRequest,
        ChatMessageInput,
        ChatMessageParam,
        ContentPartParam,
        FunctionDefinitionParam,
        RequestOptions,
        ResponseFormatParam,
        ToolChoiceParam,
        ToolParam,
    )
    from aigateway.types.models import Model, ModelList
    from aigateway.types.requests import (
        ChatCompletionCreateRequest,
        ImageGenerateRequest,
        RequestModel,
        RunRequest,
        load_requests,
    )
    from aigateway.types.shared import ErrorBody, ErrorObject

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
    "ErrorBody": ".shared",
    "ErrorObject": ".shared",
}

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())


__all__ = [
    "ChatCompletion",
    "ChatCompletionChunk",
    "ChatCompletionCreateParams",
    "ChatCompletionCreateRequest",
    "ChatCompletionRequest",
    "ChatMessageInput",
    "ChatMessageParam",
    "Choice",
    "ChunkChoice",
    "ChunkDelta",
    "ContentPartParam",
    "ErrorBody",
    "ErrorObject",
    "FinishReason",
    "FunctionCall",
    "FunctionDefinitionParam",
    "ImageGenerateRequest",
    "Message",
    "Model",
    "ModelList",
    "RequestModel",
    "RequestOptions",
    "ResponseFormatParam",
    "RunRequest",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallFunctionDelta",
    "ToolChoiceParam",
    "ToolParam",
    "Usage",
    "load_requests",
]
