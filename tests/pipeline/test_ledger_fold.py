"""The usage ledger counts a call when it is read, not when it ends: the counts must be those
of counting each call at once, in arrival order, whenever and however often it is read."""

from __future__ import annotations

import pickle
import random
from decimal import Decimal
from types import SimpleNamespace

from aigateway import NotFoundError
from aigateway._pipeline import ledger as ledger_module
from aigateway._pipeline.ledger import UsageLedger


def reply(model: str, balance: float, stated: float | None = None) -> SimpleNamespace:
    usage = SimpleNamespace(prompt_tokens=3, completion_tokens=2)
    if stated is not None:
        usage.credits = stated
    return SimpleNamespace(model=model, usage=usage, remaining_credits=balance)


def balances(count: int) -> list[float]:
    """Falling balances with a rise now and then (replies out of order)."""
    values = [1000 - 0.0123 * index for index in range(count)]
    for index in range(5, count, 7):
        values[index - 1], values[index] = values[index], values[index - 1]
    return values


def expected(values: list[float]) -> Decimal:
    """What counting each reply at once gives: each fall below the lowest balance before it."""
    lowest, spent = None, Decimal(0)
    for value in values:
        balance = Decimal(repr(value))
        if lowest is not None:
            spent += max(Decimal(0), lowest - balance)
        lowest = balance if lowest is None else min(lowest, balance)
    return spent


def test_counts_past_the_fold_threshold_and_between_reads_are_those_of_arrival_order() -> None:
    values = balances(ledger_module._FOLD_AT * 2 + 77)
    read_often, read_once = UsageLedger(), UsageLedger()
    for index, value in enumerate(values):
        read_often.record_reply(reply("a" if index % 3 else "b", value))
        read_once.record_reply(reply("a" if index % 3 else "b", value))
        if index % 50 == 0:
            assert read_often.exact_credits == expected(values[: index + 1])
    assert len(read_once._unfolded) < ledger_module._FOLD_AT  # memory stays bounded
    for ledger in (read_often, read_once):
        assert ledger.exact_credits == expected(values)
        models = ledger.by_model()
        assert models["a"].requests + models["b"].requests == len(values)
        assert models["a"].prompt_tokens == 3 * models["a"].requests
        assert models["a"].uncounted + models["b"].uncounted == 1
        exact_a = ledger._credits["a"]
        assert models["a"].credits == float(exact_a)
        assert ledger._credits["a"] + ledger._credits["b"] == ledger.exact_credits


def test_failures_and_stated_costs_keep_their_place_and_first_use_order() -> None:
    ledger = UsageLedger()
    ledger.record_reply(reply("late", 100.0, stated=0.5))
    ledger.record_failure("early-failure", NotFoundError.__new__(NotFoundError))
    ledger.record_reply(reply("late", 99.25))
    ledger.record_failure(None, NotFoundError.__new__(NotFoundError))
    assert list(ledger.by_model()) == ["late", "early-failure", "(unknown)"]
    assert ledger.exact_credits == Decimal("0.5") + Decimal("0.75")
    assert ledger.by_model()["early-failure"].failures == {"NotFoundError": 1}
    assert ledger.total().requests == 4


def test_a_pickled_ledger_carries_calls_not_yet_folded() -> None:
    ledger = UsageLedger()
    ledger.record_reply(reply("m", 10.0, stated=0.25))
    ledger.record_reply(reply("m", 9.5))
    copy = pickle.loads(pickle.dumps(ledger))
    assert copy.exact_credits == Decimal("0.75")
    assert copy.by_model()["m"].requests == 2
    copy.record_reply(reply("m", 9.0))
    assert copy.exact_credits == Decimal("1.25")


def count_each_at_once(calls: list[tuple[str, object, object]]) -> tuple[dict[str, Decimal], int]:
    """The ledger's rule applied reply by reply: credits per model, replies left uncounted."""
    lowest: Decimal | None = None
    credits: dict[str, Decimal] = {}
    uncounted = 0
    for model, stated, raw_balance in calls:
        charge = Decimal(repr(stated)) if stated is not None else None
        balance = Decimal(repr(raw_balance)) if raw_balance is not None else None
        if balance is not None:
            if charge is None and lowest is not None:
                charge = max(Decimal(0), lowest - balance)
            if lowest is None or balance < lowest:
                lowest = balance
        if charge is None:
            uncounted += 1
        else:
            credits[model] = credits.get(model, Decimal(0)) + charge
    return credits, uncounted


def test_mixed_replies_read_at_random_moments_count_as_reply_by_reply() -> None:
    chance = random.Random(28)
    for _ in range(20):
        ledger, calls, balance = UsageLedger(), [], 5000.0
        for _ in range(chance.randrange(1, 300)):
            model = chance.choice("xyz")
            balance = round(balance - chance.choice([0, 0.001234, 0.5, 3]), 6)
            shown: object = chance.choice([balance, balance, balance + 1, int(balance), None])
            stated = chance.choice([None, None, None, 0.25, 2])
            calls.append((model, stated, shown))
            ledger.record_reply(
                SimpleNamespace(
                    model=model, usage=SimpleNamespace(credits=stated), remaining_credits=shown
                )
            )
            if chance.random() < 0.05:
                ledger.record_failure(model, NotFoundError.__new__(NotFoundError))
            if chance.random() < 0.1:
                assert ledger.exact_credits == sum(count_each_at_once(calls)[0].values())
        credits, uncounted = count_each_at_once(calls)
        models = ledger.by_model()
        assert ledger.total().uncounted == uncounted
        assert ledger.exact_credits == sum(credits.values())
        for model, exact in credits.items():
            assert models[model].credits == float(exact)
