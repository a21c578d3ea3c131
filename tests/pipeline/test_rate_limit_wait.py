"""``RateLimitError.seconds_to_wait``: how long to wait before trying again, never None: the
wait the reply asked for, else the time until its window resets, else ``default_wait``.
The policy's clock is fixed at NOW; nothing sleeps."""

from __future__ import annotations

import pickle

import httpx
import pytest
import respx

from aigateway import AsyncClient, Client, RateLimitError
from aigateway.testing import MockGateway

from ..conftest import in_process_client
from ._reliability_helpers import NOW, create, failing

# The fixtures; pytest knows them as gateway, policy and reliable.
from ._reliability_helpers import gateway_fixture as gateway_fixture
from ._reliability_helpers import policy_fixture as policy_fixture
from ._reliability_helpers import reliable_fixture as reliable_fixture

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("headers", "asked", "wait"),
    [
        ({"Retry-After": "7"}, 7.0, 7.0),
        ({"retry-after-ms": "1500"}, 1.5, 1.5),
        # X-RateLimit-Reset only: a 429 without a remaining count means the window is spent
        ({"X-RateLimit-Reset": "20"}, 20.0, 20.0),
        ({"X-RateLimit-Reset": str(int(NOW) + 25)}, 25.0, 25.0),
        # the window is not spent (a concurrency limit, say): its reset is still the best guess
        ({"X-RateLimit-Remaining": "5", "X-RateLimit-Reset": "12"}, None, 12.0),
        # neither a wait nor a reset
        ({}, None, RateLimitError.default_wait),
        ({"Retry-After": "soon"}, None, RateLimitError.default_wait),
    ],
)
async def test_the_wait_is_always_a_number(
    reliable: Client | AsyncClient,
    gateway: respx.Router,
    headers: dict[str, str],
    asked: float | None,
    wait: float,
) -> None:
    gateway.post("/chat/completions").mock(return_value=failing(429, **headers))
    with pytest.raises(RateLimitError) as caught:
        await create(reliable, max_retries=0)
    error = caught.value
    assert error.retry_after == asked
    assert error.seconds_to_wait == pytest.approx(wait)
    assert pickle.loads(pickle.dumps(error)).seconds_to_wait == pytest.approx(wait)


def test_the_default_is_a_minute() -> None:
    assert RateLimitError.default_wait == 60.0


def test_an_error_not_raised_by_a_client_reads_the_headers_itself() -> None:
    request = httpx.Request("POST", "https://gateway.test/v1/chat/completions")
    response = httpx.Response(429, headers={"Retry-After": "3"}, request=request)
    error = RateLimitError("slow down", response=response, body=None)
    assert error.retry_after is None
    assert error.seconds_to_wait == 3.0


async def test_the_mock_gateways_429_gives_its_retry_after(kind: str) -> None:
    mock = MockGateway()
    mock.faults.fail(429, retry_after=4)
    async with in_process_client(kind, mock, max_retries=0) as client:
        with pytest.raises(RateLimitError) as caught:
            await create(client)
    assert caught.value.seconds_to_wait == 4.0
