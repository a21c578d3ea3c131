"""The usage ledger adds credits exactly: to the last digit of the mock's own (decimal) ledger,
with prices whose sums drift in floating point, and it never fails on a credits value that
is no number."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

import anyio
import pytest
import respx

from aigateway import BudgetExceededError, Client
from aigateway.testing import MockGateway, ModelSpec, ServiceSpec

from ..conftest import BASE_URL, CHAT_REPLY, in_process_client, resolve

pytestmark = pytest.mark.anyio

CHAT_MODELS = {"tenths": (0.1, 0.3), "sevenths": (0.7, 1.1)}
"""Credits per 1K prompt and completion tokens: 0.0001 a token and the like, which floats
cannot hold exactly."""
SERVICES = {"acme/tenth": 0.1, "acme/fifth": 0.2, "acme/third": 0.3}
HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture
def priced() -> MockGateway:
    gateway = MockGateway(
        seed=7,
        credits=10_000,
        rate_limits="unlimited",
        catalogue=[
            ModelSpec(name, "acme", 1, input_price_per_1k=prompt, output_price_per_1k=output)
            for name, (prompt, output) in CHAT_MODELS.items()
        ],
        services=[ServiceSpec(name, "search", price) for name, price in SERVICES.items()],
    )
    return gateway


def call(client: Any, index: int) -> Any:
    """The ``index``-th call of a mix: two chat models, a stream, three services."""
    step = index % 6
    if step < 3:
        service = list(SERVICES)[step]
        return client.web.search(model=service, query=f"query {index}")
    model = list(CHAT_MODELS)[step % 2]
    messages = [{"role": "user", "content": "hello " * (1 + index % 5)}]
    return client.chat.completions.create(model=model, messages=messages)


def mock_spent(gateway: MockGateway, start: Decimal) -> tuple[Decimal, dict[str, Decimal]]:
    """What the mock charged: in total (from the balances, exactly) and per model."""
    per_model: dict[str, Decimal] = {}
    for charge in gateway.charges:
        per_model[charge.model] = per_model.get(charge.model, Decimal(0)) + Decimal(
            repr(charge.amount)
        )
    return start - gateway.ledger.balance(gateway.api_key), per_model


async def test_three_hundred_calls_add_up_to_the_last_digit(priced: MockGateway, kind: str) -> None:
    start = priced.ledger.balance(priced.api_key)
    async with in_process_client(kind, priced, max_retries=0) as client:
        for index in range(300):  # a service first: its reply states its cost and the balance
            await resolve(call(client, index))
    total, per_model = mock_spent(priced, start)
    assert sum(float(charge.amount) for charge in priced.charges) != float(total)  # floats drift
    usage = client.usage
    assert usage.exact_credits == total
    assert usage.credits == usage.total().credits == usage.as_dict()["total"]["credits"]
    assert usage.credits == float(total)
    assert usage.total().uncounted == 0
    for model, spent in usage.by_model().items():
        assert Decimal(repr(spent.credits)) == per_model[model], model


async def test_concurrent_calls_add_up_to_the_last_digit(priced: MockGateway) -> None:
    start = priced.ledger.balance(priced.api_key)
    async with in_process_client("async", priced, max_retries=0) as client:
        await resolve(call(client, 0))
        async with anyio.create_task_group() as group:
            for index in range(1, 300):
                group.start_soon(resolve, call(client, index))
    assert client.usage.exact_credits == mock_spent(priced, start)[0]
    assert client.usage.credits == float(client.usage.exact_credits)


def test_a_budget_counts_exactly_too(priced: MockGateway) -> None:
    with priced.client(max_retries=0) as client:
        client.web.search(model="acme/tenth", query="q")  # the ledger stands at 0.1
        limited = client.with_budget(max_credits=0.2)
        limited.web.search(model="acme/fifth", query="q")  # 0.3 - 0.1 is 0.2 (in floats, less)
        with pytest.raises(BudgetExceededError) as caught:
            limited.web.search(model="acme/tenth", query="q")
    assert caught.value.spent == 0.2


@pytest.mark.parametrize(
    ("stated", "balance"),
    [("abc", math.nan), (True, math.inf), ({"x": 1}, -math.inf), (math.nan, 5.0)],
)
def test_credits_values_that_are_no_numbers_are_not_counted(stated: Any, balance: Any) -> None:
    reply = {**CHAT_REPLY, "usage": {"prompt_tokens": 1, "completion_tokens": 2}}
    reply["usage"]["credits"] = stated
    content = json.dumps({**reply, "_remaining_credits": balance}).encode()
    with respx.mock(base_url=BASE_URL) as router, Client(api_key="k", base_url=BASE_URL) as c:
        router.post("/chat/completions").respond(200, content=content)
        for _ in range(2):
            c.chat.completions.create(model="gpt-4o", messages=HELLO)
    total = c.usage.total()
    assert (total.requests, total.completion_tokens, total.credits) == (2, 4, 0.0)
