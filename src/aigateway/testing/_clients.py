"""Clients wired to a mock gateway in-process: aigateway's own (the one module of the mock that
imports them) and the official ``openai`` SDK's.

The mock serves any client (the official ``openai`` SDK, plain httpx or httpx2), so the rest of
`aigateway.testing` imports nothing of the client side but `aigateway.types` and
`aigateway.errors`; `MockGateway.client`, `MockGateway.async_client` and the scorecard get
our `Client` and `AsyncClient` here, and `MockGateway.openai_client` and
`MockGateway.async_openai_client` an ``openai.OpenAI`` / ``openai.AsyncOpenAI`` (``openai``
imported only then: it is not a dependency of aigateway).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from aigateway._client.clients import AsyncClient, Client
from aigateway._pipeline.retry import RetryPolicy
from aigateway._stacks import get, stack_of
from aigateway.testing._core.clock import MockClock
from aigateway.testing._serving.inprocess import InProcessTransport
from aigateway.testing._serving.transport import in_process_transport

if TYPE_CHECKING:
    from aigateway.testing._core.state import GatewayState

__all__ = [
    "AsyncClient",
    "Client",
    "in_process_async_client",
    "in_process_client",
    "in_process_openai",
    "mock_time_retry_policy",
    "served_client",
]


def mock_time_retry_policy(clock: MockClock) -> RetryPolicy:
    """A retry policy whose waits move the mock clock instead of sleeping, and whose ``now``
    is the mock clock, so ``Retry-After`` and ``X-RateLimit-Reset`` line up with the mock's
    rate-limit windows."""

    def sleep(seconds: float) -> None:
        clock.advance(seconds)

    async def async_sleep(seconds: float) -> None:
        clock.advance(seconds)

    return RetryPolicy(sleep=sleep, async_sleep=async_sleep, now=clock.now, monotonic=clock.now)


def _in_process(
    transport: InProcessTransport, api_key: str, options: dict[str, Any]
) -> dict[str, Any]:
    """The arguments of a client sending through ``transport``: retry waits move the
    gateway's clock unless ``options`` has a ``retry_policy``."""
    state = transport.state
    options.setdefault("retry_policy", mock_time_retry_policy(state.clock))
    return {"api_key": api_key, "base_url": state.base_url, "transport": transport, **options}


def in_process_client(transport: InProcessTransport, api_key: str, **options: Any) -> Client:
    """A `Client` sending through ``transport`` (a gateway in this process)."""
    return Client(**_in_process(transport, api_key, options))


def in_process_async_client(
    transport: InProcessTransport, api_key: str, **options: Any
) -> AsyncClient:
    """An `AsyncClient` sending through ``transport`` (a gateway in this process)."""
    return AsyncClient(**_in_process(transport, api_key, options))


def in_process_openai(
    state: GatewayState, api_key: str, *, asynchronous: bool, options: dict[str, Any]
) -> Any:
    """An ``openai.OpenAI`` (``openai.AsyncOpenAI`` when ``asynchronous``) of the gateway of
    ``state``, in-process, through the transport for the HTTP library that SDK is built on
    (httpx2 from openai 3.0, httpx before); ``options`` go to the SDK's client."""
    if "http_client" in options:
        raise TypeError(
            "openai_client() makes the SDK's http_client itself (wired to the mock gateway); "
            "to bring your own, pass http_client=httpx2.Client(transport="
            'gateway.transport("httpx2")) to openai.OpenAI'
        )
    try:
        openai = importlib.import_module("openai")
    except ModuleNotFoundError as exc:
        if exc.name != "openai":
            raise
        raise ImportError(
            "MockGateway.openai_client() and async_openai_client() need the official openai "
            "package, which aigateway does not install: python -m pip install openai",
            name="openai",
        ) from exc
    default = getattr(openai, "DefaultHttpxClient", None)
    stack = stack_of(default) or get("httpx")  # older SDKs without that class are on httpx
    http_type = stack.module.AsyncClient if asynchronous else stack.module.Client
    http_client = http_type(transport=in_process_transport(state, stack.name))
    sdk_type = openai.AsyncOpenAI if asynchronous else openai.OpenAI
    return sdk_type(base_url=state.base_url, api_key=api_key, http_client=http_client, **options)


def served_client(
    base_url: str, api_key: str, *, first_wait: float, max_wait: float, **options: Any
) -> Client:
    """A `Client` of a gateway served at ``base_url``, its retries waiting ``first_wait``
    seconds first (backing off from there) and at most ``max_wait``."""
    policy = RetryPolicy(initial_wait=first_wait, max_wait=max_wait)
    return Client(api_key=api_key, base_url=base_url, retry_policy=policy, **options)
