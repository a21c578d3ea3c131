"""What a client spent: each reply's rate limit, the usage ledger (per model, shared by copies,
exact under concurrency) and the opt-in credit budget (refused before sending)."""

from __future__ import annotations

import pickle
from typing import Any

import anyio
import pytest

from aigateway import (
    AsyncClient,
    BudgetExceededError,
    Client,
    ConfigurationError,
    NotFoundError,
    RateLimitInfo,
    RunResult,
)
from aigateway._pipeline.credit_budget import CreditBudget
from aigateway.testing import MockGateway
from aigateway.types.services import SearchResult

from ..conftest import in_process_client, resolve

pytestmark = pytest.mark.anyio

HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def chat(client: Client | AsyncClient, model: str = "gpt-4o", **options: Any) -> Any:
    return await resolve(client.chat.completions.create(model=model, messages=HELLO, **options))


async def read_stream(client: Client | AsyncClient, **params: Any) -> list[Any]:
    stream = await resolve(client.chat.completions.create(stream=True, **params))
    if isinstance(client, Client):
        with stream:
            return list(stream)
    async with stream:
        return [chunk async for chunk in stream]


def spent(gateway: MockGateway, skip: int = 0) -> float:
    return sum(charge.amount for charge in gateway.charges[skip:])


# -- each reply's rate limit -------------------------------------------------------------------


async def test_a_chat_reply_carries_the_rate_limit_of_its_own_response(
    gateway: MockGateway, kind: str
) -> None:
    async with in_process_client(kind, gateway, max_retries=0) as client:
        first = await chat(client)
        second = await chat(client)
    assert isinstance(first.rate_limit, RateLimitInfo)
    assert second.rate_limit is not None
    assert first.rate_limit.remaining is not None
    assert second.rate_limit.remaining == first.rate_limit.remaining - 1
    assert client.last_rate_limit == second.rate_limit
    assert "rate_limit" not in first.model_dump()  # not a field of the reply's data
    # kept with the reply: copied, pickled, and part of equality like a private attribute
    assert first.model_copy().rate_limit == first.rate_limit
    assert pickle.loads(pickle.dumps(first)).rate_limit == first.rate_limit
    bare = type(first).model_validate(first.model_dump(by_alias=True))
    assert bare.rate_limit is None
    assert bare != first


async def test_a_run_result_and_an_error_carry_their_rate_limit(
    gateway: MockGateway, kind: str
) -> None:
    async with in_process_client(kind, gateway, max_retries=0) as client:
        result = await resolve(client.run("tavily/search", {"query": "gateway"}))
        typed = await resolve(client.web.search(model="tavily/search", query="gateway"))
        with pytest.raises(NotFoundError) as caught:
            await chat(client, model="no-such-model")
    assert isinstance(result, RunResult)
    assert isinstance(typed, SearchResult)
    assert result.rate_limit is not None
    assert typed.rate_limit is not None
    assert typed.rate_limit.remaining == result.rate_limit.remaining - 1  # type: ignore[operator]
    assert caught.value.rate_limit is not None
    assert caught.value.rate_limit.remaining == typed.rate_limit.remaining - 1  # type: ignore[operator]


# -- the usage ledger --------------------------------------------------------------------------


async def test_the_ledger_counts_two_models_a_stream_and_a_failure(
    gateway: MockGateway, kind: str
) -> None:
    async with in_process_client(kind, gateway, max_retries=0) as client:
        copy = client.with_options(timeout=30)
        await chat(client)  # its cost is unknown: no earlier balance to compare with
        await chat(client, model="gpt-4o-mini")
        await chat(copy)  # a copy books into the same ledger
        chunks = await read_stream(
            copy, model="gpt-4o-mini", messages=HELLO, stream_options={"include_usage": True}
        )
        with pytest.raises(NotFoundError):
            await chat(client, model="no-such-model")
        assert chunks[-1].usage is not None
        usage = client.usage
        assert copy.usage is usage
        models = usage.as_dict()["models"]
    charges = gateway.charges
    assert [charge.model for charge in charges] == [
        "gpt-4o",
        "gpt-4o-mini",
        "gpt-4o",
        "gpt-4o-mini",
    ]
    assert models["gpt-4o"]["requests"] == 2
    assert models["gpt-4o-mini"]["requests"] == 2
    for model in ("gpt-4o", "gpt-4o-mini"):
        mine = [charge for charge in charges if charge.model == model]
        assert models[model]["prompt_tokens"] == sum(c.prompt_tokens for c in mine)
        assert models[model]["completion_tokens"] == sum(c.completion_tokens for c in mine)
    assert models["gpt-4o"]["credits"] == pytest.approx(charges[2].amount, abs=1e-6)
    assert models["gpt-4o"]["uncounted"] == 1
    assert models["gpt-4o-mini"]["credits"] == pytest.approx(
        charges[1].amount + charges[3].amount, abs=1e-6
    )
    assert models["no-such-model"]["failures"] == {"NotFoundError": 1}
    assert usage.credits == pytest.approx(spent(gateway, skip=1), abs=1e-6)
    total = usage.as_dict()["total"]
    assert total["requests"] == 5
    assert total["failures"] == {"NotFoundError": 1}
    table = str(usage).splitlines()
    assert table[0].split() == ["model", "requests", "failed", "prompt", "completion", "credits"]
    assert [line.split()[0] for line in table[1:]] == [
        "gpt-4o",
        "gpt-4o-mini",
        "no-such-model",
        "total",
    ]
    assert len({len(line) for line in table}) == 1  # aligned columns


async def test_a_run_reply_counts_the_cost_it_states(gateway: MockGateway, kind: str) -> None:
    async with in_process_client(kind, gateway, max_retries=0) as client:
        await resolve(client.run("tavily/search", {"query": "gateway"}))
        assert client.usage.credits == pytest.approx(spent(gateway), abs=1e-9)
        assert client.usage.total().uncounted == 0


async def test_the_ledger_is_exact_under_a_hundred_concurrent_calls() -> None:
    gateway = MockGateway(seed=5, rate_limits="unlimited", credits=1_000)
    async with gateway.async_client(max_retries=0) as client:
        await chat(client)  # the first balance to count from

        async def one(index: int) -> None:
            await chat(client, model="gpt-4o" if index % 2 else "gpt-4o-mini")

        async with anyio.create_task_group() as group:
            for index in range(100):
                group.start_soon(one, index)
    assert len(gateway.charges) == 101
    total = client.usage.total()
    assert total.requests == 101
    assert total.credits == pytest.approx(spent(gateway, skip=1), abs=1e-6)
    assert total.prompt_tokens == sum(charge.prompt_tokens for charge in gateway.charges)


def test_the_ledger_is_exact_under_threads() -> None:
    gateway = MockGateway(seed=5, rate_limits="unlimited", credits=1_000)
    from concurrent.futures import ThreadPoolExecutor

    with gateway.client(max_retries=0) as client:
        client.chat.completions.create(model="gpt-4o", messages=HELLO)
        with ThreadPoolExecutor(8) as pool:
            list(
                pool.map(
                    lambda _: client.chat.completions.create(model="gpt-4o", messages=HELLO),
                    range(40),
                )
            )
    assert client.usage.total().requests == 41
    assert client.usage.credits == pytest.approx(spent(gateway, skip=1), abs=1e-6)


# -- the credit budget -------------------------------------------------------------------------


async def test_a_spent_budget_refuses_before_sending(gateway: MockGateway, kind: str) -> None:
    async with in_process_client(kind, gateway, max_retries=0) as client:
        await chat(client)  # learns the balance
        cost = gateway.charges[0].amount
        limited = client.with_budget(max_credits=cost * 1.5)
        await chat(limited)
        await chat(limited)  # over the budget now
        sent = len(gateway.requests)
        with pytest.raises(BudgetExceededError) as caught:
            await chat(limited)
        with pytest.raises(BudgetExceededError):
            await chat(limited.with_options(timeout=5))  # copies keep the budget
        assert len(gateway.requests) == sent
        await chat(client)  # the client it came from has no budget
    assert caught.value.max_credits == cost * 1.5
    assert caught.value.spent == pytest.approx(2 * cost)
    assert f"{cost * 1.5:g}" in str(caught.value)


async def test_a_budget_given_to_the_client(gateway: MockGateway, kind: str) -> None:
    async with in_process_client(kind, gateway, max_retries=0, max_credits=1e-6) as client:
        await chat(client)
        await chat(client)
        with pytest.raises(BudgetExceededError):
            await chat(client)


async def test_concurrent_calls_overshoot_by_at_most_those_in_flight(
    gateway: MockGateway,
) -> None:
    async with gateway.async_client(max_retries=0) as client:
        in_flight: list[int] = []  # seen by the gateway as each request arrives
        gateway.reply_with(lambda request: in_flight.append(budget.in_flight) or "fine")
        budget = CreditBudget(1, client.usage)  # replaced below, once the cost is known
        await chat(client)  # learns the balance
        cost = gateway.charges[0].amount
        limited = client.with_budget(max_credits=cost * 3.5)
        budget = limited._pipeline.credit_budget  # type: ignore[assignment]
        assert budget is not None
        in_flight.clear()
        refused = 0

        async def one() -> None:
            nonlocal refused
            try:
                await chat(limited)
            except BudgetExceededError:
                refused += 1

        async with anyio.create_task_group() as group:
            for _ in range(20):
                group.start_soon(one)
        with pytest.raises(BudgetExceededError):
            await chat(limited)
    sent = len(gateway.charges) - 1
    assert sent + refused == 20
    assert sent * cost >= cost * 3.5  # the budget was reached, and passed by at most the
    assert sent <= 4 + max(in_flight) - 1  # calls in flight beside the one that reached it
    assert budget.in_flight == 0


def test_calls_one_after_another_stop_at_the_budget(gateway: MockGateway) -> None:
    with gateway.client(max_retries=0) as client:
        client.chat.completions.create(model="gpt-4o", messages=HELLO)
        cost = gateway.charges[0].amount
        limited = client.with_budget(max_credits=cost * 3.5)
        for _ in range(4):
            limited.chat.completions.create(model="gpt-4o", messages=HELLO)
        with pytest.raises(BudgetExceededError):
            limited.chat.completions.create(model="gpt-4o", messages=HELLO)
    assert len(gateway.charges) == 5


@pytest.mark.parametrize("budget", [0, -1, 0.0, float("nan"), "5", True])
def test_a_budget_must_be_positive(gateway: MockGateway, budget: Any) -> None:
    with pytest.raises(ConfigurationError, match="max_credits"):
        gateway.client(max_credits=budget)
    with gateway.client() as client, pytest.raises(ConfigurationError, match="max_credits"):
        client.with_budget(max_credits=budget)
