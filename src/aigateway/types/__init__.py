"""Typed request parameters and reply models, a module per resource."""

from .chat import (
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
from .chat_params import (
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
from .models import Model, ModelList
from .shared import ErrorBody, ErrorObject

__all__ = [
    "ChatCompletion",
    "ChatCompletionChunk",
    "ChatCompletionCreateParams",
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
    "Message",
    "Model",
    "ModelList",
    "RequestOptions",
    "ResponseFormatParam",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallFunctionDelta",
    "ToolChoiceParam",
    "ToolParam",
    "Usage",
]
