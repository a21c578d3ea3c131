"""The in-process mock for both HTTP libraries: `gateway.transport("httpx2")` beside httpx's
`MockTransport` (one core), delivery faults raised as the errors of the client's own library,
our clients on either library, and cassettes recorded through one library replayed through
the other; sync and async alike, nothing slept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import httpx2
import pytest

from aigateway import APIConnectionError, APITimeoutError, IncompleteStreamError
from aigateway.testing import (
    CassetteTransport,
    Httpx2CassetteTransport,
    Httpx2MockTransport,
    MockGateway,
    MockTransport,
)

from ._helpers import user

LIBRARIES = {"httpx": httpx, "httpx2": httpx2}
STACKS = sorted(LIBRARIES)
KINDS = ["sync", "async"]
CASSETTES = {"httpx": CassetteTransport, "httpx2": Httpx2CassetteTransport}


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@dataclass
class Exchange:
    """What a plain client of one library and kind saw: the status, the body's non-empty
    lines as they came, and the error that ended it."""

    status: int = 0
    lines: list[str] = field(default_factory=list)
    error: BaseException | None = None


async def send(
    library: ModuleType,
    kind: str,
    transport: Any,
    *,
    base_url: str,
    body: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 5.0,
) -> Exchange:
    """POST ``body`` to ``/chat/completions`` (GET ``/models`` without one) with a plain
    ``library`` client of ``kind`` over ``transport``, reading the reply line by line."""
    seen = Exchange()
    method, path = ("POST", "/chat/completions") if body is not None else ("GET", "/models")
    options: dict[str, Any] = {"transport": transport, "base_url": base_url, "timeout": timeout}
    options["headers"] = headers or {}
    try:
        if kind == "sync":
            with (
                library.Client(**options) as client,
                client.stream(method, path, json=body) as response,
            ):
                seen.status = response.status_code
                seen.lines.extend(line for line in response.iter_lines() if line)
        else:
            async with (
                library.AsyncClient(**options) as async_client,
                async_client.stream(method, path, json=body) as async_response,
            ):
                seen.status = async_response.status_code
                async for line in async_response.aiter_lines():
                    if line:
                        seen.lines.append(line)
    except Exception as exc:  # what the caller checks
        seen.error = exc
    return seen


async def call(
    stack: str, kind: str, gateway: MockGateway, *, stream: bool = False, timeout: float = 5.0
) -> Exchange:
    """A chat completion (streamed or not) with a plain client of ``stack`` and ``kind``."""
    body = {"model": "gpt-4o", "messages": user(), "stream": stream}
    headers = {"Authorization": f"Bearer {gateway.api_key}"}
    transport = gateway.transport(stack)  # type: ignore[call-overload]
    return await send(
        LIBRARIES[stack],
        kind,
        transport,
        base_url=gateway.base_url,
        body=body,
        headers=headers,
        timeout=timeout,
    )


def test_transport_gives_the_transport_of_each_library(gateway: MockGateway) -> None:
    plain = gateway.transport()
    assert type(plain) is MockTransport
    assert type(gateway.transport("httpx")) is MockTransport
    assert isinstance(plain, httpx.BaseTransport)
    assert isinstance(plain, httpx.AsyncBaseTransport)
    second = gateway.transport("httpx2")
    assert type(second) is Httpx2MockTransport
    assert isinstance(second, httpx2.BaseTransport)
    assert isinstance(second, httpx2.AsyncBaseTransport)
    assert not isinstance(second, httpx.BaseTransport)
    assert repr(second) == f"Httpx2MockTransport(base_url={gateway.base_url!r})"
    assert second.state is plain.state  # one gateway behind both
    with pytest.raises(ValueError, match="unknown HTTP stack 'requests': use one of httpx, httpx2"):
        gateway.transport("requests")  # type: ignore[call-overload]


@pytest.mark.anyio
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("stack", STACKS)
async def test_replies_whole_and_streamed_reach_either_library(
    stack: str, kind: str, gateway: MockGateway
) -> None:
    whole = await call(stack, kind, gateway)
    assert whole.error is None
    assert whole.status == 200
    text = json.loads("".join(whole.lines))["choices"][0]["message"]["content"]
    streamed = await call(stack, kind, gateway, stream=True)
    assert streamed.error is None
    assert streamed.lines[-1] == "data: [DONE]"
    pieces = [json.loads(line[6:]) for line in streamed.lines[:-1]]
    assert "".join(p["choices"][0]["delta"].get("content") or "" for p in pieces) == text


@pytest.mark.anyio
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("stack", STACKS)
async def test_delivery_faults_raise_the_errors_of_the_clients_library(
    stack: str, kind: str, gateway: MockGateway
) -> None:
    library = LIBRARIES[stack]
    other = LIBRARIES["httpx" if stack == "httpx2" else "httpx2"]

    def raised(exchange: Exchange, name: str) -> BaseException:
        assert type(exchange.error) is getattr(library, name), exchange.error
        assert not isinstance(exchange.error, other.HTTPError)
        return exchange.error

    gateway.faults.drop()
    raised(await call(stack, kind, gateway), "RemoteProtocolError")

    gateway.faults.drop_mid_stream(after_events=2)
    cut = await call(stack, kind, gateway, stream=True)
    raised(cut, "ReadError")
    assert len(cut.lines) == 2

    start = gateway.clock.now()
    gateway.faults.latency(5.0, times=1)
    late = await call(stack, kind, gateway, timeout=1.0)
    assert raised(late, "ReadTimeout").request.url.path == "/v1/chat/completions"  # type: ignore[attr-defined]
    assert gateway.clock.now() == start + 1.0  # the read timeout, on the mock clock

    gateway.faults.latency(3.0, between_chunks=True, times=1)
    slow = await call(stack, kind, gateway, stream=True, timeout=2.0)
    raised(slow, "ReadTimeout")
    assert slow.lines == []

    gateway.faults.malformed_chunk(b"not json", after_events=1)
    spoilt = await call(stack, kind, gateway, stream=True)
    assert spoilt.error is None  # the transport hands the event on; clients judge it
    assert spoilt.lines[1] == "data: not json"
    assert spoilt.lines[-1] == "data: [DONE]"


@pytest.mark.anyio
@pytest.mark.parametrize("kind", KINDS)
async def test_a_transport_answers_each_request_in_the_library_of_its_client(
    kind: str, gateway: MockGateway
) -> None:
    """The core takes the library from the request, so even httpx's `MockTransport` handed to
    an httpx2 client answers it with httpx2's responses and errors."""
    headers = {"Authorization": f"Bearer {gateway.api_key}"}
    ok = await send(httpx2, kind, gateway.transport(), base_url=gateway.base_url, headers=headers)
    assert ok.error is None
    assert ok.status == 200
    gateway.faults.drop()
    dropped = await send(httpx2, kind, gateway.transport(), base_url=gateway.base_url)
    assert type(dropped.error) is httpx2.RemoteProtocolError


@pytest.mark.anyio
@pytest.mark.parametrize("kind", KINDS)
async def test_our_clients_run_on_either_library_with_its_faults(
    kind: str, gateway: MockGateway
) -> None:
    messages = user()
    if kind == "sync":
        with gateway.client(stack="httpx2", max_retries=0) as client:
            reply = client.chat.completions.create(model="gpt-4o", messages=messages)
            with client.chat.completions.stream(model="gpt-4o", messages=messages) as stream:
                assert "".join(stream.text_stream) == reply.text
            with client.chat.completions.connect(model="gpt-4o", messages=messages) as socket:
                assert "".join(c.choices[0].delta.content or "" for c in socket) == reply.text
            gateway.faults.drop()
            with pytest.raises(APIConnectionError) as dropped:
                client.models.list()
            gateway.faults.latency(5.0, times=1)
            with pytest.raises(APITimeoutError) as late:
                client.with_options(timeout=1.0).models.list()
            gateway.faults.drop_mid_stream(after_events=2)
            with pytest.raises(IncompleteStreamError) as cut:
                for _ in client.chat.completions.create(
                    model="gpt-4o", messages=messages, stream=True
                ):
                    pass
    else:
        async with gateway.async_client(stack="httpx2", max_retries=0) as async_client:
            reply = await async_client.chat.completions.create(model="gpt-4o", messages=messages)
            async with async_client.chat.completions.stream(
                model="gpt-4o", messages=messages
            ) as async_stream:
                assert "".join([text async for text in async_stream.text_stream]) == reply.text
            gateway.faults.drop()
            with pytest.raises(APIConnectionError) as dropped:
                await async_client.models.list()
            gateway.faults.latency(5.0, times=1)
            with pytest.raises(APITimeoutError) as late:
                await async_client.with_options(timeout=1.0).models.list()
            gateway.faults.drop_mid_stream(after_events=2)
            with pytest.raises(IncompleteStreamError) as cut:
                async for _ in await async_client.chat.completions.create(
                    model="gpt-4o", messages=messages, stream=True
                ):
                    pass
    assert type(dropped.value.__cause__) is httpx2.RemoteProtocolError
    assert type(late.value.__cause__) is httpx2.ReadTimeout
    assert type(cut.value.__cause__) is httpx2.ReadError
    assert cut.value.received == 2


def test_our_clients_default_to_the_library_of_our_own_pools(
    gateway: MockGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    def lost_with(**options: Any) -> type[BaseException]:
        gateway.faults.drop()
        with (
            gateway.client(max_retries=0, **options) as client,
            pytest.raises(APIConnectionError) as dropped,
        ):
            client.models.list()
        return type(dropped.value.__cause__)

    monkeypatch.delenv("AIGATEWAY_HTTP_STACK", raising=False)  # set in a run on httpx2
    assert lost_with() is httpx.RemoteProtocolError
    monkeypatch.setenv("AIGATEWAY_HTTP_STACK", "httpx2")
    assert lost_with() is httpx2.RemoteProtocolError
    assert lost_with(stack="httpx") is httpx.RemoteProtocolError


# -- record and replay ----------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("recorded_on", "replayed_on"), [("httpx", "httpx2"), ("httpx2", "httpx")])
async def test_a_cassette_recorded_through_one_library_replays_through_the_other(
    recorded_on: str, replayed_on: str, kind: str, gateway: MockGateway, tmp_path: Path
) -> None:
    path = tmp_path / "calls.json"
    headers = {"Authorization": f"Bearer {gateway.api_key}"}
    bodies = [
        {"model": "gpt-4o", "messages": user(), "stream": False},
        {"model": "gpt-4o", "messages": user(), "stream": True},
    ]

    async def exchanges(stack: str, cassette: Any) -> list[Exchange]:
        return [
            await send(
                LIBRARIES[stack],
                kind,
                cassette,
                base_url=gateway.base_url,
                body=body,
                headers=headers,
            )
            for body in bodies
        ]

    inner = gateway.transport(recorded_on)  # type: ignore[call-overload]
    recorder = CASSETTES[recorded_on](path, mode="record", transport=inner)
    recorded = await exchanges(recorded_on, recorder)
    assert [e.error for e in recorded] == [None, None]
    player = CASSETTES[replayed_on](path, mode="replay")
    replayed = await exchanges(replayed_on, player)
    assert replayed == recorded
    assert len(gateway.requests) == 2  # the replay never reached the gateway
    assert gateway.api_key not in path.read_text()


@pytest.mark.anyio
async def test_a_cassette_records_through_the_default_transport_of_its_clients_library(
    gateway: MockGateway, tmp_path: Path
) -> None:
    path = tmp_path / "served.json"
    headers = {"Authorization": f"Bearer {gateway.api_key}"}
    with gateway.serve() as url:
        recorder = Httpx2CassetteTransport(path, mode="record")
        recorded = await send(httpx2, "async", recorder, base_url=url, headers=headers)
        await recorder.aclose()
    assert recorded.error is None
    assert recorded.status == 200
    replayed = await send(httpx, "sync", CassetteTransport(path), base_url=url, headers=headers)
    assert replayed == recorded


def test_a_cassette_refuses_an_inner_transport_of_the_other_library(
    gateway: MockGateway, tmp_path: Path
) -> None:
    cassette = Httpx2CassetteTransport(tmp_path / "c.json", transport=gateway.transport())
    with (
        httpx2.Client(transport=cassette, base_url=gateway.base_url) as client,
        pytest.raises(TypeError, match="is not an BaseTransport of httpx2, the library"),
    ):
        client.get("/models")


# -- without httpx2 -------------------------------------------------------------------------


def test_without_httpx2_the_mock_works_and_asking_for_it_names_the_extra() -> None:
    script = textwrap.dedent(
        """
        import sys
        sys.modules["httpx2"] = None  # as if it were not installed
        import aigateway.testing as testing
        gateway = testing.MockGateway()
        with gateway.client() as client:
            client.models.list()
        assert "Httpx2MockTransport" not in testing.__all__
        from aigateway.testing import *  # the names listed are all there
        for ask in (lambda: gateway.transport("httpx2"), lambda: testing.Httpx2CassetteTransport):
            try:
                ask()
            except ImportError as exc:
                print(exc)
        """
    )
    environment = {k: v for k, v in os.environ.items() if k != "AIGATEWAY_HTTP_STACK"}
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=environment,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2
    assert all("'httpx2'" in line and "httpx2" in line.partition(":")[2] for line in lines)
