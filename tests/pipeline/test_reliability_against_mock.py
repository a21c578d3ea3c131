"""The clients' reliability against the mock gateway: faults, rate limits, idempotency and an
exact ledger under concurrency. In-process clients wait on the mock clock, never for real."""

from __future__ import annotations

from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any

import anyio
import httpx
import pytest

from aigateway import (
    APIConnectionError,
    AsyncClient,
    Client,
    InsufficientCreditsError,
    RateLimitError,
    ServiceUnavailableError,
)
from aigateway.testing import MockGateway, RateLimits

from ..conftest import in_process_client, resolve

pytestmark = pytest.mark.anyio
HELLO = [{"role": "user", "content": "Hello there"}]


@pytest.fixture
def gateway() -> MockGateway:
    return MockGateway(seed=5)


@pytest.fixture(params=["sync", "async"])
async def mock_client(
    request: pytest.FixtureRequest, gateway: MockGateway
) -> AsyncIterator[Client | AsyncClient]:
    async with in_process_client(request.param, gateway) as client:
        yield client


def raw_create(client: Client | AsyncClient, **options: Any) -> Any:
    return resolve(
        client.chat.completions.with_raw_response.create(
            model="gpt-4o-mini", messages=HELLO, **options
        )
    )


async def test_a_503_is_retried_and_the_wait_passes_on_the_mock_clock(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    gateway.faults.fail(503)
    start = gateway.clock.now()
    raw = await raw_create(mock_client)
    assert raw.attempts == 2
    assert 0.75 <= gateway.clock.now() - start <= 1.25  # the backoff, on mock time


async def test_503s_beyond_the_budget_raise_with_the_attempts(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    gateway.faults.fail(503, times=3)
    with pytest.raises(ServiceUnavailableError) as caught:
        await raw_create(mock_client, max_retries=2)
    assert caught.value.attempts == 3


async def test_a_spent_minute_waits_for_the_reset_and_goes_on(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    gateway.rate_limits.set("free_plan")
    gateway.clock.set(1_700_000_080)  # 20 s before the minute ends
    for _ in range(10):
        await raw_create(mock_client)
    raw = await raw_create(mock_client)
    assert raw.attempts == 2  # a 429 with Retry-After: 20, then success
    assert gateway.clock.now() == 1_700_000_100
    assert mock_client.last_rate_limit is not None
    assert mock_client.last_rate_limit.remaining == 9


async def test_wait_for_rate_limit_avoids_the_429(gateway: MockGateway) -> None:
    gateway.rate_limits.set("free_plan")
    gateway.clock.set(1_700_000_080)
    async with gateway.async_client(wait_for_rate_limit=True) as client:
        for _ in range(11):
            await raw_create(client)
    statuses = [r.path for r in gateway.requests]
    assert len(statuses) == 11  # no request was refused and retried
    assert gateway.clock.now() == 1_700_000_100


async def test_a_reset_beyond_the_cap_raises_at_once(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    gateway.rate_limits.set(RateLimits(requests_per_day=1))
    await raw_create(mock_client)
    with pytest.raises(RateLimitError) as caught:
        await raw_create(mock_client)
    assert caught.value.attempts == 1
    assert caught.value.retry_after is not None
    assert caught.value.retry_after > 60
    assert len(gateway.requests) == 2


async def test_an_idempotent_call_whose_reply_was_lost_is_charged_once(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    gateway.faults.drop(after_processing=True)
    raw = await raw_create(mock_client, idempotency_key="order-42")
    assert raw.attempts == 2
    assert raw.headers["idempotent-replayed"] == "true"
    assert len(gateway.charges) == 1


async def test_without_a_key_the_lost_reply_is_performed_again(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    gateway.faults.drop(after_processing=True)
    await raw_create(mock_client)
    assert len(gateway.charges) == 2  # why acts on the world need a key


async def test_generated_keys_charge_once_too(gateway: MockGateway) -> None:
    gateway.faults.drop(after_processing=True)
    with gateway.client(auto_idempotency_keys=True) as client:
        raw = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=HELLO)
    assert raw.attempts == 2
    assert len(gateway.charges) == 1


async def test_a_stream_cut_after_data_raises_and_is_not_retried(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    gateway.faults.drop_mid_stream(after_events=3)
    stream = await resolve(
        mock_client.chat.completions.create(model="gpt-4o", messages=HELLO, stream=True)
    )
    received: list[Any] = []
    with pytest.raises(APIConnectionError):
        await collect(stream, received)
    assert len(received) == 3
    assert len(gateway.requests) == 1


async def test_a_stream_that_times_out_before_its_first_event_is_retried(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    gateway.faults.latency(5.0, between_chunks=True, times=1)
    stream = await resolve(
        mock_client.chat.completions.create(
            model="gpt-4o", messages=HELLO, stream=True, timeout=httpx.Timeout(60, read=2)
        )
    )
    chunks = await collect(stream, [])
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert len(gateway.requests) == 2


async def collect(stream: Any, into: list[Any]) -> list[Any]:
    if hasattr(stream, "__aiter__"):
        async for chunk in stream:
            into.append(chunk)
    else:
        for chunk in stream:
            into.append(chunk)
    return into


# -- the ledger under concurrency ---------------------------------------------------------------


def ledger_is_exact(gateway: MockGateway, starts: dict[str, Decimal], ok_ids: set[str]) -> None:
    """Each account's start minus its charges is its balance; charged requests are exactly the
    successful ones, each once."""
    charges = gateway.charges
    charged_ids = [charge.request_id for charge in charges]
    assert sorted(charged_ids) == sorted(ok_ids)
    for account in gateway.ledger.accounts:
        spent = sum(
            (Decimal(repr(c.amount)) for c in charges if c.account_id == account.id), Decimal(0)
        )
        assert starts[account.key] - spent == pytest.approx(account.balance, abs=Decimal("1e-9"))


def concurrent_gateway() -> tuple[MockGateway, list[str], dict[str, Decimal]]:
    gateway = MockGateway(seed=9, rate_limits="unlimited", credits=5)
    keys = [gateway.api_key, gateway.create_account(3).key, gateway.create_account(0.05).key]
    starts = {key: gateway.ledger.balance(key) for key in keys}
    return gateway, keys, starts


@pytest.mark.filterwarnings("ignore::aigateway.LowBalanceWarning")
def test_the_ledger_is_exact_under_200_concurrent_threads() -> None:
    gateway, keys, starts = concurrent_gateway()
    clients = [gateway.client(api_key=key, max_retries=0) for key in keys]

    def call(index: int) -> str | None:
        client = clients[index % len(clients)]
        try:
            raw = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=HELLO)
        except InsufficientCreditsError:
            return None
        return str(raw.request_id)

    with ThreadPoolExecutor(max_workers=32) as pool:
        results = list(pool.map(call, range(200)))
    for client in clients:
        client.close()
    ok_ids = {result for result in results if result is not None}
    assert 0 < len(ok_ids) < 200  # some calls ran out of credits
    ledger_is_exact(gateway, starts, ok_ids)


@pytest.mark.filterwarnings("ignore::aigateway.LowBalanceWarning")
async def test_the_ledger_is_exact_under_200_concurrent_tasks() -> None:
    gateway, keys, starts = concurrent_gateway()
    ok_ids: set[str] = set()
    clients = [gateway.async_client(api_key=key, max_retries=0) for key in keys]

    async def call(index: int) -> None:
        client = clients[index % len(clients)]
        try:
            stream = await client.chat.completions.create(
                model="gpt-4o", messages=HELLO, stream=True
            )
        except InsufficientCreditsError:
            return
        async for _ in stream:
            await anyio.sleep(0)  # interleave the streams
        ok_ids.add(stream.response.headers["x-request-id"])

    async with anyio.create_task_group() as tasks:
        for index in range(200):
            tasks.start_soon(call, index)
    for client in clients:
        await client.close()
    assert 0 < len(ok_ids) < 200
    ledger_is_exact(gateway, starts, ok_ids)


def send_email(client: Client | AsyncClient, **options: Any) -> Any:
    return resolve(
        client.email.with_raw_response.send(
            model="resend/email", to=["a@example.com"], subject="Hi", text="Hello", **options
        )
    )


async def test_an_email_that_gets_a_503_is_not_retried_without_a_key(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    gateway.faults.fail(503, path="/v1/run")
    with pytest.raises(ServiceUnavailableError) as caught:
        await send_email(mock_client)
    assert caught.value.attempts == 1
    assert len(gateway.requests) == 1


async def test_an_email_whose_reply_was_lost_is_retried_and_charged_once_with_a_key(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    gateway.faults.fail(503, path="/v1/run")
    raw = await send_email(mock_client, idempotency_key="welcome-mail-7")
    assert raw.attempts == 2
    gateway.faults.drop(after_processing=True, path="/v1/run")
    raw = await send_email(mock_client, idempotency_key="welcome-mail-8")
    assert raw.attempts == 2
    assert raw.headers["idempotent-replayed"] == "true"
    sent = [request for request in gateway.requests if request.path == "/v1/run"]
    assert {request.headers["idempotency-key"] for request in sent} == {
        "welcome-mail-7",
        "welcome-mail-8",
    }
    assert len(gateway.charges) == 2  # one per email, none for the failed or replayed tries


async def test_an_email_with_generated_keys_is_charged_once(gateway: MockGateway) -> None:
    gateway.faults.drop(after_processing=True, path="/v1/run")
    async with in_process_client("async", gateway, auto_idempotency_keys=True) as client:
        raw = await send_email(client)
    assert raw.attempts == 2
    assert len(gateway.charges) == 1
