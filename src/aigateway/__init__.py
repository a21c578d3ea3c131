"""aigateway: typed sync and async clients for the Unified AI Gateway.

    from aigateway import Client

    with Client(api_key="...", base_url="https://gateway.example.com/v1") as client:
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Hello"}]
        )
        print(reply.text)

The public names are listed once, in `aigateway._exports`, each with the module defining it:
``__all__`` is that list, and a name is imported on first use, so ``import aigateway`` (and the
``aigateway`` command's ``--help``) loads neither httpx nor pydantic; the mock gateway
(`aigateway.testing`) and the optional extras load only when imported. The imports under
``TYPE_CHECKING`` show the same names to type checkers (``X as X`` re-exports them); a test
checks that they match the list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aigateway._exports import EXPORTS
from aigateway._lazy import lazy_names
from aigateway._version import __version__

if TYPE_CHECKING:
    from aigateway._call.settings import Secret as Secret
    from aigateway._client.clients import AsyncClient as AsyncClient
    from aigateway._client.clients import Client as Client
    from aigateway._pipeline.ledger import ModelUsage as ModelUsage
    from aigateway._pipeline.ledger import UsageLedger as UsageLedger
    from aigateway._pipeline.limits import RateLimit as RateLimit
    from aigateway._pipeline.request import new_idempotency_key as new_idempotency_key
    from aigateway._pipeline.response import AsyncStreamedResponse as AsyncStreamedResponse
    from aigateway._pipeline.response import RawResponse as RawResponse
    from aigateway._pipeline.response import StreamedResponse as StreamedResponse
    from aigateway._pipeline.retry import RetryPolicy as RetryPolicy
    from aigateway._pipeline.retry_strategies import retry_if_transient as retry_if_transient
    from aigateway._pipeline.retry_strategies import wait_backoff as wait_backoff
    from aigateway._pipeline.retry_strategies import (
        wait_server_requested as wait_server_requested,
    )
    from aigateway._streams.chat_stream import (
        AsyncChatCompletionStream as AsyncChatCompletionStream,
    )
    from aigateway._streams.chat_stream import (
        ChatCompletionAccumulator as ChatCompletionAccumulator,
    )
    from aigateway._streams.chat_stream import ChatCompletionStream as ChatCompletionStream
    from aigateway._streams.chat_stream import accumulate as accumulate
    from aigateway._streams.opening import Opening as Opening
    from aigateway._streams.sockets import AsyncChatSocket as AsyncChatSocket
    from aigateway._streams.sockets import ChatSocket as ChatSocket
    from aigateway._streams.streams import AsyncStream as AsyncStream
    from aigateway._streams.streams import Stream as Stream
    from aigateway.errors import AIGatewayError as AIGatewayError
    from aigateway.errors import APIConnectionError as APIConnectionError
    from aigateway.errors import APIError as APIError
    from aigateway.errors import APIResponseValidationError as APIResponseValidationError
    from aigateway.errors import APIStatusError as APIStatusError
    from aigateway.errors import APITimeoutError as APITimeoutError
    from aigateway.errors import AuthenticationError as AuthenticationError
    from aigateway.errors import BadRequestError as BadRequestError
    from aigateway.errors import BudgetExceededError as BudgetExceededError
    from aigateway.errors import ConfigurationError as ConfigurationError
    from aigateway.errors import ConflictError as ConflictError
    from aigateway.errors import HTTPClientTypeError as HTTPClientTypeError
    from aigateway.errors import IncompleteStreamError as IncompleteStreamError
    from aigateway.errors import InsecureBaseURLWarning as InsecureBaseURLWarning
    from aigateway.errors import InsufficientCreditsError as InsufficientCreditsError
    from aigateway.errors import InternalServerError as InternalServerError
    from aigateway.errors import InvalidRequestError as InvalidRequestError
    from aigateway.errors import LengthFinishReasonError as LengthFinishReasonError
    from aigateway.errors import LowBalanceWarning as LowBalanceWarning
    from aigateway.errors import MaxRoundsExceededError as MaxRoundsExceededError
    from aigateway.errors import NotFoundError as NotFoundError
    from aigateway.errors import PermissionDeniedError as PermissionDeniedError
    from aigateway.errors import RateLimitError as RateLimitError
    from aigateway.errors import ResponseTooLargeError as ResponseTooLargeError
    from aigateway.errors import ServiceUnavailableError as ServiceUnavailableError
    from aigateway.errors import SharedStateError as SharedStateError
    from aigateway.errors import SharedStateWarning as SharedStateWarning
    from aigateway.errors import StreamConnectionError as StreamConnectionError
    from aigateway.errors import StreamTimeoutError as StreamTimeoutError
    from aigateway.errors import StructuredOutputError as StructuredOutputError
    from aigateway.errors import UnprocessableEntityError as UnprocessableEntityError
    from aigateway.helpers._runner import ToolRunResult as ToolRunResult
    from aigateway.helpers.batch import BatchResult as BatchResult
    from aigateway.helpers.batch import ItemResult as ItemResult
    from aigateway.helpers.batch import arun_batch as arun_batch
    from aigateway.helpers.batch import run_batch as run_batch
    from aigateway.helpers.tools import Tool as Tool
    from aigateway.helpers.tools import arun_tools as arun_tools
    from aigateway.helpers.tools import run_tools as run_tools
    from aigateway.helpers.tools import tool as tool
    from aigateway.resources._structured import pydantic_function_tool as pydantic_function_tool
    from aigateway.types.chat import ChatCompletion as ChatCompletion
    from aigateway.types.chat import ChatCompletionChunk as ChatCompletionChunk
    from aigateway.types.chat import Message as Message
    from aigateway.types.chat import ParsedChatCompletion as ParsedChatCompletion
    from aigateway.types.fallbacks import FailedAttempt as FailedAttempt
    from aigateway.types.fallbacks import FallbackInfo as FallbackInfo
    from aigateway.types.models import Model as Model
    from aigateway.types.models import ModelList as ModelList
    from aigateway.types.rate_limits import RateLimitInfo as RateLimitInfo
    from aigateway.types.services import RunResult as RunResult

__all__ = ["__version__", *EXPORTS]

if not TYPE_CHECKING:  # checkers see the imports above
    __getattr__, __dir__ = lazy_names(__name__, EXPORTS, globals())
