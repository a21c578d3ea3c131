"""Limits and what the client reports, at the wire (respx): rate-limit values and the
client-side limiter, concurrency (streams hold their slot), timeouts, credits warnings and
errors, and debug logging. Waits are recorded, never slept; the policy's clock is fixed."""

from __future__ import annotations

import logging
import warnings
from typing import Any

import anyio
import httpx
import pytest
import respx

from aigateway import (
    AsyncClient,
    BadRequestError,
    Client,
    InsufficientCreditsError,
    LowBalanceWarning,
    RetryPolicy,
)

from .._paths import ROOT
from ..conftest import API_KEY, BASE_URL, Sleeps, resolve
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
TESTS = str(ROOT / "tests")


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
    assert reliable.last_rate_limit is not None
    assert reliable.last_rate_limit.remaining == 41
    with pytest.raises(BadRequestError) as caught:
        await create(reliable)
    assert caught.value.rate_limit is not None
    assert caught.value.rate_limit.remaining == 40
    assert reliable.last_rate_limit.remaining == 40  # errors are remembered too


async def test_client_rate_limit_is_the_deprecated_name_of_last_rate_limit(
    reliable: Client | AsyncClient, gateway: respx.Router
) -> None:
    """``rate_limit=`` is the `RateLimit` to keep to; what the replies said is
    ``last_rate_limit``. The old name still answers, warning at the caller's line."""
    gateway.post("/chat/completions").respond(200, json=OK, headers=limit_headers(41, NOW + 30))
    await create(reliable)
    with pytest.warns(DeprecationWarning, match=r"use client\.last_rate_limit") as warned:
        old = reliable.rate_limit
    assert old is not None
    assert old == reliable.last_rate_limit
    assert old.remaining == 41
    assert [warning.filename for warning in warned] == [__file__]


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
