"""Retry strategies of one's own: tenacity's ``wait_*``, ``stop_*`` and ``retry_*`` objects (and
their ``|``, ``&``, ``+`` compositions) on a `RetryPolicy` change what the clients do, as
tenacity documents them, sync and async; the cap and the deadline still apply; our own
strategies serve tenacity's own ``@retry`` too. Waits are recorded, never slept; the policy's
clock is fixed at NOW."""

from __future__ import annotations

import email.utils
import json
import subprocess
import sys
import threading
from typing import Any

import httpx
import pytest
import respx
import tenacity
from tenacity import (
    retry_if_exception_type,
    stop_after_attempt,
    stop_never,
    stop_when_event_set,
    wait_fixed,
)

from aigateway import (
    APIConnectionError,
    APITimeoutError,
    AsyncClient,
    Client,
    ConfigurationError,
    InsufficientCreditsError,
    NotFoundError,
    RateLimitError,
    RetryPolicy,
    ServiceUnavailableError,
    retry_if_transient,
    wait_backoff,
    wait_server_requested,
)

from ..conftest import BASE_URL, Sleeps, resolve
from ._reliability_helpers import NOW, OK, USER, create, failing

# The fixtures; pytest knows them as gateway and policy.
from ._reliability_helpers import gateway_fixture as gateway_fixture
from ._reliability_helpers import policy_fixture as policy_fixture
from .test_deadline import UNAVAILABLE, FakeTime, fake_client

pytestmark = pytest.mark.anyio
SUCCESS = respx.MockResponse(200, json=OK)


def with_policy(client: Client | AsyncClient, policy: RetryPolicy, **changes: Any) -> Any:
    return client.with_options(retry_policy=policy.with_changes(**changes))


async def attempts_of(client: Client | AsyncClient) -> int:
    """The attempts a successful chat call took."""
    raw = await resolve(client.chat.completions.with_raw_response.create(model="m", messages=USER))
    assert raw.parse().text == "ok"
    return int(raw.attempts)


# -- waits -------------------------------------------------------------------------------------


async def test_wait_fixed_replaces_the_backoff_and_the_servers_wait(
    client: Client | AsyncClient, gateway: respx.Router, policy: RetryPolicy, sleeps: Sleeps
) -> None:
    gateway.post("/chat/completions").side_effect = [
        failing(503),
        failing(429, **{"Retry-After": "10"}),
        SUCCESS,
    ]
    assert await attempts_of(with_policy(client, policy, wait=wait_fixed(3))) == 3
    assert sleeps == [3.0, 3.0]  # the default would wait 1 s, then the 10 s asked for


async def test_the_servers_wait_or_a_fixed_one(
    client: Client | AsyncClient, gateway: respx.Router, policy: RetryPolicy, sleeps: Sleeps
) -> None:
    """``wait_server_requested() | wait_fixed(5)``: the wait the reply asks for (a date read on
    the policy's clock), else 5 s."""
    asked = email.utils.formatdate(NOW + 2, usegmt=True)
    gateway.post("/chat/completions").side_effect = [
        failing(429, **{"Retry-After": asked}),
        failing(503),
        httpx.ConnectError("refused"),
        SUCCESS,
    ]
    wait = wait_server_requested() | wait_fixed(5)
    assert await attempts_of(with_policy(client, policy, wait=wait, stop=stop_never)) == 4
    assert sleeps == [2.0, 5.0, 5.0]


async def test_waits_add_up_with_plus(
    client: Client | AsyncClient, gateway: respx.Router, policy: RetryPolicy, sleeps: Sleeps
) -> None:
    gateway.post("/chat/completions").side_effect = [
        failing(429, **{"retry-after-ms": "250"}),
        SUCCESS,
    ]
    wait = wait_server_requested() + wait_fixed(0.5)
    assert await attempts_of(with_policy(client, policy, wait=wait)) == 2
    assert sleeps == [0.75]


async def test_the_default_backoff_as_a_strategy_of_ones_own(
    client: Client | AsyncClient, gateway: respx.Router, policy: RetryPolicy, sleeps: Sleeps
) -> None:
    gateway.post("/chat/completions").side_effect = [failing(503)] * 3 + [SUCCESS]
    wait = wait_backoff(initial=0.5, maximum=1.5, jitter=0.5, random=lambda: 1.0)  # factor 1.5
    assert await attempts_of(with_policy(client, policy, wait=wait, stop=stop_never)) == 4
    assert sleeps == [0.75, 1.5, 1.5]


async def test_a_wait_of_ones_own_beyond_the_cap_raises_at_once(
    client: Client | AsyncClient, gateway: respx.Router, policy: RetryPolicy, sleeps: Sleeps
) -> None:
    route = gateway.post("/chat/completions")
    route.side_effect = [failing(503), SUCCESS]
    with pytest.raises(ServiceUnavailableError) as caught:
        await create(with_policy(client, policy, wait=wait_fixed(100)))
    assert (route.call_count, caught.value.attempts, sleeps) == (1, 1, [])
    route.side_effect = [failing(503), SUCCESS]
    assert await attempts_of(with_policy(client, policy, wait=wait_fixed(100), max_wait=100)) == 2
    assert sleeps == [100.0]


# -- stops -------------------------------------------------------------------------------------


async def test_stop_after_attempt_replaces_max_retries(
    client: Client | AsyncClient, gateway: respx.Router, policy: RetryPolicy, sleeps: Sleeps
) -> None:
    route = gateway.post("/chat/completions")
    route.side_effect = [failing(503)] * 3 + [SUCCESS]
    four = with_policy(client, policy, stop=stop_after_attempt(4))
    assert await attempts_of(four) == 4  # max_retries=2 alone would stop after 3
    assert sleeps == [1.0, 2.0, 4.0]
    route.side_effect = [failing(503), SUCCESS]
    with pytest.raises(ServiceUnavailableError) as caught:
        await create(with_policy(client, policy, stop=stop_after_attempt(1)))
    assert caught.value.attempts == 1
    route.side_effect = [failing(503), SUCCESS]
    with pytest.raises(ServiceUnavailableError):  # max_retries=0 still turns retries off
        await create(four, max_retries=0)


async def test_stops_compose_with_or(
    client: Client | AsyncClient, gateway: respx.Router, policy: RetryPolicy, sleeps: Sleeps
) -> None:
    """``stop_after_attempt(5) | stop_when_event_set(event)``: whichever comes first."""
    event = threading.Event()
    route = gateway.post("/chat/completions")
    route.side_effect = [failing(503)] * 4 + [SUCCESS]
    either = with_policy(client, policy, stop=stop_after_attempt(5) | stop_when_event_set(event))
    assert await attempts_of(either) == 5
    event.set()
    route.side_effect = [failing(503), SUCCESS]
    with pytest.raises(ServiceUnavailableError) as caught:
        await create(either)
    assert caught.value.attempts == 1


async def test_the_deadline_still_stops_a_stop_of_ones_own(kind: str) -> None:
    """With ``stop_never`` and 30 s waits, a call with a 50 s deadline makes its second wait
    only if it ends before the deadline: it does not, so the deadline's error ends the call."""
    clock = FakeTime()
    client = fake_client(kind, clock, UNAVAILABLE)
    policy = clock.policy().with_changes(wait=wait_fixed(30), stop=stop_never)
    with pytest.raises(APITimeoutError) as caught:
        await create(client.with_options(retry_policy=policy), deadline=50)
    await resolve(client.close())
    assert caught.value.limit_name == "deadline"
    assert getattr(caught.value, "attempts", None) == 2
    assert isinstance(caught.value.__cause__, ServiceUnavailableError)
    assert clock.slept == [30.0]


# -- retry rules -------------------------------------------------------------------------------


async def test_retry_if_exception_type_replaces_the_rules(
    client: Client | AsyncClient, gateway: respx.Router, policy: RetryPolicy
) -> None:
    only_404 = with_policy(client, policy, retry=retry_if_exception_type(NotFoundError))
    route = gateway.post("/chat/completions")
    route.side_effect = [failing(404), SUCCESS]
    assert await attempts_of(only_404) == 2
    route.side_effect = [failing(503), SUCCESS]
    with pytest.raises(ServiceUnavailableError) as caught:
        await create(only_404)
    assert caught.value.attempts == 1


async def test_retry_rules_compose_with_or_and_and(
    client: Client | AsyncClient, gateway: respx.Router, policy: RetryPolicy
) -> None:
    route = gateway.post("/chat/completions")
    route.side_effect = [failing(404), failing(503), SUCCESS]
    wider = retry_if_transient() | retry_if_exception_type(NotFoundError)
    assert await attempts_of(with_policy(client, policy, retry=wider)) == 3
    route.side_effect = [failing(429), failing(503), SUCCESS]
    narrower = retry_if_transient() & retry_if_exception_type(RateLimitError)
    with pytest.raises(ServiceUnavailableError) as caught:
        await create(with_policy(client, policy, retry=narrower))
    assert caught.value.attempts == 2


async def test_a_rule_of_ones_own_still_leaves_a_call_that_acts_on_the_world_alone(
    client: Client | AsyncClient, gateway: respx.Router, policy: RetryPolicy
) -> None:
    """Retrying a side effect needs an idempotency key, whatever the rule says."""
    route = gateway.post("/run").mock(return_value=failing(503))
    always = with_policy(client, policy, retry=tenacity.retry_always)
    with pytest.raises(ServiceUnavailableError):
        await resolve(always.run("a-service", {"text": "hi"}))
    assert route.call_count == 1


# -- the strategies themselves -----------------------------------------------------------------


@pytest.mark.parametrize("name", ["wait", "stop", "retry"])
def test_a_strategy_that_is_not_one_is_refused(name: str) -> None:
    with pytest.raises(ConfigurationError, match=rf"RetryPolicy\({name}=\.\.\.\) must be"):
        RetryPolicy(**{name: 3})  # type: ignore[arg-type]


def test_our_strategies_drive_tenacitys_own_retry() -> None:
    """``wait_server_requested``, ``retry_if_transient`` and ``wait_backoff`` are plain
    tenacity strategies: they serve ``@tenacity.retry`` around code of one's own."""
    request = httpx.Request("POST", f"{BASE_URL}/chat/completions")
    busy = httpx.Response(503, headers={"retry-after-ms": "1500"}, request=request)
    credits = httpx.Response(402, request=request)
    failures: list[Exception] = [
        ServiceUnavailableError("busy", response=busy, body=None),
        APIConnectionError("refused", request=request),
    ]
    waits: list[float] = []

    @tenacity.retry(
        wait=wait_server_requested() | wait_backoff(random=lambda: 0.5),
        retry=retry_if_transient(),
        stop=stop_after_attempt(3),
        sleep=waits.append,
        reraise=True,
    )
    def call() -> str:
        if failures:
            raise failures.pop(0)
        return "ok"

    assert call() == "ok"
    assert waits == [1.5, 2.0]  # asked for 1.5 s; then the backoff of the second attempt
    assert not retry_if_transient().is_transient(
        InsufficientCreditsError("spent", response=credits, body=None)
    )


def test_a_call_that_succeeds_at_once_loads_no_tenacity() -> None:
    """tenacity loads on a call's first retry, not before."""
    script = f"""
import json, sys, httpx, aigateway
replies = [httpx.Response(200, json={OK!r}), httpx.Response(503), httpx.Response(200, json={OK!r})]
client = aigateway.Client(
    api_key="k", base_url="{BASE_URL}",
    transport=httpx.MockTransport(lambda request: replies.pop(0)),
    retry_policy=aigateway.RetryPolicy(sleep=lambda seconds: None),
)
seen = []
for _ in range(2):
    client.chat.completions.create(model="m", messages={USER!r})
    seen.append("tenacity" in sys.modules)
print(json.dumps(seen))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.splitlines()[-1]) == [False, True]
