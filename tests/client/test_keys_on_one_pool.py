"""``with_options(api_key=...)``: a client for another key on the same connection pool, with its
own credits, rate-limit values and limiter, low-balance warning, usage ledger and budget."""

from __future__ import annotations

import warnings
from decimal import Decimal
from typing import Any

import pytest

from aigateway import (
    BudgetExceededError,
    Client,
    ConfigurationError,
    LowBalanceWarning,
)
from aigateway.testing import Account, MockGateway

from ..conftest import in_process_client, resolve

pytestmark = pytest.mark.anyio

HELLO = [{"role": "user", "content": "hello"}]


async def chat(client: Any) -> Any:
    return await resolve(client.chat.completions.create(model="gpt-4o", messages=HELLO))


def charged(gateway: MockGateway, account: Account) -> list[Decimal]:
    """What the mock charged ``account``, call by call, exactly."""
    return [
        Decimal(repr(charge.amount))
        for charge in gateway.charges
        if charge.account_id == account.id
    ]


async def test_each_key_sends_its_own_key_and_keeps_its_own_state(
    gateway: MockGateway, kind: str
) -> None:
    other = gateway.create_account(7)  # below 10 credits: its replies warn of a low balance
    gateway.rate_limits.set("free_plan", other.key)  # 10 requests a minute, not 60
    async with in_process_client(kind, gateway, max_retries=0) as client:
        copy = client.with_options(api_key=other.key)
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            for _ in range(2):
                await chat(client)
            for _ in range(3):
                await chat(copy)
        assert copy._pipeline.http_client is client._pipeline.http_client  # one pool
    keys = [request.bearer_key for request in gateway.requests]
    assert keys == [gateway.api_key] * 2 + [other.key] * 3
    assert [type(warning.message) for warning in warned] == [LowBalanceWarning]  # the copy's
    assert client.remaining_credits == pytest.approx(gateway.credits(), abs=1e-6)
    assert copy.remaining_credits == pytest.approx(gateway.credits(other), abs=1e-6)
    assert client.last_rate_limit is not None
    assert copy.last_rate_limit is not None
    assert (client.last_rate_limit.limit, client.last_rate_limit.remaining) == (60, 58)
    assert (copy.last_rate_limit.limit, copy.last_rate_limit.remaining) == (10, 7)
    assert client.usage.total().requests == 2
    assert copy.usage.total().requests == 3
    # each ledger counts its key's charges from its second reply (the first has no balance
    # before it to compare with), exactly
    assert client.usage.exact_credits == sum(charged(gateway, gateway.account)[1:])
    assert copy.usage.exact_credits == sum(charged(gateway, other)[1:])


async def test_a_copy_for_another_key_has_its_own_rate_limiter(
    gateway: MockGateway, kind: str
) -> None:
    other = gateway.create_account(20)
    gateway.rate_limits.set("free_plan", other.key)
    async with in_process_client(kind, gateway, wait_for_rate_limit=True) as client:
        copy = client.with_options(api_key=other.key)
        for _ in range(10):  # the other key's whole minute
            await chat(copy)
        before = gateway.clock.now()
        await chat(client)  # this key's window is untouched: no wait
        assert gateway.clock.now() == before
        await chat(copy)  # waits for the other key's window to reset (on the mock's clock)
        assert gateway.clock.now() > before
    assert [request.bearer_key for request in gateway.requests].count(other.key) == 11


async def test_a_copy_for_another_key_has_a_budget_of_its_own(
    gateway: MockGateway, kind: str
) -> None:
    other = gateway.create_account(20)
    async with in_process_client(kind, gateway, max_retries=0, max_credits=0.001) as client:
        copy = client.with_options(api_key=other.key)
        assert await calls_until_refused(client) > 1
        assert await calls_until_refused(copy) > 1  # the first key's spending is not its own
    assert copy.usage.credits >= 0.001
    assert client.usage.credits >= 0.001


async def calls_until_refused(client: Any) -> int:
    """How many calls went before the credit budget refused one."""
    sent = 0
    while True:
        try:
            await chat(client)
        except BudgetExceededError:
            return sent
        sent += 1


async def test_a_copy_for_the_same_key_shares_the_state(gateway: MockGateway, kind: str) -> None:
    async with in_process_client(kind, gateway, max_retries=0) as client:
        same = client.with_options(api_key=f" {gateway.api_key} ", max_retries=1)
        await chat(same)
        assert same.usage is client.usage
        assert client.remaining_credits == same.remaining_credits is not None


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("", "non-empty string"),
        ("   ", "non-empty string"),
        (None, "got NoneType"),
        (42, "got int"),
        (b"sk-bytes-key", "got bytes"),
        ("sk-with space", "visible ASCII characters only"),
        ("sk-line\nbreak", "visible ASCII characters only"),
        ("sk-clé", "visible ASCII characters only"),
    ],
)
def test_the_key_is_checked_as_at_construction(
    gateway: MockGateway, key: Any, problem: str
) -> None:
    with gateway.client() as client, pytest.raises(ConfigurationError, match=problem) as caught:
        client.with_options(api_key=key)
    if isinstance(key, str | bytes) and key.strip():  # the message never quotes a key
        assert (key.decode() if isinstance(key, bytes) else key) not in str(caught.value)
    if key is not None:  # (None at construction means: read AIGATEWAY_API_KEY)
        with pytest.raises(ConfigurationError):
            Client(api_key=key, base_url=gateway.base_url)
