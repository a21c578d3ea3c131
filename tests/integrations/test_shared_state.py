"""Limits, budget, usage and idempotency keys shared in Redis by clients on one key.

Two clients in one process stand in for two processes: they share nothing but the Redis
server (each has its own `ClientState`). Redis is real (the ``redis_url`` fixture); the
gateway is the mock, whose clock the clients' waits move, so nothing sleeps.
"""

from __future__ import annotations

import pickle
import socket
import threading
import warnings
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from typing import Any

import pytest
import redis

from aigateway import (
    APIConnectionError,
    AsyncClient,
    BudgetExceededError,
    Client,
    ConfigurationError,
    RateLimit,
    RateLimitError,
    SharedStateError,
    SharedStateWarning,
)
from aigateway.integrations.redis.binding import SharedCall
from aigateway.shared import RedisState
from aigateway.testing import MockGateway, RateLimits

from ..conftest import in_process_client, resolve
from ..redis_server import RedisServer

pytestmark = pytest.mark.anyio

HELLO = [{"role": "user", "content": "Tell me about rivers"}]


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def clients(
    stack: AsyncExitStack, kind: str, gateway: MockGateway, count: int, **options: Any
) -> list[Client | AsyncClient]:
    return [
        await stack.enter_async_context(in_process_client(kind, gateway, **options))
        for _ in range(count)
    ]


def list_models(client: Client | AsyncClient) -> Any:
    return resolve(client.models.list())


def send_email(client: Client | AsyncClient, to: str = "a@example.com") -> Any:
    return resolve(
        client.email.with_raw_response.send(
            model="resend/email", to=[to], subject="Hi", text="Hello"
        )
    )


# Rate limit


async def test_two_clients_keep_to_one_rate_limit_together(
    kind: str, gateway: MockGateway, redis_url: str
) -> None:
    state = RedisState(redis_url)
    start = gateway.clock.now()
    async with AsyncExitStack() as stack:
        first, second = await clients(
            stack, kind, gateway, 2, shared_state=state, wait_for_rate_limit=True, max_retries=0
        )
        await list_models(first)  # the gateway's limit (60/min) is learnt from this reply
        for index in range(149):  # a 429 would raise: no retries
            await list_models(second if index % 2 else first)
    # 150 requests at 60/min from 40 s before a whole minute: the two resets were waited for
    assert gateway.clock.now() - start == 100


async def test_each_client_alone_would_exceed_the_limit(kind: str, gateway: MockGateway) -> None:
    async with AsyncExitStack() as stack:
        first, second = await clients(
            stack, kind, gateway, 2, wait_for_rate_limit=True, max_retries=0
        )

        async def send_150() -> None:
            for index in range(150):
                await list_models(second if index % 2 else first)

        with pytest.raises(RateLimitError):
            await send_150()


async def test_the_smaller_stated_rate_limit_wins(kind: str, redis_url: str) -> None:
    gateway = MockGateway(seed=3, rate_limits="unlimited")
    state = RedisState(redis_url)
    start = gateway.clock.now()
    async with AsyncExitStack() as stack:
        (loose,) = await clients(
            stack, kind, gateway, 1, shared_state=state, rate_limit=RateLimit(10, 60.0)
        )
        (strict,) = await clients(
            stack, kind, gateway, 1, shared_state=state, rate_limit=RateLimit(requests=5)
        )
        for index in range(11):
            await list_models(loose if index % 2 else strict)
    # 5 per window, not 10 nor the gateway's 2**31 - 1; the windows are the gateway's (its
    # minute resets 40 s after the start, then each minute): 5 at once, 5 at 40 s, 1 at 100 s
    assert gateway.clock.now() - start == 100


async def test_the_last_half_second_of_a_window_is_left_unused(kind: str, redis_url: str) -> None:
    gateway = MockGateway(seed=3, rate_limits="unlimited")
    start = gateway.clock.now()
    async with in_process_client(
        kind, gateway, shared_state=RedisState(redis_url), rate_limit=RateLimit(5)
    ) as client:
        await list_models(client)  # the gateway's window is learnt: it resets at 40 s
        gateway.clock.advance(39.75)
        await list_models(client)  # could reach the gateway in its next window: waits
    assert gateway.clock.now() - start == 40


def test_a_stated_rate_limit_needs_a_shared_state(gateway: MockGateway) -> None:
    with pytest.raises(ConfigurationError, match="shared_state"):
        gateway.client(rate_limit=RateLimit(5))
    with pytest.raises(ConfigurationError, match="requests"):
        RateLimit(0)
    with pytest.raises(ConfigurationError, match="RedisState"):
        gateway.client(shared_state="redis://localhost")


# Budget and usage


async def test_two_clients_share_one_credit_budget(
    kind: str, gateway: MockGateway, redis_url: str
) -> None:
    state = RedisState(redis_url)
    balance = gateway.credits()
    async with AsyncExitStack() as stack:
        first, second = await clients(stack, kind, gateway, 2, shared_state=state, max_credits=0.1)
        calls = 0

        async def chat_until_refused() -> None:
            nonlocal calls
            while True:
                client = second if calls % 2 else first
                await resolve(
                    client.chat.completions.create(
                        model="gpt-4o", messages=[{"role": "user", "content": "hi " * 50}]
                    )
                )
                calls += 1

        with pytest.raises(BudgetExceededError) as caught:
            await chat_until_refused()
        spent = balance - gateway.credits()
        per_call = spent / calls
        assert 0.1 <= spent <= 0.1 + 2 * per_call  # one call's cost over, and one uncounted
        assert caught.value.max_credits == 0.1
        assert calls > 2
        usage = state.usage(first.config.api_key.reveal())
        assert usage["total"]["requests"] == calls
        assert usage["models"]["gpt-4o"]["requests"] == calls
        assert usage["total"]["credits"] == pytest.approx(spent - per_call, rel=0.2)
        # A budget set later is a new one; with_budget shares the same way.
        budgeted = second.with_budget(max_credits=5)
        await list_models(budgeted)


# Idempotency keys of acts


async def test_an_act_retried_from_another_client_is_performed_once(
    kind: str, gateway: MockGateway, redis_url: str
) -> None:
    state = RedisState(redis_url)
    async with AsyncExitStack() as stack:
        first, second = await clients(
            stack,
            kind,
            gateway,
            2,
            shared_state=state,
            auto_idempotency_keys=True,
            max_retries=0,
        )
        gateway.faults.drop(after_processing=True, path="/v1/run")
        with pytest.raises(APIConnectionError):  # the reply was lost: the sender never knows
            await send_email(first)
        raw = await send_email(second)  # another process sends the same act
        assert raw.headers["idempotent-replayed"] == "true"
        assert len(gateway.charges) == 1
        again = await send_email(second)  # confirmed: a deliberate repeat is a new act
        assert "idempotent-replayed" not in again.headers
        assert len(gateway.charges) == 2
        keys = [request.headers["idempotency-key"] for request in gateway.requests]
        assert keys[0] == keys[1] != keys[2]


# Keys: isolated, expiring, never stored


async def test_keys_are_isolated_and_the_key_is_never_stored(
    kind: str, gateway: MockGateway, redis_url: str
) -> None:
    state = RedisState(redis_url, namespace="team")
    async with AsyncExitStack() as stack:
        (client,) = await clients(
            stack,
            kind,
            gateway,
            1,
            shared_state=state,
            wait_for_rate_limit=True,
            max_credits=5.0,
            auto_idempotency_keys=True,
        )
        await list_models(client)
        await send_email(client)
        await resolve(
            client.chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": "x"}]
            )
        )
    api_key = gateway.api_key
    server = redis.Redis.from_url(redis_url)
    names = list(server.scan_iter())
    assert names
    assert all(name.startswith(state.prefix(api_key).encode()) for name in names)
    assert state.prefix(api_key) != state.prefix(api_key + "x")
    for name in names:
        assert 0 < server.pttl(name) <= 86_400_000  # every key expires
        kind_of = server.type(name)
        value = server.hgetall(name) if kind_of == b"hash" else {name: server.get(name)}
        dumped = repr(value).encode() + name
        assert api_key.encode() not in dumped


async def test_two_keys_never_share_limits_or_budgets(
    kind: str, gateway: MockGateway, redis_url: str
) -> None:
    other_key = gateway.create_account().key
    state = RedisState(redis_url)
    options: dict[str, Any] = {"shared_state": state, "max_credits": 1e-9}
    start = gateway.clock.now()
    async with AsyncExitStack() as stack:
        (first,) = await clients(stack, kind, gateway, 1, rate_limit=RateLimit(1), **options)
        (second,) = await clients(stack, kind, gateway, 1, api_key=other_key, **options)
        chat = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi " * 50}]}
        await resolve(first.chat.completions.create(**chat))
        # waits out its 1/min, to the end of the gateway's minute (40 s in: its reset wins)
        await resolve(first.chat.completions.create(**chat))
        with pytest.raises(BudgetExceededError):
            await resolve(first.chat.completions.create(**chat))
        assert gateway.clock.now() - start == 40
        await resolve(second.chat.completions.create(**chat))  # its own budget and limit
        await resolve(second.chat.completions.create(**chat))
        assert gateway.clock.now() - start == 40
    assert state.usage(gateway.api_key)["total"]["requests"] == 2
    assert state.usage(other_key)["total"]["requests"] == 2


# Pickling


def test_redis_state_pickles_without_its_connections(redis_url: str) -> None:
    state = RedisState("redis://user:s3cret@127.0.0.1:1/0", on_unavailable="local", timeout=0.2)
    copy = pickle.loads(pickle.dumps(state))
    assert (copy.url, copy.on_unavailable, copy.timeout, copy.namespace) == (
        state.url,
        "local",
        0.2,
        "aigateway",
    )
    assert "s3cret" not in repr(copy)
    live = RedisState(redis_url)
    live.usage("k")  # connected
    assert pickle.loads(pickle.dumps(live)).usage("k")["total"]["requests"] == 0


def test_bad_options_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="on_unavailable"):
        RedisState("redis://localhost", on_unavailable="ignore")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="redis://"):
        RedisState("http://localhost")
    with pytest.raises(ConfigurationError, match="timeout"):
        RedisState("redis://localhost", timeout=0)


# Redis unavailable


@contextmanager
def silent_server() -> Iterator[str]:
    """A port that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    try:
        yield f"redis://127.0.0.1:{listener.getsockname()[1]}/0"
    finally:
        listener.close()


@pytest.fixture
def refused_url() -> str:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return f"redis://:pa55word@127.0.0.1:{port}/0"


async def test_an_unreachable_redis_fails_closed_naming_the_url(
    kind: str, gateway: MockGateway, refused_url: str
) -> None:
    async with in_process_client(
        kind, gateway, shared_state=RedisState(refused_url), wait_for_rate_limit=True
    ) as client:
        with pytest.raises(SharedStateError) as caught:
            await list_models(client)
    assert "127.0.0.1" in str(caught.value)
    assert "pa55word" not in str(caught.value)
    assert gateway.requests == []  # nothing was sent


async def test_a_silent_redis_times_out_instead_of_hanging(kind: str, gateway: MockGateway) -> None:
    with silent_server() as url:
        async with in_process_client(
            kind, gateway, shared_state=RedisState(url, timeout=0.2), max_credits=1.0
        ) as client:
            with pytest.raises(SharedStateError, match="Timeout"):
                await list_models(client)


async def test_an_unreachable_redis_falls_back_to_local_limits_with_one_warning(
    kind: str, gateway: MockGateway, refused_url: str
) -> None:
    state = RedisState(refused_url, on_unavailable="local")
    async with in_process_client(
        kind,
        gateway,
        shared_state=state,
        wait_for_rate_limit=True,
        max_credits=1.0,
        auto_idempotency_keys=True,
    ) as client:
        with pytest.warns(SharedStateWarning, match="own limits") as caught:
            await list_models(client)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # warned once only
            await list_models(client)
            await send_email(client)
    assert len(caught) == 1


async def test_redis_stopped_mid_run(kind: str, gateway: MockGateway) -> None:
    server = RedisServer().start()
    try:
        closed = RedisState(server.url)
        opened = RedisState(server.url, on_unavailable="local")
        async with AsyncExitStack() as stack:
            (strict,) = await clients(
                stack, kind, gateway, 1, shared_state=closed, wait_for_rate_limit=True
            )
            (lenient,) = await clients(
                stack, kind, gateway, 1, shared_state=opened, wait_for_rate_limit=True
            )
            await list_models(strict)
            await list_models(lenient)
            server.stop()
            with pytest.raises(SharedStateError):
                await list_models(strict)
            with pytest.warns(SharedStateWarning):
                await list_models(lenient)
            server.start()
            await list_models(strict)  # back: shared again
    finally:
        server.stop()


def test_the_sync_client_is_thread_safe_on_one_state(gateway: MockGateway, redis_url: str) -> None:
    state = RedisState(redis_url)
    errors: list[BaseException] = []
    with gateway.client(shared_state=state, max_credits=100.0) as client:

        def work() -> None:
            try:
                for _ in range(5):
                    client.models.list()
            except BaseException as exc:  # pragma: no cover
                errors.append(exc)

        threads = [threading.Thread(target=work) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert state.usage(gateway.api_key)["total"]["requests"] == 0  # models are not billed


def test_costs_add_up_however_the_replies_of_many_processes_interleave(redis_url: str) -> None:
    """Charged in the order 99.9, 99.8, 99.7, 99.6 (balances after each), the replies reach
    the shared ledger as 99.7, 99.9, 99.8, 99.6: all but the first reply's cost is counted,
    and the budget counts that one at the others' average."""
    state, key = RedisState(redis_url), "sk-interleaved"
    prefix = state.prefix(key)
    usage, budget = f"{prefix}:usage", f"{prefix}:budget:0.4"
    keys = [usage, budget, f"{budget}:probe"]
    for balance in ("99.7", "99.9", "99.8", "99.6"):
        call = ["gpt-4o-mini", "", balance, "5", "5", ""]
        SharedCall(state, "SETTLE", keys, ["0", "60000", "1", *call], before_send=False).perform()
    total = state.usage(key)["total"]
    assert total["credits"] == pytest.approx(0.3)  # 99.9 - 99.6: the three later charges
    assert total["uncounted"] == 1

    def reserve(max_credits: str) -> list[str]:
        raw = SharedCall(
            state, "BUDGET_RESERVE", keys[1:], [max_credits, "60000", "30000"]
        ).perform()
        return [part.decode() if isinstance(part, bytes) else str(part) for part in raw]

    # spent: 0.3 counted + the first reply at the average 0.1 = 0.4
    assert reserve("0.4")[0] == "0"
    admitted, estimate = reserve("0.45")
    assert admitted == "1"
    assert float(estimate) == pytest.approx(0.1)  # a place reserves the average cost


async def test_clients_wait_for_the_window_when_its_tokens_are_spent(
    kind: str, redis_url: str
) -> None:
    """The gateway counts a reply's tokens once it is known and refuses the requests after the
    one that went over: shared clients learn the tokens left from the replies and wait."""
    gateway = MockGateway(seed=2, rate_limits=RateLimits(tokens_per_minute=400))
    start = gateway.clock.now()
    async with AsyncExitStack() as stack:
        first, second = await clients(
            stack,
            kind,
            gateway,
            2,
            shared_state=RedisState(redis_url),
            wait_for_rate_limit=True,
            max_retries=0,
        )
        for index in range(12):  # a 429 would raise: no retries
            client = second if index % 2 else first
            await resolve(client.chat.completions.create(model="gpt-4o-mini", messages=HELLO))
    assert sum(c.prompt_tokens + c.completion_tokens for c in gateway.charges) > 400
    # the first window's reset (a whole minute: 40 s after the mock clock's start) was waited for
    assert gateway.clock.now() - start == 40


async def test_without_shared_tokens_the_window_is_overrun(kind: str) -> None:
    gateway = MockGateway(seed=2, rate_limits=RateLimits(tokens_per_minute=400))
    async with AsyncExitStack() as stack:
        first, second = await clients(
            stack, kind, gateway, 2, wait_for_rate_limit=True, max_retries=0
        )

        async def send_12() -> None:
            for index in range(12):
                client = second if index % 2 else first
                await resolve(client.chat.completions.create(model="gpt-4o-mini", messages=HELLO))

        with pytest.raises(RateLimitError):
            await send_12()


async def test_a_stated_tokens_limit_is_kept_to(kind: str, redis_url: str) -> None:
    gateway = MockGateway(seed=2, rate_limits="unlimited")
    start = gateway.clock.now()
    limit = RateLimit(requests=1000, tokens=300)
    async with in_process_client(
        kind, gateway, shared_state=RedisState(redis_url), rate_limit=limit
    ) as client:
        while sum(c.prompt_tokens + c.completion_tokens for c in gateway.charges) < 300:
            await resolve(client.chat.completions.create(model="gpt-4o-mini", messages=HELLO))
        assert gateway.clock.now() == start  # under the limit: no wait
        await resolve(client.chat.completions.create(model="gpt-4o-mini", messages=HELLO))
    assert gateway.clock.now() - start == 40  # the window's tokens were spent: its reset
