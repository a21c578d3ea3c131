"""Batches on Ray: one local Ray for the module, its actors sending to a served mock gateway.

Ray's actors run in other processes, so they reach the mock over HTTP (``gateway.serve()``) and
import aigateway from this checkout (the fixture gives them its ``src`` on PYTHONPATH).
"""

from __future__ import annotations

import collections
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import aigateway
import aigateway.helpers.ray
from aigateway.errors import InvalidRequestError, NotFoundError
from aigateway.helpers.ray import _Fault, run_batch_on_ray
from aigateway.testing import MockGateway

from .._integrations import import_integration
from .._paths import SRC

ray = import_integration("ray", "ray")

# A local Ray starts a dozen processes and its Data executor polls: on two loaded cores one of
# these tests took over a minute (a minute idle: about 15 s). Generous, as the suite's rule asks.
pytestmark = pytest.mark.timeout(600)

SEED = 11


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """One local Ray (2 CPUs, no dashboard, workers' logs kept out of the test output); its
    workers inherit this process's environment, with this checkout's ``src`` first."""
    old_path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), old_path]))
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.WARNING,
        configure_logging=False,
    )
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.print_on_execution_start = False
    try:
        yield
    finally:
        ray.shutdown()
        if old_path is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = old_path


def chat_items(count: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"q{n}",
            "model": "gpt-4o-mini",
            "messages": [{"role": "user", "content": f"Tell me fact number {n}"}],
        }
        for n in range(count)
    ]


def sent_contents(gateway: MockGateway) -> collections.Counter[str]:
    """How many times each item's question reached the gateway."""
    return collections.Counter(
        json.loads(request.body)["messages"][0]["content"]
        for request in gateway.requests
        if request.path.endswith("/chat/completions")
    )


def test_results_equal_run_batch_and_the_ledger_is_exact(local_ray: None) -> None:
    items: list[Any] = chat_items(9)
    items.append({"id": "lost", "model": "no-such-model", "messages": items[0]["messages"]})
    items.append({"id": "hot", "model": "gpt-4o-mini", "messages": [], "temperature": 7})
    items.append("not a dict")

    gateway = MockGateway(seed=SEED, rate_limits="unlimited", credits=100)
    with gateway.serve() as url:
        results = run_batch_on_ray(
            items,
            client_options={"api_key": gateway.api_key, "base_url": url, "max_retries": 0},
            concurrency=2,
            batch_size=3,
            progress=False,
        )

    def in_process(seed: int) -> tuple[aigateway.BatchResult, MockGateway]:
        local = MockGateway(seed=seed, rate_limits="unlimited", credits=100)
        with local.client(max_retries=0) as client:
            return aigateway.run_batch(client, items, progress=False), local

    expected, local = in_process(SEED)
    again, _ = in_process(SEED)
    other, _ = in_process(SEED + 1)

    def texts(batch: aigateway.BatchResult) -> list[str | None]:
        return [result.value.text if result.ok else None for result in batch]

    assert texts(expected) == texts(again)  # the mock is deterministic by seed
    assert texts(expected) != texts(other)
    assert [r.id for r in results] == [r.id for r in expected]
    assert [r.index for r in results] == list(range(len(items)))
    assert texts(results) == texts(expected)
    assert [type(r.error) for r in results] == [type(r.error) for r in expected]
    assert isinstance(results[9].error, NotFoundError)
    assert results[9].error.status_code == 404
    assert isinstance(results[10].error, InvalidRequestError)
    assert isinstance(results[11].error, InvalidRequestError)

    # the ledger: one charge per reply, for the tokens the replies report, the same total
    assert len(gateway.charges) == len(results.ok) == 9
    assert sorted((c.prompt_tokens, c.completion_tokens) for c in gateway.charges) == sorted(
        (r.value.usage.prompt_tokens, r.value.usage.completion_tokens) for r in results.ok
    )
    assert sum(c.amount for c in gateway.charges) == pytest.approx(
        sum(c.amount for c in local.charges)
    )
    # every valid item went out once; the bad ones never left the driver but the 404 did
    assert sum(sent_contents(gateway).values()) == 10


def test_a_checkpoint_resumes_without_sending_an_item_twice(
    local_ray: None, tmp_path: Path
) -> None:
    items = chat_items(10)
    path = tmp_path / "batch.jsonl"
    gateway = MockGateway(seed=SEED, rate_limits="unlimited", credits=100)
    with gateway.serve() as url:
        options = {"api_key": gateway.api_key, "base_url": url}
        # the first run stops after 4 items; it reads them from a Ray Data Dataset
        first = run_batch_on_ray(
            ray.data.from_items(items[:4]), client_options=options, checkpoint=path
        )
        assert len(path.read_text().splitlines()) == 4
        resumed = run_batch_on_ray(items, client_options=options, checkpoint=path)

    assert [r.id for r in first] == ["q0", "q1", "q2", "q3"]
    assert [r.from_checkpoint for r in resumed] == [True] * 4 + [False] * 6
    assert [r.value.text for r in resumed[:4]] == [r.value.text for r in first]
    assert all(r.ok for r in resumed)
    assert sent_contents(gateway) == {f"Tell me fact number {n}": 1 for n in range(10)}
    assert len(gateway.charges) == 10
    assert sorted(json.loads(line)["id"] for line in path.read_text().splitlines()) == sorted(
        item["id"] for item in items
    )


def test_dying_workers_lose_and_double_nothing(
    local_ray: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The actor sending q2 exits before sending it, the one sending q5 after its reply came:
    Ray restarts them and runs their shares again. q5's request went out twice, but its
    idempotency key (fixed for the whole batch) makes the gateway replay the reply: every
    item has one result, one checkpoint line, one charge."""
    items = chat_items(8)
    before, after = tmp_path / "died-before", tmp_path / "died-after"
    path = tmp_path / "batch.jsonl"
    gateway = MockGateway(seed=SEED, rate_limits="unlimited", credits=100)
    faults = (_Fault("q2", str(before), "before"), _Fault("q5", str(after), "after"))
    monkeypatch.setattr(aigateway.helpers.ray, "_FAULTS", faults)
    with gateway.serve() as url:
        results = run_batch_on_ray(
            items,
            client_options={"api_key": gateway.api_key, "base_url": url},
            batch_size=2,
            checkpoint=path,
            progress=False,
        )

    assert before.exists()  # both workers did die
    assert after.exists()
    assert [r.id for r in results] == [item["id"] for item in items]
    assert all(r.ok for r in results)
    sent = sent_contents(gateway)
    assert sent["Tell me fact number 2"] == 1  # its worker died before sending it
    assert sent["Tell me fact number 5"] == 2  # its worker died after: sent again, replayed
    # a dead worker's other items may have gone out before it died: then again, replayed
    assert set(sent.values()) <= {1, 2}
    assert len(gateway.charges) == len(items)  # each item charged exactly once
    lines = [json.loads(line)["id"] for line in path.read_text().splitlines()]
    assert sorted(lines) == sorted(item["id"] for item in items)


def test_the_docs_local_example_runs(
    local_ray: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/ray.md's first example, as it stands, on this module's Ray (its ``ray.init`` and
    ``ray.shutdown`` leave that Ray alone; it is too slow for the docs' 30 s block runner)."""
    page = (SRC.parent / "docs" / "ray.md").read_text(encoding="utf-8")
    code = page.split("This runs as pasted", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    monkeypatch.setattr(ray, "init", lambda *args, **kwargs: None)
    monkeypatch.setattr(ray, "shutdown", lambda: None)
    exec(compile(code, "docs/ray.md", "exec"), {"__name__": "__main__"})
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "<BatchResult 7 items: 6 ok, 1 failed>"
    assert printed[-2] == "lost NotFoundError"
    assert printed[-1] == "6 charges"


def test_bad_options_are_refused_before_anything_starts() -> None:
    with pytest.raises(InvalidRequestError, match="api_kye"):
        run_batch_on_ray([], client_options={"api_kye": "sk-x"})
    with pytest.raises(InvalidRequestError, match="must pickle"):
        run_batch_on_ray([], client_options={"transport": httpx.MockTransport(lambda r: None)})
    with pytest.raises(InvalidRequestError, match="concurrency"):
        run_batch_on_ray([], client_options={}, concurrency=0)
    with pytest.raises(InvalidRequestError, match="a list of request dicts"):
        run_batch_on_ray({"model": "gpt-4o-mini"}, client_options={})


def test_actors_share_one_budget_and_one_ledger_through_redis(
    local_ray: None, redis_url: str
) -> None:
    from aigateway import BudgetExceededError
    from aigateway.shared import RedisState

    state = RedisState(redis_url)
    gateway = MockGateway(seed=SEED, rate_limits="unlimited", credits=100)
    with gateway.serve() as url:
        # what one reply costs here, to set a budget a few replies deep
        with aigateway.Client(api_key=gateway.api_key, base_url=url) as probe:
            before = gateway.credits()
            probe.chat.completions.create(
                **{k: v for k, v in chat_items(1)[0].items() if k != "id"}
            )
            one = before - gateway.credits()
        budget = 3.5 * one
        spent_before = gateway.credits()
        # one question asked twelve times: every reply costs about the same, so "within one
        # reply's cost" is a bound the shared budget must keep whichever actor sends last
        same = [{**chat_items(1)[0], "id": f"same{n}"} for n in range(12)]
        results = run_batch_on_ray(
            same,
            client_options={
                "api_key": gateway.api_key,
                "base_url": url,
                "max_retries": 0,
                "shared_state": state,
                "max_credits": budget,
            },
            concurrency=2,
            batch_size=3,
            progress=False,
        )
    spent = spent_before - gateway.credits()
    most = max(charge.amount for charge in gateway.charges[1:])  # the batch's dearest reply
    # two actors, one budget: the spend stops within one reply's cost of it, not at twice it
    assert budget - most <= spent <= budget + most
    refused = [r for r in results if not r.ok]
    assert refused
    assert all(isinstance(r.error, BudgetExceededError) for r in refused)
    # the shared ledger counts what every actor was charged
    shared = state.usage(gateway.api_key)["total"]
    assert shared["requests"] == len(results.ok)
