"""``retry_after`` carries the wait the gateway asked for whenever its reply gave one, retried
or not: with no retry allowed, after the retries ran out, and beyond the retry cap."""

from __future__ import annotations

import email.utils
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from aigateway import AsyncClient, Client, RateLimitError, ServiceUnavailableError

from .conftest import API_KEY, BASE_URL, Sleeps, resolve

pytestmark = pytest.mark.anyio
NOW = 1_800_000_000.0
HELLO = [{"role": "user", "content": "hi"}]
LIMITED = {"error": {"message": "slow down", "type": "rate_limit_error", "code": "rate_limited"}}


class Replies:
    """Answers every request with the same error reply; counts the requests."""

    def __init__(self) -> None:
        self.status = 429
        self.headers: dict[str, str] = {}
        self.calls = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.calls += 1
        return httpx.Response(self.status, json=LIMITED, headers=self.headers)


@pytest.fixture
def replies() -> Replies:
    return Replies()


@pytest.fixture
async def client(
    kind: str, sleeps: Sleeps, replies: Replies
) -> AsyncIterator[Client | AsyncClient]:
    """A client of ``kind`` on ``replies``: waits recorded, clock at NOW."""
    options: dict[str, Any] = {
        "api_key": API_KEY,
        "base_url": BASE_URL,
        "transport": httpx.MockTransport(replies),
        "retry_policy": sleeps.policy().with_changes(now=lambda: NOW),
    }
    if kind == "sync":
        with Client(**options) as sync_client:
            yield sync_client
    else:
        async with AsyncClient(**options) as async_client:
            yield async_client


async def chat(client: Client | AsyncClient, **options: Any) -> Any:
    return await resolve(client.chat.completions.create(model="m", messages=HELLO, **options))


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
    client: Client | AsyncClient,
    replies: Replies,
    sleeps: Sleeps,
    headers: dict[str, str],
    expected: float,
) -> None:
    replies.headers = headers
    with pytest.raises(RateLimitError) as caught:
        await chat(client, max_retries=0)
    assert caught.value.retry_after == pytest.approx(expected)
    assert (replies.calls, sleeps) == (1, [])
    assert "not retried" in str(caught.value)


async def test_the_last_429_after_the_retries_carries_the_wait(
    client: Client | AsyncClient, replies: Replies, sleeps: Sleeps
) -> None:
    replies.headers = {"Retry-After": "3"}
    with pytest.raises(RateLimitError) as caught:
        await chat(client, max_retries=2)
    assert sleeps == [3.0, 3.0]
    assert caught.value.retry_after == 3.0
    assert caught.value.attempts == 3
    assert "wait 3 s" in str(caught.value)
    assert "not retried" not in str(caught.value)


async def test_a_wait_beyond_the_cap_is_still_raised_at_once_with_it(
    client: Client | AsyncClient, replies: Replies, sleeps: Sleeps
) -> None:
    replies.headers = {"Retry-After": "600"}
    with pytest.raises(RateLimitError) as caught:
        await chat(client)
    assert (replies.calls, sleeps) == (1, [])
    assert caught.value.retry_after == 600.0


async def test_other_status_errors_carry_it_too_and_none_without_a_wait(
    client: Client | AsyncClient, replies: Replies
) -> None:
    replies.status, replies.headers = 503, {"Retry-After": "8"}
    with pytest.raises(ServiceUnavailableError) as caught:
        await chat(client, max_retries=0)
    assert caught.value.retry_after == 8.0
    replies.status, replies.headers = 429, {}
    with pytest.raises(RateLimitError) as limited:
        await chat(client, max_retries=0)
    assert limited.value.retry_after is None


async def test_a_batch_waits_out_a_429_its_client_would_not_retry(kind: str) -> None:
    from aigateway import arun_batch, run_batch
    from aigateway.testing import MockGateway

    gateway = MockGateway()
    gateway.faults.fail(429, times=1, retry_after=5)
    pauses: list[float] = []

    async def async_pause(seconds: float) -> None:
        pauses.append(seconds)

    items = [{"model": "gpt-4o", "messages": HELLO}]
    if kind == "sync":
        with gateway.client(max_retries=0) as client:
            results = run_batch(client, items, sleep=pauses.append, clock=gateway.clock.now)
    else:
        async with gateway.async_client(max_retries=0) as aclient:
            results = await arun_batch(aclient, items, sleep=async_pause, clock=gateway.clock.now)
    assert len(results.ok) == 1
    assert pauses == [5]
    assert len(gateway.requests) == 2
