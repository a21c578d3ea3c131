"""The public surface: every name ``aigateway`` exports, with the module that defines it.

This is the one list. ``aigateway.__all__`` is its names, ``aigateway`` imports each from its
module on first use (so ``import aigateway`` stays cheap), and the package's ``TYPE_CHECKING``
imports show the same names to type checkers (tests/package/test_import.py checks that they match).
It imports nothing, so the bottom layer can read it too: `aigateway._display` names an
exported class ``aigateway.Name``.
"""

from __future__ import annotations

__all__ = ["EXPORTS"]

EXPORTS: dict[str, str] = {
    # the clients and their configuration
    "Client": "aigateway._client.clients",
    "AsyncClient": "aigateway._client.clients",
    "Secret": "aigateway._call.settings",
    "RetryPolicy": "aigateway._pipeline.retry",
    "wait_server_requested": "aigateway._pipeline.retry_strategies",
    "wait_backoff": "aigateway._pipeline.retry_strategies",
    "retry_if_transient": "aigateway._pipeline.retry_strategies",
    "RateLimit": "aigateway._pipeline.limits",
    "new_idempotency_key": "aigateway._pipeline.request",
    "RawResponse": "aigateway._pipeline.response",
    "StreamedResponse": "aigateway._pipeline.response",
    "AsyncStreamedResponse": "aigateway._pipeline.response",
    # usage, fallbacks and rate limits
    "UsageLedger": "aigateway._pipeline.ledger",
    "ModelUsage": "aigateway._pipeline.ledger",
    "FallbackInfo": "aigateway.types.fallbacks",
    "FailedAttempt": "aigateway.types.fallbacks",
    "RateLimitInfo": "aigateway.types.rate_limits",
    # streams and sockets
    "Stream": "aigateway._streams.streams",
    "AsyncStream": "aigateway._streams.streams",
    "ChatCompletionStream": "aigateway._streams.chat_stream",
    "AsyncChatCompletionStream": "aigateway._streams.chat_stream",
    "ChatCompletionAccumulator": "aigateway._streams.chat_stream",
    "accumulate": "aigateway._streams.chat_stream",
    "ChatSocket": "aigateway._streams.sockets",
    "AsyncChatSocket": "aigateway._streams.sockets",
    "Opening": "aigateway._streams.opening",
    # replies
    "ChatCompletion": "aigateway.types.chat",
    "ChatCompletionChunk": "aigateway.types.chat",
    "Message": "aigateway.types.chat",
    "ParsedChatCompletion": "aigateway.types.chat",
    "Model": "aigateway.types.models",
    "ModelList": "aigateway.types.models",
    "RunResult": "aigateway.types.services",
    # tools, structured outputs and batches
    "Tool": "aigateway.helpers.tools",
    "ToolRunResult": "aigateway.helpers._runner",
    "tool": "aigateway.helpers.tools",
    "run_tools": "aigateway.helpers.tools",
    "arun_tools": "aigateway.helpers.tools",
    "pydantic_function_tool": "aigateway.resources._structured",
    "run_batch": "aigateway.helpers.batch",
    "arun_batch": "aigateway.helpers.batch",
    "BatchResult": "aigateway.helpers.batch",
    "ItemResult": "aigateway.helpers.batch",
    # errors and warnings (the tree is drawn in aigateway/errors.py)
    "AIGatewayError": "aigateway.errors",
    "ConfigurationError": "aigateway.errors",
    "HTTPClientTypeError": "aigateway.errors",
    "InvalidRequestError": "aigateway.errors",
    "BudgetExceededError": "aigateway.errors",
    "SharedStateError": "aigateway.errors",
    "MaxRoundsExceededError": "aigateway.errors",
    "APIError": "aigateway.errors",
    "APIConnectionError": "aigateway.errors",
    "APITimeoutError": "aigateway.errors",
    "APIResponseValidationError": "aigateway.errors",
    "StructuredOutputError": "aigateway.errors",
    "LengthFinishReasonError": "aigateway.errors",
    "ResponseTooLargeError": "aigateway.errors",
    "IncompleteStreamError": "aigateway.errors",
    "StreamConnectionError": "aigateway.errors",
    "StreamTimeoutError": "aigateway.errors",
    "APIStatusError": "aigateway.errors",
    "BadRequestError": "aigateway.errors",
    "AuthenticationError": "aigateway.errors",
    "InsufficientCreditsError": "aigateway.errors",
    "PermissionDeniedError": "aigateway.errors",
    "NotFoundError": "aigateway.errors",
    "ConflictError": "aigateway.errors",
    "UnprocessableEntityError": "aigateway.errors",
    "RateLimitError": "aigateway.errors",
    "InternalServerError": "aigateway.errors",
    "ServiceUnavailableError": "aigateway.errors",
    "InsecureBaseURLWarning": "aigateway.errors",
    "LowBalanceWarning": "aigateway.errors",
    "SharedStateWarning": "aigateway.errors",
}
"""Public name -> the module defining it (never one that only re-exports it)."""
