"""Many processes, one key: shared rate limits, a shared credit budget and idempotency hold
across processes, proved against the served mock with a real Redis.

Eight spawned worker processes each run their own `Client` with the same `RedisState`. The
mock is served in this process with its clock running `SPEED` times as fast as the wall clock,
and each worker follows that clock (see tests/integrations/shared_workers.py), so seven
rate-limit minutes pass in a few seconds. What happened is read from the gateway itself: its request log (mock
times and statuses), its charges and its idempotency store.

Deselect with ``-m "not processes"``.
"""

from __future__ import annotations

import math
import multiprocessing
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from multiprocessing.pool import Pool
from typing import Any

import httpx
import pytest

from aigateway.testing import MockGateway
from aigateway.testing._core.request_log import LoggedRequest

from .shared_workers import (
    Job,
    MockTime,
    chat_until_the_budget_is_spent,
    send_chats,
    send_email,
    warm_up,
)

pytestmark = pytest.mark.processes
pytest.importorskip("uvicorn")
pytest.importorskip("redis")

from aigateway.shared import RedisState  # noqa: E402  (after the skips: needs the redis extra)

WORKERS = 8
SPEED = 60.0
"""Mock seconds per wall second: a 60-request minute in one wall second, the 400 requests in
about seven. Eight warm workers send a window's 60 requests in a few tenths of a second, so
each window fills early and then stands idle until it ends. On a loaded machine a window can
still end while a request is on its way (a few wall milliseconds are a mock second): the
gateway counts it in the next window, whose 61st request is then a 429, which the rate-limit
test allows (one per worker per window)."""
MINUTE = 60.0


@dataclass
class Workers:
    """Eight spawned worker processes, and what starts them together (see `start_together`)."""

    pool: Pool
    gate: Any
    start: Any

    def start_together(self, gateway: MockGateway) -> None:
        """Once every worker is ready to send, put the mock's clock at the start of its next
        window and let them all go: the run does not depend on how long they took to start
        (on a busy machine, seconds: hundreds of mock seconds)."""
        self.gate.wait(timeout=60)
        now = gateway.clock.now()
        gateway.clock.set(math.floor(now / MINUTE) * MINUTE + MINUTE)
        self.start[0], self.start[1] = time.time(), gateway.clock.now()
        self.gate.wait(timeout=60)


@pytest.fixture(scope="module")
def workers() -> Iterator[Workers]:
    """Eight spawned worker processes for the whole module, each warmed up (the SDK imported,
    its reply models built) before any test starts a clock; terminated at the end."""
    spawn = multiprocessing.get_context("spawn")
    ready, gate = spawn.Barrier(WORKERS + 1), spawn.Barrier(WORKERS + 1)
    start = spawn.Array("d", 2, lock=False)
    pool = spawn.Pool(WORKERS, initializer=warm_up, initargs=(ready, gate, start))
    try:
        ready.wait(timeout=120)
        yield Workers(pool, gate, start)
    finally:
        pool.terminate()
        pool.join()


def request_log(gateway: MockGateway, url: str) -> list[LoggedRequest]:
    """The gateway's log of requests answered (mock time and status), from its admin API."""
    root = url.removesuffix("/v1")
    reply = httpx.get(
        f"{root}/_mock/requests",
        params={"limit": 1000},
        headers={"Authorization": f"Bearer {gateway.admin_token}"},
    )
    reply.raise_for_status()
    return [LoggedRequest(**entry) for entry in reply.json()["data"]]


def mock_time(gateway: MockGateway) -> MockTime:
    """The served gateway's clock as the workers follow it."""
    wall0, mock0 = time.time(), gateway.clock.now()
    return MockTime(wall0, mock0, gateway.clock.speed)


def test_eight_processes_share_one_keys_rate_limit(workers: Workers, redis_url: str) -> None:
    gateway = MockGateway(rate_limits="free")  # 60 requests a minute
    with gateway.serve(clock_speed=SPEED) as url:
        job = Job(
            url,
            gateway.api_key,
            mock_time(gateway),
            RedisState(redis_url, on_unavailable="raise", timeout=5.0),
            {"wait_for_rate_limit": True, "max_retries": 10},
        )
        running = workers.pool.starmap_async(
            send_chats, [(job, 400 // WORKERS)] * WORKERS, chunksize=1
        )
        workers.start_together(gateway)
        started = time.monotonic()
        sent = running.get(timeout=120)
        elapsed = time.monotonic() - started
        log = request_log(gateway, url)
    assert sum(sent) == 400
    chats = [r for r in log if r.path.endswith("/chat/completions")]
    admitted = [r for r in chats if r.status != 429]
    assert len(admitted) == 400
    assert all(r.status == 200 for r in admitted)
    # windows by when the gateway received (and counted) each request, not when it answered
    first_window = math.floor(min(r.received for r in chats) / MINUTE)
    per_window = Counter(math.floor(r.received / MINUTE) for r in admitted)
    refused = Counter(math.floor(r.received / MINUTE) for r in chats if r.status == 429)
    print(f"{elapsed:.1f} s wall; admitted per window {sorted(per_window.items())}; 429s {refused}")
    # Clients that keep to the shared limit are refused only where a request sent near the end
    # of a window by the workers' clock reaches the gateway in the next one (on a loaded
    # machine, a few wall milliseconds are a mock second): at most one per worker per window.
    # Limits kept per process instead (60 each, 480 a minute together) would see hundreds.
    late = sum(count for window, count in refused.items() if window != first_window)
    assert late <= WORKERS * len(per_window), f"429s after the first window: {refused}"
    assert max(per_window.values()) <= 60
    # 400 requests at 60 a minute cannot take fewer than 7 windows
    assert len(per_window) >= 7


def test_eight_processes_share_one_credit_budget(workers: Workers, redis_url: str) -> None:
    gateway = MockGateway(rate_limits="unlimited")
    budget, model = 0.05, "claude-3-opus"  # about 0.00045 a call: 112 calls
    with gateway.serve(clock_speed=SPEED) as url:
        state = RedisState(redis_url, on_unavailable="raise", timeout=5.0)
        job = Job(url, gateway.api_key, mock_time(gateway), state, {"max_credits": budget})
        # Eight processes start at once on a key whose calls' cost nobody knows yet: a cost is
        # read from how far the balance fell, so the first reply's own is never known.
        sent = workers.pool.starmap(
            chat_until_the_budget_is_spent, [(job, model)] * WORKERS, chunksize=1
        )
        usage = state.usage(gateway.api_key)["total"]
    charges = gateway.charges
    spent = float(sum(Decimal(str(c.amount)) for c in charges))
    most = max(c.amount for c in charges)
    over = spent - budget
    print(f"budget {budget}: spent {spent:.6f} in {len(charges)} calls ({most:.6f} each at most;")
    print(f"  over by {over:.6f}); per process {sent}; shared usage {usage}")
    assert sum(sent) == len(charges)
    assert min(sent) >= 1  # every process took part
    assert usage["uncounted"] == 1  # the first reply's cost, counted at the others' average
    # within one call's cost of the budget, either way (the first call's cost is estimated)
    assert -most <= over <= most, f"over by {over:.6f}, more than one call ({most:.6f})"


def test_an_act_whose_reply_was_lost_is_replayed_to_another_process(redis_url: str) -> None:
    spawn = multiprocessing.get_context("spawn")
    ready = spawn.Barrier(3)
    one, other = (spawn.Pool(1, initializer=warm_up, initargs=(ready,)) for _ in range(2))
    gateway = MockGateway(rate_limits="unlimited")
    try:
        ready.wait(timeout=120)
        with gateway.serve(clock_speed=SPEED) as url:
            state = RedisState(redis_url, on_unavailable="raise", timeout=5.0)
            options = {"auto_idempotency_keys": True, "max_retries": 0}
            job = Job(url, gateway.api_key, mock_time(gateway), state, options)
            gateway.faults.drop(after_processing=True, path="/v1/run")
            first = one.apply(send_email, (job,))  # performed, its reply lost: it gives up
            second = other.apply(send_email, (job,))  # another process sends the same email
            log = request_log(gateway, url)
    finally:
        for process in (one, other):
            process.terminate()
            process.join()
    assert first["error"] == "APIConnectionError"
    assert first["pid"] != second["pid"]
    assert second["replayed"] == "true"
    sent = gateway.requests
    assert [r.headers["idempotency-key"] for r in sent] == [sent[0].headers["idempotency-key"]] * 2
    assert [r.status for r in log] == [None, 200]
    (charge,) = gateway.charges  # performed and billed once: by the first process's request
    assert charge.request_id == log[0].request_id
    assert second["result"]["message_id"].startswith("msg_")
