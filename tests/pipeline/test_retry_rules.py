"""The retry rules end to end, through the public clients on a scripted transport: which
replies are retried, the order of the waits, and headers that must never break a call.
Waits are recorded, never slept; the policy's clock is fixed at NOW."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from aigateway import (
    AsyncClient,
    BadRequestError,
    Client,
    ConflictError,
    InsufficientCreditsError,
    InternalServerError,
    RateLimitError,
    RateLimitInfo,
    ServiceUnavailableError,
)
from aigateway._pipeline.retry import RETRY_STATUSES
from aigateway.types.rate_limits import LONGEST_SERVER_WAIT, parse_retry_after, server_wait

from ..conftest import API_KEY, BASE_URL, Sleeps, resolve

pytestmark = pytest.mark.anyio
NOW = 1_800_000_000.0
USER = [{"role": "user", "content": "Hello"}]
OK = {
    "id": "chatcmpl-1",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}],
}
NONSENSE = ["inf", "-inf", "nan", "-5", "1e400", "1" + "0" * 400, "soon", "", "0x10"]


def reply(status: int, code: str = "x", **headers: str) -> httpx.Response:
    """A reply with an error body (``_`` in header names becomes ``-``)."""
    body = {"error": {"message": "no", "type": "t", "code": code}}
    named = {name.replace("_", "-"): value for name, value in headers.items()}
    return httpx.Response(status, json=body, headers=named)


class Script:
    """The gateway's replies in order; the last one repeats. Counts the requests."""

    def __init__(self) -> None:
        self.replies: list[httpx.Response] = []
        self.calls = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.calls += 1
        return self.replies[min(self.calls, len(self.replies)) - 1]


@pytest.fixture
def script() -> Script:
    return Script()


@pytest.fixture(params=["sync", "async"])
async def client(
    request: pytest.FixtureRequest, sleeps: Sleeps, script: Script
) -> AsyncIterator[Client | AsyncClient]:
    """A client of each kind on ``script``, waits recorded, clock at NOW, no jitter."""
    options: dict[str, Any] = {
        "api_key": API_KEY,
        "base_url": BASE_URL,
        "transport": httpx.MockTransport(script),
        "retry_policy": sleeps.policy().with_changes(now=lambda: NOW),
    }
    if request.param == "sync":
        with Client(**options) as sync_client:
            yield sync_client
    else:
        async with AsyncClient(**options) as async_client:
            yield async_client


async def attempts_of(client: Client | AsyncClient, **options: Any) -> int:
    """The attempts a successful chat call took."""
    raw = await resolve(
        client.chat.completions.with_raw_response.create(model="m", messages=USER, **options)
    )
    assert raw.parse().text == "ok"
    return int(raw.attempts)


def create(client: Client | AsyncClient, **options: Any) -> Any:
    return resolve(client.chat.completions.create(model="m", messages=USER, **options))


# -- what is retried ---------------------------------------------------------------------------


async def test_408_twice_then_200_succeeds_on_the_third_attempt(
    client: Client | AsyncClient, script: Script, sleeps: Sleeps
) -> None:
    script.replies = [reply(408), reply(408), httpx.Response(200, json=OK)]
    assert await attempts_of(client) == 3
    assert sleeps == [1.0, 2.0]


async def test_three_408s_then_200_succeeds_with_three_retries(
    client: Client | AsyncClient, script: Script
) -> None:
    script.replies = [reply(408)] * 3 + [httpx.Response(200, json=OK)]
    assert await attempts_of(client, max_retries=3) == 4
    assert script.calls == 4


async def test_409_is_retried(client: Client | AsyncClient, script: Script) -> None:
    script.replies = [reply(409, "idempotency_key_in_progress"), httpx.Response(200, json=OK)]
    assert await attempts_of(client) == 2


async def test_409_that_persists_raises_a_conflict_error_after_the_retries(
    client: Client | AsyncClient, script: Script
) -> None:
    script.replies = [reply(409)]
    with pytest.raises(ConflictError) as caught:
        await create(client)
    assert caught.value.attempts == 3


async def test_501_is_not_retried(
    client: Client | AsyncClient, script: Script, sleeps: Sleeps
) -> None:
    script.replies = [reply(501), httpx.Response(200, json=OK)]
    with pytest.raises(InternalServerError) as caught:
        await create(client)
    assert (script.calls, caught.value.attempts, sleeps) == (1, 1, [])


def test_every_5xx_but_501_is_retried_by_default() -> None:
    assert {408, 409, 429} <= RETRY_STATUSES
    assert {status for status in range(500, 600) if status in RETRY_STATUSES} == set(
        range(500, 600)
    ) - {501}
    assert not RETRY_STATUSES & {400, 401, 402, 403, 404, 422}


@pytest.mark.parametrize("verdict", ["false", "False", " FALSE "])
async def test_x_should_retry_false_stops_a_503(
    client: Client | AsyncClient, script: Script, verdict: str
) -> None:
    script.replies = [reply(503, x_should_retry=verdict), httpx.Response(200, json=OK)]
    with pytest.raises(ServiceUnavailableError):
        await create(client)
    assert script.calls == 1


@pytest.mark.parametrize("verdict", ["true", "TRUE"])
async def test_x_should_retry_true_retries_a_400(
    client: Client | AsyncClient, script: Script, verdict: str
) -> None:
    script.replies = [reply(400, x_should_retry=verdict), httpx.Response(200, json=OK)]
    assert await attempts_of(client) == 2


async def test_x_should_retry_with_another_value_leaves_the_status_rule(
    client: Client | AsyncClient, script: Script
) -> None:
    script.replies = [reply(400, x_should_retry="maybe"), httpx.Response(200, json=OK)]
    with pytest.raises(BadRequestError):
        await create(client)
    assert script.calls == 1


@pytest.mark.parametrize(
    ("status", "code"), [(402, "insufficient_credits"), (429, "insufficient_quota")]
)
async def test_x_should_retry_true_never_retries_a_credits_error(
    client: Client | AsyncClient, script: Script, status: int, code: str
) -> None:
    script.replies = [reply(status, code, x_should_retry="true"), httpx.Response(200, json=OK)]
    with pytest.raises(InsufficientCreditsError):
        await create(client)
    assert script.calls == 1


async def test_statuses_on_the_policy_replace_the_default(
    client: Client | AsyncClient, script: Script, sleeps: Sleeps
) -> None:
    policy = sleeps.policy().with_changes(statuses=frozenset({418}))
    script.replies = [reply(418), reply(503), httpx.Response(200, json=OK)]
    with pytest.raises(ServiceUnavailableError) as caught:
        await create(client.with_options(retry_policy=policy))
    assert caught.value.attempts == 2


# -- how long it waits -------------------------------------------------------------------------


def gmt_asctime(at: float) -> str:
    """``at`` as an asctime date in GMT, e.g. ``Sun Nov  6 08:49:37 1994``."""
    return time.asctime(time.gmtime(at))


@pytest.mark.parametrize(
    ("headers", "expected_wait"),
    [
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after-ms": "250", "Retry-After": "30"}, 0.25),  # milliseconds win
        ({"retry-after-ms": "soon", "Retry-After": "3"}, 3.0),  # unreadable: the next rule
        ({"Retry-After": "7", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "30"}, 7.0),
        ({"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "12"}, 12.0),  # a delay
        ({"X-RateLimit-Reset": "12"}, 12.0),  # a 429 with a reset but no remaining
        ({"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW) + 25)}, 25.0),
        ({"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW * 1000) + 25_500)}, 25.5),
        ({"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW) - 5)}, 0.0),  # past
        ({"X-RateLimit-Remaining": "4", "X-RateLimit-Reset": "12"}, 1.0),  # not spent: backoff
    ],
    ids=[
        "retry-after-ms",
        "ms-before-retry-after",
        "bad-ms-then-retry-after",
        "retry-after-before-reset",
        "reset-as-delay",
        "reset-without-remaining",
        "reset-unix-seconds",
        "reset-unix-milliseconds",
        "reset-in-the-past",
        "window-not-spent",
    ],
)
async def test_a_429_waits_by_the_first_rule_that_applies(
    client: Client | AsyncClient,
    script: Script,
    sleeps: Sleeps,
    headers: dict[str, str],
    expected_wait: float,
) -> None:
    script.replies = [reply(429, **headers), httpx.Response(200, json=OK)]
    assert await attempts_of(client) == 2
    assert sleeps == [pytest.approx(expected_wait)]


async def test_a_503_with_a_reset_but_no_remaining_backs_off(
    client: Client | AsyncClient, script: Script, sleeps: Sleeps
) -> None:
    script.replies = [reply(503, X_RateLimit_Reset="12"), httpx.Response(200, json=OK)]
    assert await attempts_of(client) == 2
    assert sleeps == [1.0]


@pytest.fixture
def new_york(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Local time five hours behind GMT, restored afterwards."""
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.usefixtures("new_york")
async def test_an_asctime_retry_after_is_read_as_gmt(
    client: Client | AsyncClient, script: Script, sleeps: Sleeps
) -> None:
    assert time.timezone != 0
    script.replies = [reply(503, Retry_After=gmt_asctime(NOW + 20)), httpx.Response(200, json=OK)]
    assert await attempts_of(client) == 2
    assert sleeps == [20.0]


@pytest.mark.parametrize("value", NONSENSE)
async def test_a_nonsense_retry_after_falls_back_to_backoff(
    client: Client | AsyncClient, script: Script, sleeps: Sleeps, value: str
) -> None:
    script.replies = [reply(503, Retry_After=value), httpx.Response(200, json=OK)]
    assert await attempts_of(client) == 2
    assert sleeps == [1.0]


@pytest.mark.parametrize("value", ["3600", "1e300", gmt_asctime(NOW + 7200)])
async def test_a_finite_wait_beyond_the_cap_raises_at_once(
    client: Client | AsyncClient, script: Script, sleeps: Sleeps, value: str
) -> None:
    script.replies = [reply(429, Retry_After=value)]
    with pytest.raises(RateLimitError) as caught:
        await create(client)
    assert (script.calls, sleeps) == (1, [])
    retry_after = caught.value.retry_after
    assert retry_after is not None
    assert 3600 <= retry_after <= LONGEST_SERVER_WAIT
    assert "not retried" in str(caught.value)


# -- headers that must never break a call ------------------------------------------------------


@pytest.mark.parametrize("value", ["inf", "nan", "-5", "1e400", "-inf", "lots"])
async def test_nonsense_rate_limit_values_on_a_200_do_not_raise(
    client: Client | AsyncClient, script: Script, value: str
) -> None:
    headers = {
        "X-RateLimit-Limit": "60",
        "X-RateLimit-Remaining": value,
        "X-RateLimit-Reset": value,
    }
    script.replies = [httpx.Response(200, json=OK, headers=headers)]
    raw = await resolve(client.chat.completions.with_raw_response.create(model="m", messages=USER))
    assert raw.parse().text == "ok"
    assert raw.rate_limit == RateLimitInfo(limit=60, remaining=None, reset=None)


@pytest.mark.parametrize("value", NONSENSE)
def test_header_parsing_never_raises_and_ignores_nonsense(value: str) -> None:
    headers = httpx.Headers(
        {
            "retry-after-ms": value,
            "retry-after": value,
            "x-ratelimit-remaining": value,
            "x-ratelimit-reset": value,
        }
    )
    assert parse_retry_after(value, NOW) is None
    assert server_wait(headers, NOW, status=429) is None
    assert RateLimitInfo.from_headers(headers) == RateLimitInfo()
    assert RateLimitInfo.from_headers(dict(headers)) == RateLimitInfo()


def test_waits_are_finite_and_clamped() -> None:
    assert parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", NOW) == 0.0
    for far in (
        {"retry-after": "1e300"},
        {"retry-after": "Fri, 31 Dec 9999 23:59:59 GMT"},
        {"retry-after-ms": "1e300"},
        {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(2**62)},
    ):
        assert server_wait(far, NOW) == LONGEST_SERVER_WAIT, far
