"""Batches against the in-process mock: order, per-item errors, checkpoints, progress, 429s."""

from __future__ import annotations

import importlib.util
import io
import json
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

import aigateway
from aigateway import (
    AsyncClient,
    BatchResult,
    ChatCompletion,
    Client,
    InvalidRequestError,
    NotFoundError,
    RateLimitError,
    RetryPolicy,
    RunResult,
)
from aigateway.helpers.batch import RecordedError
from aigateway.testing import MockGateway

from ..conftest import in_process_client

pytestmark = pytest.mark.anyio

HAS_TQDM = importlib.util.find_spec("tqdm") is not None


def chat_item(n: int, **extra: Any) -> dict[str, Any]:
    return {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": f"item {n}"}], **extra}


def echo(request: Mapping[str, Any]) -> str:
    return f"echo {request['messages'][-1]['content']}"


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def batch(client: Client | AsyncClient, items: Any, **options: Any) -> BatchResult:
    """The batch of either driver, without a bar unless asked."""
    options.setdefault("progress", False)
    if isinstance(client, AsyncClient):
        return await aigateway.arun_batch(client, items, **options)
    return aigateway.run_batch(client, items, **options)


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


class FakeBar:
    def __init__(self) -> None:
        self.count = 0
        self.postfixes: list[dict[str, object]] = []
        self.closed = False

    def update(self, n: int = 1) -> None:
        self.count += n

    def set_postfix(self, ordered_dict: Mapping[str, object], refresh: bool = True) -> None:
        self.postfixes.append(dict(ordered_dict))

    def close(self) -> None:
        self.closed = True


# -- order, the ledger, concurrency ---------------------------------------------------------


async def test_fifty_items_come_back_in_order_and_match_the_ledger(kind: str) -> None:
    gateway = MockGateway(seed=3)
    gateway.reply_with(echo)
    async with in_process_client(kind, gateway) as client:
        await aigateway_warm_up(client)  # so the client knows the balance before the batch
        results = await batch(client, [chat_item(n) for n in range(50)], concurrency=8)
    assert len(results) == 50
    assert not results.failed
    assert [r.index for r in results] == list(range(50))
    assert [r.id for r in results] == list(range(50))
    assert [r.value.text for r in results] == [f"echo item {n}" for n in range(50)]
    charges = gateway.charges[1:]
    assert len(charges) == 50
    assert results.credits_spent == pytest.approx(sum(c.amount for c in charges))


async def aigateway_warm_up(client: Client | AsyncClient) -> None:
    reply = client.chat.completions.create(**chat_item(-1))
    if isinstance(client, AsyncClient):
        await reply  # type: ignore[misc]


async def test_no_more_than_concurrency_items_are_in_flight(kind: str) -> None:
    gateway = MockGateway()
    lock = threading.Lock()
    in_flight, peak = 0, 0
    five_in = anyio.Event()

    def enter() -> None:
        nonlocal in_flight, peak
        with lock:
            in_flight += 1
            peak = max(peak, in_flight)
            if in_flight == 5 and kind == "async":
                five_in.set()

    def leave() -> None:
        nonlocal in_flight
        with lock:
            in_flight -= 1

    def sync_call(client: Client, item: dict[str, Any]) -> ChatCompletion:
        enter()
        try:
            return client.chat.completions.create(**item)
        finally:
            leave()

    async def async_call(client: AsyncClient, item: dict[str, Any]) -> ChatCompletion:
        enter()
        try:
            await five_in.wait()  # the first five wait for each other
            return await client.chat.completions.create(**item)
        finally:
            leave()

    call = sync_call if kind == "sync" else async_call
    async with in_process_client(kind, gateway) as client:
        results = await batch(client, [chat_item(n) for n in range(30)], concurrency=5, call=call)
    assert len(results.ok) == 30
    assert 1 <= peak <= 5
    if kind == "async":
        assert peak == 5


# -- per-item errors ------------------------------------------------------------------------


async def test_bad_items_are_their_own_errors_and_nothing_is_sent_for_them(kind: str) -> None:
    gateway = MockGateway()
    items: list[Any] = [
        chat_item(0),
        "not a dict",
        chat_item(2),
        {"model": "gpt-4o-mini", "messages": [{"role": "robot", "content": "x"}]},
        chat_item(4, stream=True),
        {**chat_item(5), "id": 2.5},
        chat_item(6),
    ]
    async with in_process_client(kind, gateway) as client:
        results = await batch(client, items, concurrency=3)
    assert [r.ok for r in results] == [True, False, True, False, False, False, True]
    for failed in results.failed:
        assert isinstance(failed.error, InvalidRequestError)
    assert "a chat item is a dict" in str(results[1].error)
    assert "unknown role" in str(results[3].error)
    assert "stream" in str(results[4].error)
    assert "an id is a str or an int" in str(results[5].error)
    assert len(gateway.requests) == 3


async def test_a_failing_item_does_not_abort_the_batch(kind: str) -> None:
    gateway = MockGateway()
    items = [chat_item(n) for n in range(6)]
    items[2] = {**items[2], "model": "no-such-model"}
    async with in_process_client(kind, gateway, max_retries=0) as client:
        results = await batch(client, items, concurrency=2)
    assert [r.index for r in results.failed] == [2]
    assert isinstance(results[2].error, NotFoundError)
    assert results[2].value is None
    assert len(results.ok) == 5
    assert results.values[2] is None


async def test_ids_name_items_and_must_be_unique(kind: str) -> None:
    gateway = MockGateway()
    async with in_process_client(kind, gateway) as client:
        results = await batch(client, [chat_item(0, id="a"), chat_item(1, id="b")])
        assert [r.id for r in results] == ["a", "b"]
        with pytest.raises(InvalidRequestError, match="ids must be unique"):
            await batch(client, [chat_item(0), chat_item(1, id=0)])
        with pytest.raises(InvalidRequestError, match="concurrency"):
            await batch(client, [chat_item(0)], concurrency=0)
        with pytest.raises(InvalidRequestError, match="kind"):
            await batch(client, [chat_item(0)], kind="images")
    assert len(gateway.requests) == 2  # the refused batches sent nothing


async def test_run_items_go_to_client_run(kind: str) -> None:
    gateway = MockGateway()
    items = [
        {"model": "tavily/search", "inputs": {"query": "gateway", "num_results": 1}},
        {"model": "tavily/search"},  # no inputs: the client refuses it
    ]
    async with in_process_client(kind, gateway) as client:
        results = await batch(client, items, kind="run")
    assert isinstance(results[0].value, RunResult)
    assert isinstance(results[1].error, InvalidRequestError)
    assert results.credits_spent == pytest.approx(results[0].value.usage.credits)


# -- checkpoints ----------------------------------------------------------------------------


def test_an_interrupted_batch_resumes_without_repeating_items(tmp_path: Path) -> None:
    gateway = MockGateway()
    gateway.reply_with(echo)
    path = tmp_path / "batch.jsonl"
    items = [chat_item(n) for n in range(50)]

    def interrupt_at_20(client: Client, item: dict[str, Any]) -> ChatCompletion:
        if item["messages"][0]["content"] == "item 20":
            raise KeyboardInterrupt
        return client.chat.completions.create(**item)

    with gateway.client() as client:
        with pytest.raises(KeyboardInterrupt):
            aigateway.run_batch(
                client, items, concurrency=8, call=interrupt_at_20, checkpoint=path, progress=False
            )
        first = lines(path)  # every line is whole JSON
        assert 20 <= len(first) < 50
        assert 20 not in {line["id"] for line in first}
        assert len(gateway.requests) == len(first)  # what was in flight finished and was kept

        results = aigateway.run_batch(client, items, checkpoint=path, progress=False)
    assert len(gateway.requests) == 50  # the resumed run sent only the rest
    assert len(gateway.charges) == 50
    assert not results.failed
    assert sum(r.from_checkpoint for r in results) == len(first)
    assert all(isinstance(r.value, ChatCompletion) for r in results)
    assert [r.value.text for r in results] == [f"echo item {n}" for n in range(50)]
    assert len(lines(path)) == 50


async def test_a_resumed_batch_loads_replies_and_errors_back(kind: str, tmp_path: Path) -> None:
    gateway = MockGateway()
    path = tmp_path / "batch.jsonl"
    items = [chat_item(0, id="a"), chat_item(1, id="b", model="no-such-model")]
    run_items = [{"id": "r", "model": "tavily/search", "inputs": {"query": "q"}}]
    async with in_process_client(kind, gateway, max_retries=0) as client:
        await batch(client, items, checkpoint=path)
        await batch(client, run_items, kind="run", checkpoint=path)
        sent = len(gateway.requests)
        again = await batch(client, items, checkpoint=path)
        run_again = await batch(client, run_items, kind="run", checkpoint=path)
    assert len(gateway.requests) == sent == 3
    assert isinstance(again[0].value, ChatCompletion)
    assert again[0].from_checkpoint
    error = again[1].error
    assert isinstance(error, RecordedError)
    assert (error.kind, error.status_code) == ("NotFoundError", 404)
    assert "no-such-model" in str(error)
    assert type(run_again[0].value) is RunResult
    assert run_again[0].value.usage is not None


async def test_a_line_cut_short_is_ignored_and_its_item_redone(kind: str, tmp_path: Path) -> None:
    gateway = MockGateway()
    path = tmp_path / "batch.jsonl"
    items = [chat_item(n) for n in range(5)]
    async with in_process_client(kind, gateway) as client:
        await batch(client, items, concurrency=1, checkpoint=path)
        data = path.read_bytes()
        path.write_bytes(data[:-20])  # the last line, cut mid-write
        cut = json.loads(data.splitlines()[-1])["id"]
        results = await batch(client, items, checkpoint=path)
    assert len(gateway.requests) == 6  # only the cut item again
    assert [r.from_checkpoint for r in results] == [r.id != cut for r in results]
    assert sorted(line["id"] for line in lines(path)) == [0, 1, 2, 3, 4]


async def test_a_cancelled_async_batch_leaves_whole_lines(tmp_path: Path) -> None:
    gateway = MockGateway()
    path = tmp_path / "batch.jsonl"
    items = [chat_item(n) for n in range(40)]
    with anyio.CancelScope() as scope:

        async def cancel_at_20(client: AsyncClient, item: dict[str, Any]) -> ChatCompletion:
            if item["messages"][0]["content"] == "item 20":
                for _ in range(10_000):  # let the other workers finish some items first
                    if path.exists() and path.read_bytes().count(b"\n"):
                        break
                    await anyio.sleep(0)
                scope.cancel()
            await anyio.sleep(0)
            return await client.chat.completions.create(**item)

        async with gateway.async_client() as client:
            await aigateway.arun_batch(
                client, items, concurrency=4, call=cancel_at_20, checkpoint=path, progress=False
            )
    assert scope.cancelled_caught
    kept = lines(path)
    assert 0 < len(kept) < 40
    async with gateway.async_client() as client:
        before = len(gateway.requests)
        results = await aigateway.arun_batch(client, items, checkpoint=path, progress=False)
    assert len(gateway.requests) - before == 40 - len(kept)
    assert len(results.ok) == 40


# -- progress -------------------------------------------------------------------------------


async def test_a_progress_bar_counts_done_failed_and_credits(kind: str, tmp_path: Path) -> None:
    gateway = MockGateway()
    path = tmp_path / "batch.jsonl"
    items = [chat_item(n) for n in range(4)] + [chat_item(4, model="no-such-model")]
    async with in_process_client(kind, gateway, max_retries=0) as client:
        await aigateway_warm_up(client)
        bar = FakeBar()
        await batch(client, items[:2], checkpoint=path, progress=bar)
        assert bar.count == 2
        assert not bar.closed  # the caller's bar stays theirs
        bar = FakeBar()
        results = await batch(client, items, checkpoint=path, progress=bar)
    assert bar.count == 5  # 2 from the checkpoint, 3 sent
    assert bar.postfixes[-1]["failed"] == 1
    assert bar.postfixes[-1]["credits"] == f"{results.credits_spent:.4g}"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


async def test_progress_by_default_needs_tqdm_and_a_terminal(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    gateway = MockGateway()
    async with in_process_client(kind, gateway) as client:
        assert (await batch(client, [chat_item(0)], progress=None))[0].ok  # pytest's stderr
        terminal = Terminal()
        monkeypatch.setattr(sys, "stderr", terminal)
        assert (await batch(client, [chat_item(1)], progress=None))[0].ok
        drawn = terminal.getvalue()
        assert (await batch(client, [chat_item(2)], progress=False))[0].ok
    assert ("1/1" in drawn) is HAS_TQDM  # no tqdm: no bar, and no error
    assert terminal.getvalue() == drawn  # progress=False drew nothing


async def test_progress_true_without_tqdm_names_the_extra(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("tqdm", "tqdm.auto"):
        monkeypatch.setitem(sys.modules, name, None)  # as if the extra were not installed
    gateway = MockGateway()
    async with in_process_client(kind, gateway) as client:
        with pytest.raises(ImportError, match=r"pip install 'tqdm>=4.60'.*-e '\.\[progress\]'"):
            await batch(client, [chat_item(0)], progress=True, checkpoint=tmp_path / "c.jsonl")
    assert not gateway.requests


@pytest.mark.skipif(not HAS_TQDM, reason="tqdm is not installed")
async def test_progress_true_shows_a_tqdm_bar(
    kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    gateway = MockGateway()
    async with in_process_client(kind, gateway) as client:
        await batch(client, [chat_item(n) for n in range(3)], progress=True)
    assert "3/3" in capsys.readouterr().err


# -- rate limits ----------------------------------------------------------------------------


def mock_time_policy(gateway: MockGateway, **changes: Any) -> RetryPolicy:
    async def async_sleep(seconds: float) -> None:
        gateway.clock.advance(seconds)

    return RetryPolicy(
        sleep=gateway.clock.advance,
        async_sleep=async_sleep,
        now=gateway.clock.now,
        monotonic=gateway.clock.now,
        **changes,
    )


class Pauses(list[float]):
    """The batch's pauses, moving the mock clock instead of sleeping."""

    def __init__(self, gateway: MockGateway) -> None:
        super().__init__()
        self.gateway = gateway

    def sleep(self, seconds: float) -> None:
        self.append(seconds)
        self.gateway.clock.advance(seconds)

    async def async_sleep(self, seconds: float) -> None:
        self.sleep(seconds)

    def options(self, kind: str) -> dict[str, Any]:
        sleep = self.sleep if kind == "sync" else self.async_sleep
        return {"sleep": sleep, "clock": self.gateway.clock.now}


async def test_a_spent_window_pauses_the_whole_batch_once(kind: str) -> None:
    gateway = MockGateway(rate_limits="free_plan")  # 10 requests a minute, 2 at once
    pauses = Pauses(gateway)
    start = gateway.clock.now()
    policy = mock_time_policy(gateway, max_wait=5)  # the window's wait is beyond the cap
    async with in_process_client(kind, gateway, retry_policy=policy) as client:
        results = await batch(
            client, [chat_item(n) for n in range(25)], concurrency=2, **pauses.options(kind)
        )
    assert len(results.ok) == 25
    refused = len(gateway.requests) - 25
    # one pause per spent window (to its end, 40 s off at the start, then a whole minute),
    # not one per worker, and a handful of refusals rather than a storm
    assert pauses == [40, 60]
    assert gateway.clock.now() - start == 100
    assert refused <= 2 * 2


async def test_a_long_rate_limit_is_waited_out_and_tried_once_more(kind: str) -> None:
    gateway = MockGateway()
    pauses = Pauses(gateway)
    gateway.faults.fail(429, times=1, retry_after=120)  # beyond the client's 60 s cap
    async with in_process_client(kind, gateway) as client:
        results = await batch(
            client, [chat_item(0), chat_item(1)], concurrency=1, **pauses.options(kind)
        )
        assert pauses == [120]
        assert len(results.ok) == 2
        gateway.faults.fail(429, times=2, retry_after=120)
        results = await batch(client, [chat_item(2)], **pauses.options(kind))
    error = results[0].error
    assert isinstance(error, RateLimitError)
    assert error.retry_after == 120
    assert pauses == [120, 120]  # tried once more, then given up


class WindowTakenByAnother:
    """``call`` and progress bar of a batch of items 0 and 1: item 0 is refused (a wait beyond
    the retry cap: it pauses the batch); item 1 goes out once that refusal is in and gets its
    reply; then item 0 is refused again, as if item 1 had taken the window it waited for."""

    def __init__(self, gateway: MockGateway, kind: str) -> None:
        self.gateway = gateway
        self.tries = 0
        event: Any = threading.Event if kind == "sync" else anyio.Event
        self.first_refused, self.other_done = event(), event()

    def update(self, n: int = 1) -> None:  # an item has its outcome: only item 1 can, first
        self.other_done.set()

    def set_postfix(self, ordered_dict: Mapping[str, object], refresh: bool = True) -> None:
        pass

    def close(self) -> None:
        pass

    def refuse(self) -> None:
        """Item 0's first two tries are refused (nothing else is in flight then)."""
        if self.tries < 3:
            self.gateway.faults.fail(429, times=1, retry_after=30)

    def call(self, client: Client, item: dict[str, Any]) -> Any:
        if item["messages"][0]["content"] == "item 1":
            assert self.first_refused.wait(10)
        else:
            self.tries += 1
            if self.tries == 2:
                assert self.other_done.wait(10)
            self.refuse()
        try:
            return client.chat.completions.create(**item)
        finally:
            self.first_refused.set()

    async def acall(self, client: AsyncClient, item: dict[str, Any]) -> Any:
        if item["messages"][0]["content"] == "item 1":
            await self.first_refused.wait()
        else:
            self.tries += 1
            if self.tries == 2:
                await self.other_done.wait()
            self.refuse()
        try:
            return await client.chat.completions.create(**item)
        finally:
            self.first_refused.set()


async def test_an_item_whose_new_window_another_took_waits_for_the_next(kind: str) -> None:
    """The pause an item began let another item through, which took the new window: refused
    again, the item is not given up (its one retry is for a gateway that keeps refusing it
    with nothing getting through) but waits for the next window."""
    gateway = MockGateway()
    pauses = Pauses(gateway)
    script = WindowTakenByAnother(gateway, kind)
    async with in_process_client(
        kind, gateway, retry_policy=mock_time_policy(gateway, max_wait=5)
    ) as client:
        results = await batch(
            client,
            [chat_item(0), chat_item(1)],
            concurrency=2,
            call=script.call if kind == "sync" else script.acall,
            progress=script,
            **pauses.options(kind),
        )
    assert [result.ok for result in results] == [True, True]
    assert script.tries == 3
    assert pauses == [30, 30]
