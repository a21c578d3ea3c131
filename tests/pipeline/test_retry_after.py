"""``retry_after`` carries the wait the gateway asked for whenever its reply gave one, retried
or not: with no retry allowed, after the retries ran out, and beyond the retry cap. Waits are
recorded, never slept; the policy's clock is fixed at NOW."""

from __future__ import annotations

import email.utils

import pytest
import respx

from aigateway import AsyncClient, Client, RateLimitError, ServiceUnavailableError
from aigateway.testing import MockGateway

from ..conftest import Sleeps
from ._reliability_helpers import NOW, create, failing

# The fixtures; pytest knows them as gateway, policy and reliable.
from ._reliability_helpers import gateway_fixture as gateway_fixture
from ._reliability_helpers import policy_fixture as policy_fixture
from ._reliability_helpers import reliable_fixture as reliable_fixture

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "31"}, 31.0),
        ({"Retry-After": email.utils.formatdate(NOW + 45, usegmt=True)}, 45.0),
        ({"retry-after-ms": "1500"}, 1.5),
        ({"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "20"}, 20.0),
    ],
)
async def test_a_429_with_no_retry_left_carries_the_wait(
    reliable: Client | AsyncClient,
    gateway: respx.Router,
    sleeps: Sleeps,
    headers: dict[str, str],
    expected: float,
) -> None:
    route = gateway.post("/chat/completions").mock(return_value=failing(429, **headers))
    with pytest.raises(RateLimitError) as caught:
        await create(reliable, max_retries=0)
    assert caught.value.retry_after == pytest.approx(expected)
    assert (route.call_count, sleeps) == (1, [])
    assert "not retried" in str(caught.value)


async def test_the_last_429_after_the_retries_carries_the_wait(
    reliable: Client | AsyncClient, gateway: respx.Router, sleeps: Sleeps
) -> None:
    gateway.post("/chat/completions").mock(return_value=failing(429, **{"Retry-After": "3"}))
    with pytest.raises(RateLimitError) as caught:
        await create(reliable, max_retries=2)
    assert sleeps == [3.0, 3.0]
    assert caught.value.retry_after == 3.0
    assert caught.value.attempts == 3
    assert "wait 3 s" in str(caught.value)
    assert "not retried" not in str(caught.value)


async def test_other_status_errors_carry_it_too_and_none_without_a_wait(
    reliable: Client | AsyncClient, gateway: respx.Router
) -> None:
    route = gateway.post("/chat/completions")
    route.mock(return_value=failing(503, **{"Retry-After": "8"}))
    with pytest.raises(ServiceUnavailableError) as caught:
        await create(reliable, max_retries=0)
    assert caught.value.retry_after == 8.0
    route.mock(return_value=failing(429))
    with pytest.raises(RateLimitError) as limited:
        await create(reliable, max_retries=0)
    assert limited.value.retry_after is None


async def test_a_batch_waits_out_a_429_its_client_would_not_retry(kind: str) -> None:
    from aigateway import arun_batch, run_batch

    gateway = MockGateway()
    gateway.faults.fail(429, times=1, retry_after=5)
    pauses: list[float] = []

    async def async_pause(seconds: float) -> None:
        pauses.append(seconds)

    items = [{"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}]
    if kind == "sync":
        with gateway.client(max_retries=0) as client:
            results = run_batch(client, items, sleep=pauses.append, clock=gateway.clock.now)
    else:
        async with gateway.async_client(max_retries=0) as aclient:
            results = await arun_batch(aclient, items, sleep=async_pause, clock=gateway.clock.now)
    assert len(results.ok) == 1
    assert pauses == [5]
    assert len(gateway.requests) == 2
