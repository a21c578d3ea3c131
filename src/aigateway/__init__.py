"""aigateway: typed sync and async clients for the Unified AI Gateway.

    from aigateway import Client

    with Client(api_key="...", base_url="https://gateway.example.com/v1") as client:
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Hello"}]
        )
        print(reply.text)

Import stays cheap: every public name loads on first use (``_LAZY`` says from which module),
so ``import aigateway`` (and the ``aigateway`` command's ``--help``) loads neither httpx nor
pydantic; the mock gateway (`aigateway.testing`) and the optional extras load only when
imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aigateway._lazy import lazy_names
from aigateway._version import __version__

if TYPE_CHECKING:
    from aigateway._call.settings import Secret
    from aigateway._client.clients import AsyncClient, Client
    from aigateway._pipeline.flow import RawResponse
    from aigateway._pipeline.ledger import ModelUsage, UsageLedger
    from aigateway._pipeline.limits import RateLimit
    from aigateway._pipeline.request import new_idempotency_key
    from aigateway._pipeline.response import AsyncStreamedResponse, StreamedResponse
    from aigateway._pipeline.retry import RetryPolicy
    from aigateway._streams.chat_stream import (
        AsyncChatCompletionStream,
        ChatCompletionAccumulator,
        ChatCompletionStream,
        accumulate,
    )
    from aigateway._streams.streams import AsyncStream, Stream
    from aigateway._streams.websocket import AsyncChatSocket, ChatSocket
    from aigateway.errors import (
        AIGatewayError,
        APIConnectionError,
        APIError,
        APIResponseValidationError,
        APIStatusError,
        APITimeoutError,
        AuthenticationError,
        BadRequestError,
        BudgetExceededError,
        ConfigurationError,
        ConflictError,
        IncompleteStreamError,
        InsecureBaseURLWarning,
        InsufficientCreditsError,
        InternalServerError,
        InvalidRequestError,
        LengthFinishReasonError,
        LowBalanceWarning,
        NotFoundError,
        RateLimitError,
        RateLimitInfo,
        ResponseTooLargeError,
        ServiceUnavailableError,
        SharedStateError,
        SharedStateWarning,
        StreamConnectionError,
        StreamTimeoutError,
        StructuredOutputError,
    )
    from aigateway.helpers.batch import BatchResult, ItemResult, arun_batch, run_batch
    from aigateway.helpers.structured import pydantic_function_tool
    from aigateway.helpers.tools import (
        MaxRoundsExceededError,
        Tool,
        ToolRunResult,
        arun_tools,
        run_tools,
        tool,
    )
    from aigateway.types import ChatCompletion, ChatCompletionChunk, Message, Model, ModelList
    from aigateway.types.chat import ParsedChatCompletion
    from aigateway.types.fallbacks import FailedAttempt, FallbackInfo
    from aigateway.types.services import RunResult

_LAZY = {
    "AsyncClient": "aigateway._client.clients",
    "Client": "aigateway._client.clients",
    "Secret": "aigateway._call.settings",
    "RawResponse": "aigateway._pipeline.flow",
    "new_idempotency_key": "aigateway._pipeline.request",
    "FailedAttempt": "aigateway.types.fallbacks",
    "FallbackInfo": "aigateway.types.fallbacks",
    "ModelUsage": "aigateway._pipeline.ledger",
    "UsageLedger": "aigateway._pipeline.ledger",
    "RetryPolicy": "aigateway._pipeline.retry",
    "AIGatewayError": "aigateway.errors",
    "APIConnectionError": "aigateway.errors",
    "APIError": "aigateway.errors",
    "APIResponseValidationError": "aigateway.errors",
    "APIStatusError": "aigateway.errors",
    "APITimeoutError": "aigateway.errors",
    "AuthenticationError": "aigateway.errors",
    "BadRequestError": "aigateway.errors",
    "BudgetExceededError": "aigateway.errors",
    "ConfigurationError": "aigateway.errors",
    "ConflictError": "aigateway.errors",
    "IncompleteStreamError": "aigateway.errors",
    "InsecureBaseURLWarning": "aigateway.errors",
    "InsufficientCreditsError": "aigateway.errors",
    "InternalServerError": "aigateway.errors",
    "InvalidRequestError": "aigateway.errors",
    "LengthFinishReasonError": "aigateway.errors",
    "LowBalanceWarning": "aigateway.errors",
    "NotFoundError": "aigateway.errors",
    "RateLimitError": "aigateway.errors",
    "RateLimitInfo": "aigateway.errors",
    "ResponseTooLargeError": "aigateway.errors",
    "ServiceUnavailableError": "aigateway.errors",
    "SharedStateError": "aigateway.errors",
    "SharedStateWarning": "aigateway.errors",
    "RateLimit": "aigateway._pipeline.limits",
    "StreamConnectionError": "aigateway.errors",
    "StreamTimeoutError": "aigateway.errors",
    "StructuredOutputError": "aigateway.errors",
    "Stream": "aigateway._streams.streams",
    "StreamedResponse": "aigateway._pipeline.response",
    "AsyncStreamedResponse": "aigateway._pipeline.response",
    "AsyncStream": "aigateway._streams.streams",
    "ChatCompletionAccumulator": "aigateway._streams.chat_stream",
    "ChatCompletionStream": "aigateway._streams.chat_stream",
    "AsyncChatCompletionStream": "aigateway._streams.chat_stream",
    "accumulate": "aigateway._streams.chat_stream",
    "ChatSocket": "aigateway._streams.websocket",
    "AsyncChatSocket": "aigateway._streams.websocket",
    "ChatCompletion": "aigateway.types",
    "ChatCompletionChunk": "aigateway.types",
    "Message": "aigateway.types",
    "Model": "aigateway.types",
    "ModelList": "aigateway.types",
    "RunResult": ".types.services",
    "MaxRoundsExceededError": ".helpers.tools",
    "Tool": ".helpers.tools",
    "ToolRunResult": ".helpers.tools",
    "arun_tools": ".helpers.tools",
    "run_tools": ".helpers.tools",
    "tool": ".helpers.tools",
    "ParsedChatCompletion": ".types.chat",
    "pydantic_function_tool": ".helpers.structured",
    "run_batch": ".helpers.batch",
    "arun_batch": ".helpers.batch",
    "BatchResult": ".helpers.batch",
    "ItemResult": ".helpers.batch",
}


if not TYPE_CHECKING:  # checkers see the imports above: a name not among them is an error
    __getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())


__all__ = [
    "AIGatewayError",
    "APIConnectionError",
    "APIError",
    "APIResponseValidationError",
    "APIStatusError",
    "APITimeoutError",
    "AsyncChatCompletionStream",
    "AsyncChatSocket",
    "AsyncClient",
    "AsyncStream",
    "AsyncStreamedResponse",
    "BatchResult",
    "AuthenticationError",
    "BadRequestError",
    "BudgetExceededError",
    "ChatCompletion",
    "ChatCompletionAccumulator",
    "ChatCompletionChunk",
    "ChatCompletionStream",
    "ChatSocket",
    "Client",
    "ConfigurationError",
    "ConflictError",
    "FailedAttempt",
    "FallbackInfo",
    "IncompleteStreamError",
    "InsecureBaseURLWarning",
    "InsufficientCreditsError",
    "InternalServerError",
    "InvalidRequestError",
    "LengthFinishReasonError",
    "ItemResult",
    "LowBalanceWarning",
    "Message",
    "Model",
    "ModelList",
    "ModelUsage",
    "NotFoundError",
    "ParsedChatCompletion",
    "RateLimitError",
    "RateLimitInfo",
    "RawResponse",
    "ResponseTooLargeError",
    "RetryPolicy",
    "RunResult",
    "Secret",
    "ServiceUnavailableError",
    "SharedStateError",
    "SharedStateWarning",
    "RateLimit",
    "Stream",
    "StreamConnectionError",
    "StreamedResponse",
    "StreamTimeoutError",
    "UsageLedger",
    "__version__",
    "new_idempotency_key",
    "accumulate",
    "MaxRoundsExceededError",
    "Tool",
    "ToolRunResult",
    "arun_tools",
    "run_tools",
    "tool",
    "StructuredOutputError",
    "pydantic_function_tool",
    "arun_batch",
    "run_batch",
]
