"""The mock gateway's rate limits, idempotency keys and fault injection, at the wire (httpx)."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest

from aigateway.testing import MockGateway, RateLimits
from aigateway.testing._core.rate_limits import PRESETS

from ._helpers import parse_sse, user

Chat = Callable[..., httpx.Response]


def headers_of(gateway: MockGateway, key: str | None = None) -> dict[str, str]:
    return {"Authorization": f"Bearer {key or gateway.api_key}"}


# -- rate limits --------------------------------------------------------------------------------


def test_the_presets_are_the_design_table() -> None:
    assert PRESETS["free"] == RateLimits(requests_per_minute=60, tokens_per_minute=90_000)
    assert PRESETS["paid"] == RateLimits(tokens_per_minute=10_000_000)
    assert PRESETS["free_plan"] == RateLimits(requests_per_minute=10, concurrent=2)
    assert PRESETS["starter"] == RateLimits(requests_per_minute=60, concurrent=10)
    assert PRESETS["integration"] == RateLimits(
        requests_per_minute=100, requests_per_hour=1000, requests_per_day=10000
    )
    with pytest.raises(ValueError, match="unknown rate-limit preset 'gold'"):
        MockGateway(rate_limits="gold")


def test_every_reply_carries_the_rate_limit_headers(
    gateway: MockGateway, client: httpx.Client, chat: Chat
) -> None:
    window_end = (int(gateway.clock.now()) // 60 + 1) * 60
    first = chat()
    assert first.headers["x-ratelimit-limit"] == "60"
    assert first.headers["x-ratelimit-remaining"] == "59"
    assert first.headers["x-ratelimit-reset"] == str(window_end)
    assert first.headers["x-ratelimit-limit-tokens"] == "90000"
    used = first.json()["usage"]["total_tokens"]
    assert int(chat().headers["x-ratelimit-remaining-tokens"]) == 90000 - used
    assert client.get("/models").headers["x-ratelimit-remaining"] == "57"
    assert chat(model="nope").headers["x-ratelimit-remaining"] == "56"  # errors too


def test_requests_beyond_the_minute_get_a_429_until_the_clock_moves(
    gateway: MockGateway, chat: Chat
) -> None:
    gateway.rate_limits.set("free_plan")
    start = gateway.clock.now()
    for _ in range(10):
        assert chat().status_code == 200
    refused = chat()
    reset = (int(start) // 60 + 1) * 60
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "rate_limit_exceeded"
    assert refused.headers["x-ratelimit-remaining"] == "0"
    assert refused.headers["x-ratelimit-reset"] == str(reset)
    assert refused.headers["retry-after"] == str(int(reset - start))
    gateway.clock.set(reset)
    assert chat().status_code == 200


def test_hour_and_day_windows(gateway: MockGateway, chat: Chat) -> None:
    gateway.rate_limits.set(RateLimits(requests_per_hour=2, requests_per_day=3))
    gateway.clock.set(3600 * 1000)
    assert [chat().status_code for _ in range(3)] == [200, 200, 429]
    gateway.clock.advance(3600)
    assert [chat().status_code for _ in range(2)] == [200, 429]  # the day's 3 are used
    assert "requests per day" in chat().json()["error"]["message"]


def test_tokens_per_minute(gateway: MockGateway, chat: Chat) -> None:
    gateway.rate_limits.set(RateLimits(tokens_per_minute=20))
    assert chat().status_code == 200  # goes over the limit: it is counted afterwards
    refused = chat()
    assert refused.status_code == 429
    assert "tokens per minute" in refused.json()["error"]["message"]
    gateway.clock.advance(60)
    assert chat().status_code == 200


def test_limits_are_per_key(gateway: MockGateway, chat: Chat, client: httpx.Client) -> None:
    other = gateway.create_account()
    gateway.rate_limits.set(RateLimits(requests_per_minute=1))
    gateway.rate_limits.set("unlimited", key=other.key)
    assert [chat().status_code for _ in range(2)] == [200, 429]
    body = {"model": "gpt-4o", "messages": user()}
    for _ in range(3):
        reply = client.post("/chat/completions", json=body, headers=headers_of(gateway, other.key))
        assert reply.status_code == 200


def test_concurrent_requests_count_until_a_stream_is_closed(
    gateway: MockGateway, client: httpx.Client, chat: Chat
) -> None:
    gateway.rate_limits.set("free_plan")
    body = {"model": "gpt-4o", "messages": user(), "stream": True}
    first = client.send(client.build_request("POST", "/chat/completions", json=body), stream=True)
    second = client.send(client.build_request("POST", "/chat/completions", json=body), stream=True)
    refused = chat()
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "concurrency_limit_exceeded"
    assert refused.headers["retry-after"] == "1"
    first.read()  # read to the end: no longer in flight
    assert chat().status_code == 200
    second.close()  # closed early: no longer in flight either
    assert gateway.rate_limits.in_flight(gateway.api_key) == 0


# -- idempotency keys -----------------------------------------------------------------------------


def test_the_same_key_and_body_replay_the_first_reply_and_charge_once(
    gateway: MockGateway, client: httpx.Client
) -> None:
    body = {"model": "gpt-4o", "messages": user()}
    key = {"Idempotency-Key": "op-1"}
    first = client.post("/chat/completions", json=body, headers=key)
    again = client.post("/chat/completions", json=body, headers=key)
    assert again.content == first.content
    assert again.headers["idempotent-replayed"] == "true"
    assert "idempotent-replayed" not in first.headers
    assert len(gateway.charges) == 1


def test_the_same_key_with_another_body_is_a_409(
    gateway: MockGateway, client: httpx.Client
) -> None:
    key = {"Idempotency-Key": "op-2"}
    client.post("/chat/completions", json={"model": "gpt-4o", "messages": user()}, headers=key)
    other = client.post(
        "/chat/completions", json={"model": "gpt-4o", "messages": user("bye")}, headers=key
    )
    assert other.status_code == 409
    assert other.json()["error"]["code"] == "idempotency_key_reused"
    assert len(gateway.charges) == 1


def test_keys_are_per_account_and_last_24_hours(gateway: MockGateway, client: httpx.Client) -> None:
    body = {"model": "gpt-4o", "messages": user()}
    key = {"Idempotency-Key": "op-3"}
    other = gateway.create_account()
    client.post("/chat/completions", json=body, headers=key)
    client.post("/chat/completions", json=body, headers={**key, **headers_of(gateway, other.key)})
    assert len(gateway.charges) == 2  # another account: its own key space
    gateway.clock.advance(24 * 3600 - 1)
    client.post("/chat/completions", json=body, headers=key)
    assert len(gateway.charges) == 2
    gateway.clock.advance(1)
    client.post("/chat/completions", json=body, headers=key)
    assert len(gateway.charges) == 3  # forgotten after 24 hours


def test_a_failed_request_does_not_use_up_its_key(
    gateway: MockGateway, client: httpx.Client
) -> None:
    body = {"model": "gpt-4o", "messages": user()}
    key = {"Idempotency-Key": "op-4"}
    gateway.set_credits(gateway.account, 0)
    assert client.post("/chat/completions", json=body, headers=key).status_code == 402
    gateway.set_credits(gateway.account, 20)
    assert client.post("/chat/completions", json=body, headers=key).status_code == 200
    assert len(gateway.charges) == 1


def test_a_stream_is_replayed_event_for_event(gateway: MockGateway, client: httpx.Client) -> None:
    body = {"model": "gpt-4o", "messages": user(), "stream": True}
    key = {"Idempotency-Key": "op-5"}
    first = client.post("/chat/completions", json=body, headers=key)
    again = client.post("/chat/completions", json=body, headers=key)
    assert parse_sse(again.content) == parse_sse(first.content)
    assert len(gateway.charges) == 1


# -- faults ---------------------------------------------------------------------------------------


def test_fail_the_next_requests_with_a_status(gateway: MockGateway, chat: Chat) -> None:
    gateway.faults.fail(503, times=2)
    replies = [chat() for _ in range(3)]
    assert [r.status_code for r in replies] == [503, 503, 200]
    assert replies[0].json()["error"]["code"] == "service_unavailable"
    assert len(gateway.charges) == 1  # failed before doing anything


def test_a_429_fault_with_and_without_headers(gateway: MockGateway, chat: Chat) -> None:
    gateway.faults.fail(429, retry_after=7)
    gateway.faults.fail(429, rate_limit_headers=False)
    with_headers, bare = chat(), chat()
    assert with_headers.headers["retry-after"] == "7"
    assert with_headers.headers["x-ratelimit-limit"] == "60"
    assert with_headers.headers["x-ratelimit-remaining"] == "0"
    assert with_headers.headers["x-ratelimit-reset"] == str(int(gateway.clock.now() + 7))
    assert bare.status_code == 429
    assert not [name for name in bare.headers if name.startswith(("x-ratelimit", "retry-after"))]


def test_faults_can_target_one_path(gateway: MockGateway, chat: Chat, client: httpx.Client) -> None:
    gateway.faults.fail(500, path="/models")
    assert chat().status_code == 200
    assert client.get("/models").status_code == 500
    assert gateway.faults.pending == []


def test_drop_before_the_reply(gateway: MockGateway, chat: Chat) -> None:
    gateway.faults.drop()
    with pytest.raises(httpx.RemoteProtocolError):
        chat()
    assert gateway.charges == []
    gateway.faults.drop(after_processing=True)
    with pytest.raises(httpx.RemoteProtocolError):
        chat()
    assert len(gateway.charges) == 1  # performed and charged; only the reply was lost


def test_drop_in_the_middle_of_a_stream(gateway: MockGateway, client: httpx.Client) -> None:
    gateway.faults.drop_mid_stream(after_events=2)
    body = {"model": "gpt-4o", "messages": user(), "stream": True}
    received: list[str] = []
    with (
        client.stream("POST", "/chat/completions", json=body) as response,
        pytest.raises(httpx.ReadError),
    ):
        received.extend(response.iter_lines())
    assert len([line for line in received if line.startswith("data: ")]) == 2
    assert gateway.rate_limits.in_flight(gateway.api_key) == 0


def test_truncated_and_malformed_bodies(gateway: MockGateway, chat: Chat) -> None:
    gateway.faults.truncate()
    cut = chat()
    assert cut.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        cut.json()
    gateway.faults.malformed()
    page = chat()
    assert page.headers["content-type"] == "text/html"
    assert page.text.startswith("<html>")


def test_latency_moves_the_clock_and_times_out_past_the_read_timeout(
    gateway: MockGateway, chat: Chat, client: httpx.Client
) -> None:
    gateway.faults.latency(5.0, times=2)
    start = gateway.clock.now()
    assert chat().status_code == 200
    assert gateway.clock.now() == start + 5
    with pytest.raises(httpx.ReadTimeout):
        client.post("/chat/completions", json={"model": "gpt-4o", "messages": user()}, timeout=2.0)
    assert gateway.clock.now() == start + 7


def test_latency_between_stream_chunks(gateway: MockGateway, client: httpx.Client) -> None:
    gateway.faults.latency(3.0, between_chunks=True, times=1)
    body = {"model": "gpt-4o", "messages": user(), "stream": True}
    with (
        client.stream("POST", "/chat/completions", json=body, timeout=2.0) as response,
        pytest.raises(httpx.ReadTimeout),
    ):
        response.read()
