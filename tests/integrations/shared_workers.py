"""What the worker processes of tests/integrations/test_shared_processes.py run (spawned:
importable, and every argument and result picklable).

Each worker builds its own `Client` on the served mock, with the shared state it is given and
a retry policy on the mock's accelerated clock: it reads the mock's time from the wall clock
(``mock0 + (time.time() - wall0) * speed``) and sleeps ``seconds / speed`` of wall time.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from aigateway import BudgetExceededError, Client, RetryPolicy

_gate: Any = None
"""A barrier the workers of a pool and the test process meet at (see `wait_for_the_start`)."""
_start: Any = None
"""Shared ``(wall0, mock0)``: the test writes where the mock's clock stands when it opens the
gate."""


@dataclass
class MockTime:
    """The served mock's accelerated clock, as a worker process can follow it."""

    wall0: float
    mock0: float
    speed: float

    def wait_for_the_start(self) -> None:
        """Wait until every worker is ready; the test then puts the mock's clock where it
        wants it (``_start``) and lets all of them go at once."""
        _gate.wait(timeout=60)  # every worker is ready: the test sets the clock
        _gate.wait(timeout=60)  # go
        self.wall0, self.mock0 = _start[0], _start[1]

    def now(self) -> float:
        return self.mock0 + (time.time() - self.wall0) * self.speed

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds) / self.speed)

    def retry_policy(self) -> RetryPolicy:
        return RetryPolicy(now=self.now, sleep=self.sleep)


@dataclass(frozen=True)
class Job:
    """One worker's part: where to send, with which key, state and clock."""

    base_url: str
    api_key: str
    clock: MockTime
    shared_state: Any = None
    options: dict[str, Any] = field(default_factory=dict)
    """More `Client` options (``max_credits``, ``max_retries``...)."""

    def client(self) -> Client:
        options: dict[str, Any] = {"shared_state": self.shared_state} if self.shared_state else {}
        return Client(
            api_key=self.api_key,
            base_url=self.base_url,
            retry_policy=self.clock.retry_policy(),
            **options,
            **self.options,
        )


CHAT = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 5}
EMAIL = {
    "model": "resend/email",
    "to": "ada@example.com",
    "subject": "Your order",
    "text": "It has shipped.",
}


def warm_up(ready: Any = None, gate: Any = None, start: Any = None) -> None:
    """A pool's initializer: import and build what the jobs need (modules, reply models)
    before the clock matters, then wait at ``ready`` (a barrier) for the other workers.
    ``gate`` and ``start`` are kept for `MockTime.wait_for_the_start`."""
    global _gate, _start
    _gate, _start = gate, start
    import redis  # noqa: F401  (RedisState imports it on first use)

    import aigateway.shared  # noqa: F401
    from aigateway.testing import MockGateway

    with MockGateway(rate_limits="unlimited").client() as client:
        client.chat.completions.create(model="gpt-4o-mini", **CHAT)  # type: ignore[arg-type]
        client.email.send(**EMAIL)  # type: ignore[arg-type]
    if ready is not None:
        ready.wait(timeout=120)


def send_chats(job: Job, count: int, model: str = "gpt-4o-mini", together: bool = True) -> int:
    """Send ``count`` chat requests, waiting for the rate limit, all workers starting at
    once (unless ``together`` is false); returns how many succeeded."""
    with job.client() as client:
        if together:
            job.clock.wait_for_the_start()
        for _ in range(count):
            client.chat.completions.create(model=model, **CHAT)  # type: ignore[arg-type]
    return count


def chat_until_the_budget_is_spent(job: Job, model: str) -> int:
    """Send chat requests until `BudgetExceededError`; returns how many were sent."""
    sent = 0
    with job.client() as client:
        while True:
            try:
                client.chat.completions.create(model=model, **CHAT)  # type: ignore[arg-type]
            except BudgetExceededError:
                return sent
            sent += 1
            if sent > 10_000:
                raise AssertionError("the budget never ran out")


def send_email(job: Job) -> dict[str, Any]:
    """Send one email; returns this process's id and the result and whether the gateway
    replayed it, or the error's class name when it failed."""
    with job.client() as client:
        try:
            raw = client.email.with_raw_response.send(**EMAIL)  # type: ignore[arg-type]
        except Exception as exc:  # reported to the test: the class is what it checks
            return {"pid": os.getpid(), "error": type(exc).__name__}
        return {
            "pid": os.getpid(),
            "result": raw.parse().model_dump(),
            "replayed": raw.headers.get("idempotent-replayed"),
        }
