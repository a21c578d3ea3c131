"""aigateway's own clients wired to a mock gateway: the one module of the mock that imports them.

The mock serves any client (the official ``openai`` SDK, plain httpx), so the rest of
`aigateway.testing` imports nothing of the client side but `aigateway.types` and
`aigateway.errors`; `MockGateway.client`, `MockGateway.async_client` and the scorecard get
our `Client` and `AsyncClient` here.
"""

from __future__ import annotations

from typing import Any

from aigateway._client.clients import AsyncClient, Client
from aigateway._pipeline.retry import RetryPolicy
from aigateway.testing._core.clock import MockClock
from aigateway.testing._serving.transport import MockTransport

__all__ = [
    "AsyncClient",
    "Client",
    "in_process_async_client",
    "in_process_client",
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


def _in_process(transport: MockTransport, api_key: str, options: dict[str, Any]) -> dict[str, Any]:
    """The arguments of a client sending through ``transport``: retry waits move the
    gateway's clock unless ``options`` has a ``retry_policy``."""
    state = transport.state
    options.setdefault("retry_policy", mock_time_retry_policy(state.clock))
    return {"api_key": api_key, "base_url": state.base_url, "transport": transport, **options}


def in_process_client(transport: MockTransport, api_key: str, **options: Any) -> Client:
    """A `Client` sending through ``transport`` (a gateway in this process)."""
    return Client(**_in_process(transport, api_key, options))


def in_process_async_client(transport: MockTransport, api_key: str, **options: Any) -> AsyncClient:
    """An `AsyncClient` sending through ``transport`` (a gateway in this process)."""
    return AsyncClient(**_in_process(transport, api_key, options))


def served_client(
    base_url: str, api_key: str, *, first_wait: float, max_wait: float, **options: Any
) -> Client:
    """A `Client` of a gateway served at ``base_url``, its retries waiting ``first_wait``
    seconds first (backing off from there) and at most ``max_wait``."""
    policy = RetryPolicy(initial_wait=first_wait, max_wait=max_wait)
    return Client(api_key=api_key, base_url=base_url, retry_policy=policy, **options)
