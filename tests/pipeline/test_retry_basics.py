"""The pipeline's retries: what is retried, how many attempts, the waits (recorded, never slept)."""

from __future__ import annotations

from typing import Any

import pytest
import respx

from aigateway import (
    AsyncClient,
    BadRequestError,
    Client,
    InternalServerError,
    ServiceUnavailableError,
)

from ..conftest import BASE_URL, Sleeps, resolve

pytestmark = pytest.mark.anyio
USER = [{"role": "user", "content": "Hello"}]
OK = {
    "id": "chatcmpl-1",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}],
}
FAIL = {"error": {"message": "boom", "type": "server_error", "code": "server_error"}}


@pytest.fixture
def gateway() -> Any:
    with respx.mock(base_url=BASE_URL, assert_all_called=False) as router:
        yield router


async def test_500_then_200_succeeds_on_the_second_attempt(
    client: Client | AsyncClient, gateway: respx.Router, sleeps: Sleeps
) -> None:
    route = gateway.post("/chat/completions")
    route.side_effect = [respx.MockResponse(500, json=FAIL), respx.MockResponse(200, json=OK)]
    raw = await resolve(client.chat.completions.with_raw_response.create(model="m", messages=USER))
    assert raw.attempts == 2
    assert raw.parse().text == "ok"
    assert route.call_count == 2
    assert sleeps == [1.0]


async def test_503_three_times_exhausts_two_retries(
    client: Client | AsyncClient, gateway: respx.Router, sleeps: Sleeps
) -> None:
    route = gateway.post("/chat/completions").respond(503, json=FAIL)
    with pytest.raises(ServiceUnavailableError) as caught:
        await resolve(
            client.with_options(max_retries=2).chat.completions.create(model="m", messages=USER)
        )
    assert route.call_count == 3
    assert caught.value.attempts == 3
    assert sleeps == [1.0, 2.0]


async def test_400_is_not_retried(
    client: Client | AsyncClient, gateway: respx.Router, sleeps: Sleeps
) -> None:
    route = gateway.post("/chat/completions").respond(400, json=FAIL)
    with pytest.raises(BadRequestError) as caught:
        await resolve(client.chat.completions.create(model="m", messages=USER))
    assert route.call_count == 1
    assert caught.value.attempts == 1
    assert sleeps == []


async def test_per_call_max_retries(
    client: Client | AsyncClient, gateway: respx.Router, sleeps: Sleeps
) -> None:
    route = gateway.post("/chat/completions").respond(500, json=FAIL)
    with pytest.raises(InternalServerError):
        await resolve(client.chat.completions.create(model="m", messages=USER, max_retries=0))
    assert route.call_count == 1
