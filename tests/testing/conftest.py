"""Fixtures for the mock gateway's wire-level tests: plain httpx clients, no SDK client."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from aigateway.testing import MockGateway

from ..conftest import in_process_client
from ._helpers import user


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def gateway() -> MockGateway:
    return MockGateway(seed=7)


@pytest.fixture
def client(gateway: MockGateway) -> Iterator[httpx.Client]:
    with httpx.Client(
        transport=gateway.transport(),
        base_url=gateway.base_url,
        headers={"Authorization": f"Bearer {gateway.api_key}"},
    ) as http:
        yield http


@pytest.fixture
def chat(client: httpx.Client) -> Callable[..., httpx.Response]:
    """POST /chat/completions with the fields given (model and messages defaulted)."""

    def post(**body: Any) -> httpx.Response:
        body.setdefault("model", "gpt-4o")
        body.setdefault("messages", user())
        return client.post("/chat/completions", json=body)

    return post


@pytest.fixture(params=["sync", "async"])
async def ours(request: pytest.FixtureRequest, gateway: MockGateway) -> Any:
    async with in_process_client(request.param, gateway, max_retries=0) as client:
        yield client
