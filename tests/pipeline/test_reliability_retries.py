"""Retries on the client side, at the wire (respx): which failures are retried and the waits
(Retry-After, rate-limit reset, jitter, the cap), timeouts that persist, streams dropped before
or after their first event, and side effects retried only with an idempotency key. Waits are
recorded, never slept; the policy's clock is fixed."""

from __future__ import annotations

import email.utils
from typing import Any

import httpx
import pytest
import respx

from aigateway import (
    APIConnectionError,
    APITimeoutError,
    AsyncClient,
    AuthenticationError,
    BadRequestError,
    Client,
    InsufficientCreditsError,
    NotFoundError,
    RateLimitError,
    RetryPolicy,
    ServiceUnavailableError,
    new_idempotency_key,
)
from aigateway._call.call import APICall

from ..conftest import Sleeps, resolve
from ._reliability_helpers import (
    CHUNK,
    FAIL,
    LAST,
    NOW,
    OK,
    USER,
    Body,
    consume,
    create,
    failing,
    sse,
)

# The fixtures; pytest knows them as gateway, policy and reliable.
from ._reliability_helpers import gateway_fixture as gateway_fixture
from ._reliability_helpers import policy_fixture as policy_fixture
from ._reliability_helpers import reliable_fixture as reliable_fixture

pytestmark = pytest.mark.anyio
LIMITED = {"error": {"message": "slow down", "type": "rate_limit_error", "code": "rate_limited"}}


# -- which failures are retried, and the waits ------------------------------------------------


async def test_503_three_times_waits_about_1_then_2_seconds_with_bounded_jitter(
    client: Client | AsyncClient, gateway: respx.Router
) -> None:
    route = gateway.post("/chat/completions").respond(503, json=FAIL)
    for random_value in (0.0, 0.999):
        waits: list[float] = []
        jittery = RetryPolicy(
            sleep=waits.append, async_sleep=_recorder(waits), random=_constant(random_value)
        )
        with pytest.raises(ServiceUnavailableError) as caught:
            await create(client.with_options(retry_policy=jittery, max_retries=2))
        assert caught.value.attempts == 3
        assert len(waits) == 2
        assert 0.75 <= waits[0] <= 1.25
        assert 1.5 <= waits[1] <= 2.5
    assert route.call_count == 6


def _constant(value: float) -> Any:
    return lambda: value


def _recorder(waits: list[float]) -> Any:
    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    return sleep


@pytest.mark.parametrize(
    ("headers", "expected_wait"),
    [
        ({"Retry-After": "7"}, 7.0),
        ({"Retry-After": email.utils.formatdate(NOW + 12, usegmt=True)}, 12.0),
        (  # no Retry-After: the spent window's reset time
            {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW + 25))},
            25.0,
        ),
        ({"X-RateLimit-Remaining": "3", "X-RateLimit-Reset": str(int(NOW + 25))}, 1.0),
    ],
    ids=["retry-after-seconds", "retry-after-date", "reset-time", "window-not-spent"],
)
async def test_429_waits_as_long_as_the_reply_asks(
    reliable: Client | AsyncClient,
    gateway: respx.Router,
    sleeps: Sleeps,
    headers: dict[str, str],
    expected_wait: float,
) -> None:
    gateway.post("/chat/completions").side_effect = [
        respx.MockResponse(429, json=LIMITED, headers=headers),
        respx.MockResponse(200, json=OK),
    ]
    assert (await create(reliable)).text == "ok"
    assert sleeps == [expected_wait]


async def test_429_whose_reset_is_10_minutes_away_raises_at_once(
    reliable: Client | AsyncClient, gateway: respx.Router, sleeps: Sleeps
) -> None:
    reset = int(NOW + 600)
    headers = {"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "0"}
    route = gateway.post("/chat/completions").respond(
        429, json=LIMITED, headers={**headers, "X-RateLimit-Reset": str(reset)}
    )
    with pytest.raises(RateLimitError) as caught:
        await create(reliable)
    error = caught.value
    assert route.call_count == 1
    assert sleeps == []
    assert error.attempts == 1
    assert error.retry_after == 600
    assert error.rate_limit is not None
    assert error.rate_limit.reset == reset
    assert "wait 600 s" in str(error)
    assert str(reset) in str(error)


async def test_a_retry_after_beyond_a_custom_cap_raises(
    reliable: Client | AsyncClient, gateway: respx.Router, sleeps: Sleeps, policy: RetryPolicy
) -> None:
    gateway.post("/chat/completions").respond(503, json=FAIL, headers={"Retry-After": "30"})
    with pytest.raises(ServiceUnavailableError) as caught:
        await create(reliable.with_options(retry_policy=policy.with_changes(max_wait=10)))
    assert caught.value.retry_after == 30
    assert sleeps == []


@pytest.mark.parametrize(
    ("status", "code", "error_class"),
    [
        (400, "invalid_parameter", BadRequestError),
        (401, "invalid_api_key", AuthenticationError),
        (402, "insufficient_credits", InsufficientCreditsError),
        (404, "model_not_found", NotFoundError),
        (429, "insufficient_quota", InsufficientCreditsError),
    ],
)
async def test_client_errors_and_credit_errors_are_tried_once(
    reliable: Client | AsyncClient,
    gateway: respx.Router,
    sleeps: Sleeps,
    status: int,
    code: str,
    error_class: type[Exception],
) -> None:
    route = gateway.post("/chat/completions").mock(return_value=failing(status, code))
    with pytest.raises(error_class) as caught:
        await create(reliable)
    assert route.call_count == 1
    assert caught.value.attempts == 1
    assert sleeps == []


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504, 505, 599])
async def test_retried_statuses(
    reliable: Client | AsyncClient, gateway: respx.Router, status: int
) -> None:
    gateway.post("/chat/completions").side_effect = [
        failing(status),
        respx.MockResponse(200, json=OK),
    ]
    raw = await resolve(
        reliable.chat.completions.with_raw_response.create(model="m", messages=USER)
    )
    assert raw.attempts == 2


@pytest.mark.parametrize(
    "exc",
    [httpx.ConnectError("refused"), httpx.ReadTimeout("slow"), httpx.RemoteProtocolError("x")],
)
async def test_connection_errors_and_timeouts_are_retried(
    reliable: Client | AsyncClient, gateway: respx.Router, exc: Exception, sleeps: Sleeps
) -> None:
    gateway.post("/chat/completions").side_effect = [exc, respx.MockResponse(200, json=OK)]
    assert (await create(reliable)).text == "ok"
    assert sleeps == [1.0]


async def test_a_timeout_that_persists_raises_a_timeout_error_with_attempts(
    reliable: Client | AsyncClient, gateway: respx.Router
) -> None:
    gateway.post("/chat/completions").mock(side_effect=httpx.ReadTimeout("slow"))
    with pytest.raises(APITimeoutError) as caught:
        await create(reliable, max_retries=1)
    assert caught.value.attempts == 2


# -- streams ----------------------------------------------------------------------------------


async def test_a_stream_dropped_before_its_first_event_is_retried(
    reliable: Client | AsyncClient, gateway: respx.Router, sleeps: Sleeps
) -> None:
    route = gateway.post("/chat/completions")
    route.side_effect = [sse(Body(b'data: {"id"', drop=True)), sse(Body(CHUNK, LAST))]
    raw = await resolve(
        reliable.chat.completions.with_raw_response.create(model="m", messages=USER, stream=True)
    )
    chunks = await consume(raw.parse())
    assert [c.choices[0].delta.content for c in chunks] == ["Hi", None]
    assert raw.attempts == 2
    assert route.call_count == 2
    assert sleeps == [1.0]


async def test_a_stream_dropped_after_a_chunk_raises_and_is_not_retried(
    reliable: Client | AsyncClient, gateway: respx.Router, sleeps: Sleeps
) -> None:
    route = gateway.post("/chat/completions")
    route.side_effect = [sse(Body(CHUNK, drop=True)), sse(Body(CHUNK, LAST))]
    stream = await create(reliable, stream=True)
    received: list[Any] = []
    with pytest.raises(APIConnectionError):
        await consume(stream, into=received)
    assert len(received) == 1
    assert route.call_count == 1
    assert sleeps == []


async def test_a_stream_whose_first_event_arrives_in_pieces_is_reassembled(
    reliable: Client | AsyncClient, gateway: respx.Router
) -> None:
    gateway.post("/chat/completions").mock(
        return_value=sse(Body(CHUNK[:10], CHUNK[10:50], CHUNK[50:], LAST))
    )
    chunks = await consume(await create(reliable, stream=True))
    assert chunks[0].choices[0].delta.content == "Hi"


# -- side effects and idempotency keys --------------------------------------------------------


def side_effect_call(**options: Any) -> APICall[Any]:
    return APICall(
        "POST", "run", parse=lambda raw: raw, payload={}, options=options, side_effect=True
    )  # type: ignore[arg-type]


async def send(client: Client | AsyncClient, call: APICall[Any]) -> Any:
    return await resolve(client._pipeline.request(call))


async def test_an_act_without_an_idempotency_key_is_not_retried(
    reliable: Client | AsyncClient, gateway: respx.Router, sleeps: Sleeps
) -> None:
    route = gateway.post("/run").respond(503, json=FAIL)
    with pytest.raises(ServiceUnavailableError) as caught:
        await send(reliable, side_effect_call())
    assert route.call_count == 1
    assert caught.value.attempts == 1
    assert "idempotency-key" not in route.calls[0].request.headers


async def test_an_act_with_an_idempotency_key_is_retried_with_the_same_key(
    reliable: Client | AsyncClient, gateway: respx.Router
) -> None:
    route = gateway.post("/run")
    route.side_effect = [failing(503), respx.MockResponse(200, content=b'{"ok":true}')]
    key = new_idempotency_key()
    assert await send(reliable, side_effect_call(idempotency_key=key)) == b'{"ok":true}'
    assert [call.request.headers["idempotency-key"] for call in route.calls] == [key, key]


async def test_generated_idempotency_keys_make_acts_retryable(
    reliable: Client | AsyncClient, gateway: respx.Router
) -> None:
    route = gateway.post("/run")
    route.side_effect = [
        failing(503),
        respx.MockResponse(200, json={}),
        failing(500),
        respx.MockResponse(200, json={}),
    ]
    auto = reliable.with_options(auto_idempotency_keys=True)
    await send(auto, side_effect_call())
    await send(auto, side_effect_call())
    keys = [call.request.headers["idempotency-key"] for call in route.calls]
    assert keys[0] == keys[1]
    assert keys[2] == keys[3]
    assert keys[0] != keys[2]
    gateway.get("/models").respond(200, json={"object": "list", "data": []})
    await resolve(auto.models.list())
    assert "idempotency-key" not in gateway.calls.last.request.headers  # only POSTs get one


async def test_an_idempotency_key_in_extra_headers_counts(
    reliable: Client | AsyncClient, gateway: respx.Router
) -> None:
    route = gateway.post("/run")
    route.side_effect = [failing(503), respx.MockResponse(200, json={})]
    await send(reliable, side_effect_call(extra_headers={"Idempotency-Key": "k-1"}))
    assert route.call_count == 2
