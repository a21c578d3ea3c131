"""Credits: per-token billing, the low-balance warning, 402, accounts, and a thread-safe ledger."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import httpx
import pytest

from aigateway.testing import Account, MockGateway, ModelSpec, default_catalogue
from aigateway.testing._core.accounts import Ledger
from aigateway.testing._core.ids import IdSource

from ._helpers import user

Chat = Callable[..., httpx.Response]
PRICES = {spec.id: spec for spec in default_catalogue()}


def expected_cost(model: str, usage: dict[str, int]) -> float:
    spec = PRICES[model]
    return (
        usage["prompt_tokens"] / 1000 * spec.input_price_per_1k
        + usage["completion_tokens"] / 1000 * spec.output_price_per_1k
    )


def test_a_new_gateway_account_has_20_credits(gateway: MockGateway) -> None:
    assert gateway.credits() == 20.0
    assert gateway.credits(gateway.api_key) == 20.0
    assert gateway.create_account().credits == 20.0
    assert MockGateway(credits=3.5).credits() == 3.5


@pytest.mark.parametrize("model", sorted(PRICES))
def test_each_call_is_charged_by_the_price_formula(
    gateway: MockGateway, chat: Chat, model: str
) -> None:
    before = gateway.credits()
    body = chat(model=model).json()
    after = gateway.credits()
    cost = expected_cost(model, body["usage"])
    assert cost > 0
    assert before - after == pytest.approx(cost, abs=1e-12)
    assert body["_remaining_credits"] == round(after, 6)
    (charge,) = gateway.charges
    assert charge.amount == pytest.approx(cost, abs=1e-12)
    assert charge.model == model
    assert charge.account_id == gateway.account.id
    assert charge.prompt_tokens == body["usage"]["prompt_tokens"]
    assert charge.completion_tokens == body["usage"]["completion_tokens"]
    assert charge.balance_after == after


def test_input_and_output_tokens_are_priced_separately(gateway: MockGateway, chat: Chat) -> None:
    gateway.catalogue.add(
        ModelSpec("in-only", "us", 1, input_price_per_1k=2.0, output_price_per_1k=0)
    )
    gateway.catalogue.add(
        ModelSpec("out-only", "us", 1, input_price_per_1k=0, output_price_per_1k=2.0)
    )
    usage_in = chat(model="in-only").json()["usage"]
    usage_out = chat(model="out-only").json()["usage"]
    first, second = gateway.charges
    assert first.amount == pytest.approx(usage_in["prompt_tokens"] * 2.0 / 1000)
    assert second.amount == pytest.approx(usage_out["completion_tokens"] * 2.0 / 1000)
    assert usage_in["prompt_tokens"] != usage_in["completion_tokens"]


def test_the_charge_record_links_the_request_id(gateway: MockGateway, chat: Chat) -> None:
    response = chat()
    assert gateway.charges[0].request_id == response.headers["x-request-id"]


def test_balance_warning_flips_below_10(gateway: MockGateway, chat: Chat) -> None:
    probe = gateway.create_account()
    with httpx.Client(
        transport=gateway.transport(),
        base_url=gateway.base_url,
        headers={"Authorization": f"Bearer {probe.key}"},
    ) as other:
        other.post("/chat/completions", json={"model": "claude-3-opus", "messages": user()})
    cost = gateway.charges[0].amount
    gateway.set_credits(gateway.api_key, 10 + cost)
    at_ten = chat(model="claude-3-opus").json()
    assert gateway.credits() == pytest.approx(10.0, abs=1e-12)
    assert at_ten["_remaining_credits"] == 10.0
    assert at_ten["_balance_warning"] is False
    below = chat(model="claude-3-opus").json()
    assert gateway.credits() < 10
    assert below["_balance_warning"] is True
    assert below["_remaining_credits"] == round(gateway.credits(), 6)


def test_short_credits_are_a_402_and_nothing_is_charged(gateway: MockGateway, chat: Chat) -> None:
    gateway.set_credits(gateway.api_key, 0.00001)
    response = chat(model="claude-3-opus")
    assert response.status_code == 402
    error = response.json()["error"]
    assert error["type"] == "insufficient_credits"
    assert error["code"] == "insufficient_credits"
    assert error["_remaining_credits"] == 0.00001
    assert "1e-05" in error["message"] or "0.00001" in error["message"]
    assert set(response.json()) == {"error"}
    assert gateway.credits() == 0.00001
    assert gateway.charges == []


def test_exactly_enough_credits_are_spent_to_zero(gateway: MockGateway, chat: Chat) -> None:
    chat()
    cost = Decimal(repr(gateway.charges[0].amount))
    gateway.set_credits(gateway.api_key, cost)
    assert chat().status_code == 200
    assert gateway.credits() == 0.0
    assert chat().status_code == 402


def test_topping_up_after_a_402_works(gateway: MockGateway, chat: Chat) -> None:
    gateway.set_credits(gateway.account, 0)
    assert chat().status_code == 402
    gateway.set_credits(gateway.account, 5)
    assert chat().status_code == 200
    assert gateway.credits(gateway.account) < 5


def test_accounts_are_billed_separately(gateway: MockGateway, chat: Chat) -> None:
    other = gateway.create_account(credits=1.0)
    assert isinstance(other, Account)
    assert other.key != gateway.api_key
    with httpx.Client(
        transport=gateway.transport(),
        base_url=gateway.base_url,
        headers={"Authorization": f"Bearer {other.key}"},
    ) as http:
        body = http.post("/chat/completions", json={"model": "gpt-4o", "messages": user()}).json()
    assert gateway.credits() == 20.0
    assert other.credits == pytest.approx(1.0 - expected_cost("gpt-4o", body["usage"]))
    assert gateway.credits(other.key) == other.credits
    assert gateway.charges[0].account_id == other.id
    assert body["_balance_warning"] is True


def test_failed_requests_are_not_charged(gateway: MockGateway, chat: Chat) -> None:
    chat(temperature=3)
    chat(model="gpt-99")
    chat(
        model="gpt-3.5-turbo",
        messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}],
    )
    assert gateway.charges == []
    assert gateway.credits() == 20.0


def test_models_endpoints_are_free(gateway: MockGateway, client: httpx.Client) -> None:
    client.get("/models")
    client.get("/models/gpt-4o")
    assert gateway.charges == []


def test_set_credits_validates(gateway: MockGateway) -> None:
    with pytest.raises(ValueError, match="negative"):
        gateway.set_credits(gateway.api_key, -1)
    with pytest.raises(KeyError):
        gateway.set_credits("mock-unknown", 1)
    with pytest.raises(ValueError, match="negative"):
        gateway.create_account(-5)


def test_ledger_refuses_rather_than_going_negative() -> None:
    ledger = Ledger(IdSource(0))
    account = ledger.create_account(1.0)
    assert ledger.charge(account.key, 0.6).ok
    refused = ledger.charge(account.key, 0.6)
    assert not refused.ok
    assert refused.balance == Decimal("0.4")
    assert account.credits == 0.4
    assert len(ledger.charges) == 1
    with pytest.raises(ValueError, match="negative"):
        ledger.charge(account.key, -0.1)
    with pytest.raises(ValueError, match="already exists"):
        ledger.create_account(key=account.key)


def test_ledger_sums_are_exact() -> None:
    ledger = Ledger(IdSource(0))
    account = ledger.create_account(20)
    for _ in range(1000):
        assert ledger.charge(account.key, 0.0001).ok
    assert ledger.balance(account.key) == Decimal("19.9")


# -- concurrency ---------------------------------------------------------------------------------


@pytest.fixture
def eager_thread_switches() -> Iterator[None]:
    """Switch threads every microsecond, so that a missing lock shows up as a lost update."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


@pytest.mark.usefixtures("eager_thread_switches")
def test_50_threads_charging_through_http(gateway: MockGateway, client: httpx.Client) -> None:
    barrier = threading.Barrier(50)

    def call(index: int) -> httpx.Response:
        barrier.wait()
        return client.post(
            "/chat/completions",
            json={"model": "gpt-4o", "messages": user(f"question {index}")},
        )

    with ThreadPoolExecutor(max_workers=50) as pool:
        responses = list(pool.map(call, range(50)))
    assert all(r.status_code == 200 for r in responses)
    charges = gateway.charges
    assert len(charges) == 50
    assert len({c.request_id for c in charges}) == 50
    assert len({r.json()["id"] for r in responses}) == 50
    assert 20.0 - gateway.credits() == pytest.approx(sum(c.amount for c in charges), abs=1e-9)
    expected = sum(expected_cost("gpt-4o", r.json()["usage"]) for r in responses)
    assert 20.0 - gateway.credits() == pytest.approx(expected, abs=1e-9)
    assert sorted(r.json()["_remaining_credits"] for r in responses)[0] == round(
        gateway.credits(), 6
    )


@pytest.mark.usefixtures("eager_thread_switches")
def test_concurrent_calls_never_overspend(gateway: MockGateway, chat: Chat) -> None:
    chat()  # learn the cost of this (deterministic) request
    cost = Decimal(repr(gateway.charges[0].amount))
    gateway.set_credits(gateway.api_key, cost * 10 + cost / 2)
    barrier = threading.Barrier(50)

    def call(_: int) -> int:
        barrier.wait()
        return chat().status_code

    with ThreadPoolExecutor(max_workers=50) as pool:
        statuses = list(pool.map(call, range(50)))
    assert statuses.count(200) == 10
    assert statuses.count(402) == 40
    assert gateway.ledger.balance(gateway.api_key) == cost / 2
    assert len(gateway.charges) == 11


class SlowDecimal(Decimal):
    """A balance whose comparison and subtraction run Python code, where CPython may switch
    threads: without the ledger's lock, check-and-debit would then interleave."""

    def __lt__(self, other: object) -> bool:
        return Decimal.__lt__(self, other)  # type: ignore[operator]

    def __sub__(self, other: object) -> SlowDecimal:
        return SlowDecimal(Decimal.__sub__(self, other))  # type: ignore[operator]


@pytest.mark.usefixtures("eager_thread_switches")
def test_ledger_loses_no_update_under_threads() -> None:
    ledger = Ledger(IdSource(1))
    account = ledger.create_account(0)
    ledger.set_credits(account.key, SlowDecimal(100))
    barrier = threading.Barrier(50)

    def spend(_: int) -> int:
        barrier.wait()
        return sum(ledger.charge(account.key, 0.001).ok for _ in range(400))

    with ThreadPoolExecutor(max_workers=50) as pool:
        accepted = sum(pool.map(spend, range(50)))
    assert accepted == 20_000
    assert ledger.balance(account.key) == Decimal(80)
    assert len(ledger.charges) == 20_000


@pytest.mark.usefixtures("eager_thread_switches")
def test_ledger_never_overspends_under_threads() -> None:
    ledger = Ledger(IdSource(1))
    account = ledger.create_account(0)
    ledger.set_credits(account.key, SlowDecimal(5))
    barrier = threading.Barrier(50)

    def spend(_: int) -> int:
        barrier.wait()
        return sum(ledger.charge(account.key, 0.01).ok for _ in range(20))

    with ThreadPoolExecutor(max_workers=50) as pool:
        accepted = sum(pool.map(spend, range(50)))
    assert accepted == 500
    assert ledger.balance(account.key) == 0
    assert len(ledger.charges) == 500
