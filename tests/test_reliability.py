"""Reliability on the client side, at the wire (respx): retry rules and waits, the cap,
streams, side effects and idempotency keys, rate-limit memory and limits, timeouts, credits
warnings and logging. Waits are recorded, never slept; the policy's clock is fixed."""

from __future__ import annotations

import email.utils
import logging
import os
import warnings
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
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
    LowBalanceWarning,
    NotFoundError,
    RateLimitError,
    RetryPolicy,
    ServiceUnavailableError,
    new_idempotency_key,
)
from aigateway._http import APICall

from .conftest import API_KEY, BASE_URL, Sleeps, resolve

pytestmark = pytest.mark.anyio
NOW = 1_800_000_000.0
TESTS = os.path.dirname(__file__)
USER = [{"role": "user", "content": "Hello"}]
OK = {
    "id": "chatcmpl-1",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}],
}
FAIL = {"error": {"message": "boom", "type": "server_error", "code": "server_error"}}
LIMITED = {"error": {"message": "slow down", "type": "rate_limit_error", "code": "rate_limited"}}


def failing(status: int, code: str = "x", **headers: str) -> respx.MockResponse:
    body = {"error": {"message": "no", "type": "t", "code": code}}
    return respx.MockResponse(status, json=body, headers=headers)


@pytest.fixture
def gateway() -> Iterator[respx.Router]:
    with respx.mock(base_url=BASE_URL, assert_all_called=False) as router:
        yield router


@pytest.fixture
def policy(sleeps: Sleeps) -> RetryPolicy:
    """Recorded sleeps, no jitter (random 0.5), and a fixed clock at NOW."""
    return sleeps.policy().with_changes(now=lambda: NOW)


@pytest.fixture
def reliable(client: Client | AsyncClient, policy: RetryPolicy) -> Client | AsyncClient:
    return client.with_options(retry_policy=policy)


def create(client: Client | AsyncClient, **options: Any) -> Any:
    return resolve(client.chat.completions.create(model="m", messages=USER, **options))


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

CHUNK = (
    b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}\n\n'
)
LAST = (
    b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
)


class Body(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A reply body that yields ``chunks`` and then, when ``drop``, loses the connection."""

    def __init__(self, *chunks: bytes, drop: bool = False) -> None:
        self.chunks = chunks
        self.drop = drop

    def __iter__(self) -> Iterator[bytes]:
        yield from self.chunks
        if self.drop:
            raise httpx.ReadError("connection dropped")

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk
        if self.drop:
            raise httpx.ReadError("connection dropped")


def sse(body: Body) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=body)


async def consume(stream: Any, into: list[Any] | None = None) -> list[Any]:
    """Every chunk of a sync or async stream, appended to ``into`` as they arrive."""
    received = [] if into is None else into
    if hasattr(stream, "__aiter__"):
        async for chunk in stream:
            received.append(chunk)
    else:
        received.extend(stream)
    return received


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
        "POST", "run", parse=lambda raw: raw, body=b"{}", options=options, side_effect=True
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
    route.side_effect = [failing(503), respx.MockResponse(200, json={"ok": True})]
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


# -- rate-limit values, the client-side limiter, concurrency -----------------------------------


def limit_headers(remaining: int, reset: float) -> dict[str, str]:
    return {
        "X-RateLimit-Limit": "60",
        "X-RateLimit-Remaining": str(remaining),
        "X-RateLimit-Reset": str(int(reset)),
    }


async def test_rate_limit_values_on_raw_replies_errors_and_the_client(
    reliable: Client | AsyncClient, gateway: respx.Router
) -> None:
    route = gateway.post("/chat/completions")
    route.side_effect = [
        respx.MockResponse(200, json=OK, headers=limit_headers(41, NOW + 30)),
        respx.MockResponse(400, json=FAIL, headers=limit_headers(40, NOW + 30)),
    ]
    raw = await resolve(
        reliable.chat.completions.with_raw_response.create(model="m", messages=USER)
    )
    assert raw.rate_limit is not None
    assert raw.rate_limit.remaining == 41
    assert reliable.rate_limit is not None
    assert reliable.rate_limit.remaining == 41
    with pytest.raises(BadRequestError) as caught:
        await create(reliable)
    assert caught.value.rate_limit is not None
    assert caught.value.rate_limit.remaining == 40
    assert reliable.rate_limit.remaining == 40  # errors are remembered too


async def test_wait_for_rate_limit_waits_for_the_reset_instead_of_a_429(
    gateway: respx.Router, sleeps: Sleeps, policy: RetryPolicy, client: Client | AsyncClient
) -> None:
    route = gateway.post("/chat/completions")
    route.side_effect = [
        respx.MockResponse(200, json=OK, headers=limit_headers(1, NOW + 20)),
        respx.MockResponse(200, json=OK, headers=limit_headers(0, NOW + 20)),
        respx.MockResponse(200, json=OK, headers=limit_headers(59, NOW + 80)),
    ]
    kind = AsyncClient if isinstance(client, AsyncClient) else Client
    limited = kind(
        api_key=API_KEY, base_url=BASE_URL, retry_policy=policy, wait_for_rate_limit=True
    )
    try:
        await create(limited)
        await create(limited)  # the last request of the window: no wait
        assert sleeps == []
        await create(limited)  # the window is spent: wait for its reset
        assert sleeps == [20.0]
    finally:
        await resolve(limited.close())


async def test_max_concurrency_bounds_requests_in_flight() -> None:
    in_flight = peak = 0

    async def handler(request: httpx.Request) -> httpx.Response:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await anyio.sleep(0)
        await anyio.sleep(0)
        in_flight -= 1
        return httpx.Response(200, json=OK)

    transport = httpx.MockTransport(handler)
    async with (
        AsyncClient(
            api_key=API_KEY, base_url=BASE_URL, transport=transport, max_concurrency=2
        ) as client,
        anyio.create_task_group() as tasks,
    ):
        for _ in range(10):
            tasks.start_soon(create, client)
    assert peak == 2


async def test_a_stream_holds_its_concurrency_slot_until_closed(
    gateway: respx.Router, client: Client | AsyncClient
) -> None:
    gateway.post("/chat/completions").side_effect = lambda request: sse(Body(CHUNK, LAST))
    kind = AsyncClient if isinstance(client, AsyncClient) else Client
    bounded = kind(api_key=API_KEY, base_url=BASE_URL, max_concurrency=1)
    try:
        stream = await create(bounded, stream=True)
        slots = bounded._pipeline.state.slots
        assert slots is not None
        assert _available(slots) == 0
        await consume(stream)
        assert _available(slots) == 1
    finally:
        await resolve(bounded.close())


def _available(slots: Any) -> int:
    return int(slots.value if hasattr(slots, "value") else slots._value)


# -- timeouts ----------------------------------------------------------------------------------


async def test_timeouts_per_client_and_per_call_reach_the_request(
    client: Client | AsyncClient, gateway: respx.Router
) -> None:
    route = gateway.post("/chat/completions").respond(200, json=OK)
    timeout = httpx.Timeout(connect=1.0, read=2.0, write=3.0, pool=4.0)
    await create(client.with_options(timeout=timeout))
    assert route.calls.last.request.extensions["timeout"] == timeout.as_dict()
    await create(client, timeout=httpx.Timeout(9.0, read=0.5))
    sent = route.calls.last.request.extensions["timeout"]
    assert sent == {"connect": 9.0, "read": 0.5, "write": 9.0, "pool": 9.0}


# -- credits -----------------------------------------------------------------------------------


async def test_a_low_balance_warns_once_per_client(
    reliable: Client | AsyncClient, gateway: respx.Router
) -> None:
    low = {**OK, "_remaining_credits": 4.5, "_balance_warning": True}
    gateway.post("/chat/completions").respond(200, json=low)
    with pytest.warns(LowBalanceWarning, match="4.5 credits") as caught:
        await create(reliable)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        await create(reliable)  # not again
        await create(reliable.with_options(max_retries=0))  # nor from a copy
    assert len(caught) == 1
    assert caught[0].filename.startswith(TESTS)  # points at the caller's line, not ours


async def test_insufficient_credits_carries_the_remaining_credits(
    reliable: Client | AsyncClient, gateway: respx.Router
) -> None:
    body = {"error": {"message": "no", "type": "t", "code": "insufficient_credits"}}
    body["error"]["_remaining_credits"] = 0.25  # type: ignore[index]
    gateway.post("/chat/completions").respond(402, json=body)
    with pytest.raises(InsufficientCreditsError) as caught:
        await create(reliable)
    assert caught.value.remaining_credits == 0.25


# -- logging -----------------------------------------------------------------------------------


async def test_debug_log_has_a_line_per_request_and_retry_and_never_the_key(
    reliable: Client | AsyncClient, gateway: respx.Router, caplog: pytest.LogCaptureFixture
) -> None:
    gateway.post("/chat/completions").side_effect = [
        failing(503),
        httpx.ConnectError("refused"),
        respx.MockResponse(200, json=OK),
    ]
    with caplog.at_level(logging.DEBUG):  # every logger: ours, httpx's, httpcore's
        await create(reliable)
    ours = [r.getMessage() for r in caplog.records if r.name == "aigateway"]
    assert ours == [
        "POST /v1/chat/completions -> 503 (attempt 1)",
        "retry POST /v1/chat/completions after HTTP 503: attempt 1 failed, waiting 1.00 s",
        "POST /v1/chat/completions -> ConnectError (attempt 2)",
        "retry POST /v1/chat/completions after APIConnectionError: attempt 2 failed, waiting 2.00 s",
        "POST /v1/chat/completions -> 200 (attempt 3)",
    ]
    for record in caplog.records:
        text = record.getMessage() + repr(record.args) + caplog.text
        assert API_KEY not in text
        assert "Bearer" not in text


def test_aigateway_log_env_turns_debug_logging_on(monkeypatch: pytest.MonkeyPatch) -> None:
    from aigateway import _logging

    logger = logging.getLogger("aigateway")
    level, handlers = logger.level, list(logger.handlers)
    monkeypatch.setenv("AIGATEWAY_LOG", "debug")
    monkeypatch.setattr(_logging, "_configured_value", None)
    try:
        Client(api_key=API_KEY, base_url=BASE_URL).close()
        assert logger.level == logging.DEBUG
        assert logger.handlers
    finally:
        logger.setLevel(level)
        logger.handlers[:] = handlers
