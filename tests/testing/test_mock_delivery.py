"""Waits acted out by the in-process transport: pacing and injected latency, on the mock clock,
ending in `httpx.ReadTimeout` past the read timeout; sync and async alike, nothing slept."""

from __future__ import annotations

from dataclasses import dataclass, field

import httpx
import pytest

from aigateway.testing import MockGateway
from aigateway.testing._core.pacing import StreamPacing

from ._helpers import user

KINDS = ["sync", "async"]


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@dataclass
class Waits:
    """Records the pacing's sleeps, sync and async apart, instead of sleeping."""

    sync: list[float] = field(default_factory=list)
    asynchronous: list[float] = field(default_factory=list)

    def pace(self, gateway: MockGateway, time_to_first_token: float, token_delay: float) -> None:
        gateway.stream_pacing = StreamPacing(
            time_to_first_token, token_delay, sleep=self.sync.append, async_sleep=self._record
        )

    async def _record(self, seconds: float) -> None:
        self.asynchronous.append(seconds)

    def of(self, kind: str) -> list[float]:
        """The waits of a ``kind`` client; the other kind's sleep must never be used."""
        assert (self.asynchronous if kind == "sync" else self.sync) == []
        return self.sync if kind == "sync" else self.asynchronous


async def stream(
    kind: str, gateway: MockGateway, received: list[str], *, timeout: float = 5.0
) -> None:
    """Stream a chat completion with a plain httpx client of ``kind``, appending each
    ``data:`` line to ``received`` as it arrives."""
    transport = gateway.transport()
    headers = {"Authorization": f"Bearer {gateway.api_key}"}
    body = {"model": "gpt-4o", "messages": user(), "stream": True}
    url = gateway.base_url
    if kind == "sync":
        with (
            httpx.Client(transport=transport, base_url=url, headers=headers, timeout=timeout) as h,
            h.stream("POST", "/chat/completions", json=body) as response,
        ):
            received.extend(line for line in response.iter_lines() if line)
        return
    async with (
        httpx.AsyncClient(transport=transport, base_url=url, headers=headers, timeout=timeout) as a,
        a.stream("POST", "/chat/completions", json=body) as async_response,
    ):
        async for line in async_response.aiter_lines():
            if line:
                received.append(line)


@pytest.fixture
def waits() -> Waits:
    return Waits()


@pytest.mark.anyio
@pytest.mark.parametrize("kind", KINDS)
async def test_a_first_token_later_than_the_read_timeout_times_out_after_it(
    kind: str, gateway: MockGateway, waits: Waits
) -> None:
    waits.pace(gateway, time_to_first_token=10.0, token_delay=0.0)
    start = gateway.clock.now()
    received: list[str] = []
    with pytest.raises(httpx.ReadTimeout):
        await stream(kind, gateway, received, timeout=1.0)
    assert received == []
    assert waits.of(kind) == [1.0]
    assert gateway.clock.now() == start + 1.0


@pytest.mark.anyio
@pytest.mark.parametrize("kind", KINDS)
async def test_a_token_delay_past_the_read_timeout_cuts_the_stream_after_the_first_event(
    kind: str, gateway: MockGateway, waits: Waits
) -> None:
    waits.pace(gateway, time_to_first_token=0.5, token_delay=3.0)
    start = gateway.clock.now()
    received: list[str] = []
    with pytest.raises(httpx.ReadTimeout):
        await stream(kind, gateway, received, timeout=2.0)
    assert len(received) == 1
    assert received[0].startswith("data: {")
    assert waits.of(kind) == [0.5, 2.0]
    assert gateway.clock.now() == start + 2.5


@pytest.mark.anyio
@pytest.mark.parametrize("kind", KINDS)
async def test_delays_under_the_read_timeout_are_waited_in_full_on_the_mock_clock(
    kind: str, gateway: MockGateway, waits: Waits
) -> None:
    waits.pace(gateway, time_to_first_token=0.5, token_delay=0.25)
    start = gateway.clock.now()
    received: list[str] = []
    await stream(kind, gateway, received, timeout=1.0)
    assert received[-1] == "data: [DONE]"
    assert waits.of(kind) == [0.5] + [0.25] * (len(received) - 1)
    assert gateway.clock.now() - start == pytest.approx(0.5 + 0.25 * (len(received) - 1))


@pytest.mark.anyio
@pytest.mark.parametrize("kind", KINDS)
async def test_a_timed_out_stream_is_closed_and_no_longer_in_flight(
    kind: str, gateway: MockGateway, waits: Waits
) -> None:
    gateway.rate_limits.set("free_plan", gateway.api_key)  # two requests in flight at most
    waits.pace(gateway, time_to_first_token=0.0, token_delay=5.0)
    for _ in range(3):
        with pytest.raises(httpx.ReadTimeout):
            await stream(kind, gateway, [], timeout=1.0)
    waits.pace(gateway, time_to_first_token=0.0, token_delay=0.0)
    received: list[str] = []
    await stream(kind, gateway, received)
    assert received[-1] == "data: [DONE]"


@pytest.mark.anyio
@pytest.mark.parametrize("kind", KINDS)
async def test_a_chunk_latency_and_a_token_delay_add_up_against_the_read_timeout(
    kind: str, gateway: MockGateway, waits: Waits
) -> None:
    gateway.faults.latency(0.6, between_chunks=True, times=1)
    waits.pace(gateway, time_to_first_token=0.0, token_delay=0.6)
    start = gateway.clock.now()
    received: list[str] = []
    with pytest.raises(httpx.ReadTimeout):
        await stream(kind, gateway, received, timeout=1.0)
    assert len(received) == 1
    # 0.6 s of latency before the first event; then 1.2 s of silence, cut at 1 s, of which
    # the pacing's 0.6 s is slept
    assert waits.of(kind) == [0.6]
    assert gateway.clock.now() - start == pytest.approx(0.6 + 1.0)


@pytest.mark.anyio
@pytest.mark.parametrize("kind", KINDS)
async def test_a_paced_stream_dropped_mid_way_waits_without_blocking(
    kind: str, gateway: MockGateway, waits: Waits
) -> None:
    gateway.faults.drop_mid_stream(after_events=2)
    waits.pace(gateway, time_to_first_token=0.5, token_delay=0.25)
    received: list[str] = []
    with pytest.raises(httpx.ReadError):
        await stream(kind, gateway, received)
    assert len(received) == 2
    assert waits.of(kind) == [0.5, 0.25, 0.25]  # the third event is waited for, then lost


@pytest.mark.anyio
@pytest.mark.parametrize("kind", KINDS)
async def test_latency_before_the_reply_moves_the_clock_or_times_out(
    kind: str, gateway: MockGateway, waits: Waits
) -> None:
    waits.pace(gateway, time_to_first_token=0.0, token_delay=0.0)
    gateway.faults.latency(5.0, times=2)
    start = gateway.clock.now()
    received: list[str] = []
    await stream(kind, gateway, received, timeout=10.0)
    assert received[-1] == "data: [DONE]"
    assert gateway.clock.now() == start + 5.0
    with pytest.raises(httpx.ReadTimeout):
        await stream(kind, gateway, [], timeout=2.0)
    assert gateway.clock.now() == start + 7.0
    assert waits.of(kind) == []  # injected latency is mock time only


@pytest.mark.anyio
@pytest.mark.parametrize("kind", KINDS)
async def test_latency_between_chunks_moves_the_clock_or_times_out(
    kind: str, gateway: MockGateway, waits: Waits
) -> None:
    gateway.faults.latency(0.5, between_chunks=True, times=1)
    start = gateway.clock.now()
    received: list[str] = []
    await stream(kind, gateway, received, timeout=1.0)
    # one wait before each event and one before the end of the body
    assert gateway.clock.now() == start + 0.5 * (len(received) + 1)
    gateway.faults.latency(3.0, between_chunks=True, times=1)
    with pytest.raises(httpx.ReadTimeout):
        await stream(kind, gateway, [], timeout=2.0)
    assert waits.of(kind) == []


def test_served_pacing_waits_in_full_whatever_the_read_timeout(gateway: MockGateway) -> None:
    pytest.importorskip("uvicorn")
    waits = Waits()
    waits.pace(gateway, time_to_first_token=5.0, token_delay=3.0)
    start = gateway.clock.now()
    body = {"model": "gpt-4o", "messages": user(), "stream": True}
    headers = {"Authorization": f"Bearer {gateway.api_key}"}
    served = gateway.serve(clock="manual")
    with served as url, httpx.Client(base_url=url, headers=headers, timeout=1.0) as h:
        lines = [line for line in h.post("/chat/completions", json=body).iter_lines() if line]
    assert lines[-1] == "data: [DONE]"
    # the server sleeps the whole pacing (recorded here, so no real time passes) and leaves the
    # read timeout to the client's socket; the manual clock does not move
    assert waits.asynchronous == [5.0] + [3.0] * (len(lines) - 1)
    assert waits.sync == []
    assert gateway.clock.now() == start
