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

from ._lazy import lazy_names
from ._version import __version__

if TYPE_CHECKING:
    from ._chat_stream import (
        AsyncChatCompletionStream,
        ChatCompletionAccumulator,
        ChatCompletionStream,
        accumulate,
    )
    from ._client import AsyncClient, Client
    from ._config import Secret
    from ._http import RawResponse
    from ._ledger import FailedAttempt, FallbackInfo, ModelUsage, UsageLedger
    from ._limits import RateLimit
    from ._request_builder import new_idempotency_key
    from ._response import AsyncStreamedResponse, StreamedResponse
    from ._retry import RetryPolicy
    from ._streaming import AsyncStream, Stream
    from ._websocket import AsyncChatSocket, ChatSocket
    from .errors import (
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
    from .helpers.batch import BatchResult, ItemResult, arun_batch, run_batch
    from .helpers.structured import pydantic_function_tool
    from .helpers.tools import (
        MaxRoundsExceededError,
        Tool,
        ToolRunResult,
        arun_tools,
        run_tools,
        tool,
    )
    from .types import ChatCompletion, ChatCompletionChunk, Message, Model, ModelList
    from .types.chat import ParsedChatCompletion
    from .types.services import RunResult

_LAZY = {
    "AsyncClient": "._client",
    "Client": "._client",
    "Secret": "._config",
    "RawResponse": "._http",
    "new_idempotency_key": "._request_builder",
    "FailedAttempt": "._ledger",
    "FallbackInfo": "._ledger",
    "ModelUsage": "._ledger",
    "UsageLedger": "._ledger",
    "RetryPolicy": "._retry",
    "AIGatewayError": ".errors",
    "APIConnectionError": ".errors",
    "APIError": ".errors",
    "APIResponseValidationError": ".errors",
    "APIStatusError": ".errors",
    "APITimeoutError": ".errors",
    "AuthenticationError": ".errors",
    "BadRequestError": ".errors",
    "BudgetExceededError": ".errors",
    "ConfigurationError": ".errors",
    "ConflictError": ".errors",
    "IncompleteStreamError": ".errors",
    "InsecureBaseURLWarning": ".errors",
    "InsufficientCreditsError": ".errors",
    "InternalServerError": ".errors",
    "InvalidRequestError": ".errors",
    "LengthFinishReasonError": ".errors",
    "LowBalanceWarning": ".errors",
    "NotFoundError": ".errors",
    "RateLimitError": ".errors",
    "RateLimitInfo": ".errors",
    "ResponseTooLargeError": ".errors",
    "ServiceUnavailableError": ".errors",
    "SharedStateError": ".errors",
    "SharedStateWarning": ".errors",
    "RateLimit": "._limits",
    "StreamConnectionError": ".errors",
    "StreamTimeoutError": ".errors",
    "StructuredOutputError": ".errors",
    "Stream": "._streaming",
    "StreamedResponse": "._response",
    "AsyncStreamedResponse": "._response",
    "AsyncStream": "._streaming",
    "ChatCompletionAccumulator": "._chat_stream",
    "ChatCompletionStream": "._chat_stream",
    "AsyncChatCompletionStream": "._chat_stream",
    "accumulate": "._chat_stream",
    "ChatSocket": "._websocket",
    "AsyncChatSocket": "._websocket",
    "ChatCompletion": ".types",
    "ChatCompletionChunk": ".types",
    "Message": ".types",
    "Model": ".types",
    "ModelList": ".types",
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
