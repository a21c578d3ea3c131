"""Each extra: with its packages installed, the feature works; without them, using it raises an
ImportError naming the extra to install.

Which extras are installed is read from the installed aigateway's own metadata (an extra
counts when every package it lists is there), so nothing here lists an extra's packages.
``AIGATEWAY_SMOKE_EXTRAS`` (comma-separated, empty for none) names the extras a CI lane
installed; the first test checks them against what is there.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from packaging.requirements import Requirement  # a dependency of pytest

import aigateway
from aigateway import Client, ConfigurationError, SharedStateError
from aigateway.testing import MockGateway

from ._gateway import CHAT_REPLY, Reply, StubGateway, chunk, sse
from .conftest import KEY, USER, closed_port, opened, read_all, resolve

pytestmark = pytest.mark.anyio

EXTRAS = sorted(
    set(importlib.metadata.metadata("aigateway").get_all("Provides-Extra") or []) - {"dev"}
)


def installed(extra: str) -> bool:
    """Whether every package that aigateway's metadata lists for ``extra`` is installed."""
    for line in importlib.metadata.requires("aigateway") or []:
        requirement = Requirement(line)
        if requirement.marker is None or not requirement.marker.evaluate({"extra": extra}):
            continue
        try:
            importlib.metadata.distribution(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            return False
    return True


async def needs(extra: str, use: Callable[[], Any]) -> bool:
    """True when ``extra`` is installed; else checks that ``use()`` (awaited if need be)
    raises an ImportError naming it, and says False."""
    if installed(extra):
        return True
    with pytest.raises(ImportError, match=rf"pip install -e '\.\[{extra}\]'"):
        await resolve(use())
    return False


def test_the_extras_of_this_run_are_installed() -> None:
    told = os.environ.get("AIGATEWAY_SMOKE_EXTRAS")
    if told is None:
        pytest.skip("AIGATEWAY_SMOKE_EXTRAS is not set: the extras are whatever is installed")
    expected = {name for name in told.split(",") if name}
    assert expected <= set(EXTRAS), f"no such extra: {expected - set(EXTRAS)}"
    there = {extra for extra in EXTRAS if installed(extra)}
    assert expected <= there, f"installed extras: {sorted(there)}"
    if not expected:  # a plain install: every test below takes its missing-extra path
        assert not there, f"a plain install has {sorted(there)}"


async def test_server_serves_the_mock(kind: str, anyio_backend: str) -> None:
    gateway = MockGateway()

    def serve() -> None:
        with gateway.serve():
            pass

    if not await needs("server", serve):
        return
    with gateway.serve() as url:
        async with opened(kind, api_key=gateway.api_key, base_url=url, max_retries=0) as client:
            create = client.chat.completions.create
            reply = await resolve(create(model="gpt-4o-mini", messages=[USER]))
            text = reply.choices[0].message.content
            assert text
            stream = await resolve(create(model="gpt-4o-mini", messages=[USER], stream=True))
            assert _text(await read_all(stream)) == text  # the mock is deterministic
            if kind == "async" and anyio_backend != "asyncio":
                return  # the async socket runs on asyncio only
            connect = client.chat.completions.connect
            socket = await resolve(connect(model="gpt-4o-mini", messages=[USER]))
            assert _text(await read_all(socket)) == text


async def test_ws_streams_over_a_websocket(kind: str, anyio_backend: str) -> None:
    if kind == "async" and anyio_backend != "asyncio":
        pytest.skip("the async socket runs on asyncio only")
    if not installed("ws"):  # nothing to connect to: the error comes before any connection
        nowhere = f"http://127.0.0.1:{closed_port()}/v1"
        async with opened(kind, api_key=KEY, base_url=nowhere) as client:
            connect = client.chat.completions.connect
            assert not await needs("ws", lambda: connect(model="gpt-4o-mini", messages=[USER]))
        return
    with _websocket_gateway() as (url, handshakes):
        async with opened(kind, api_key=KEY, base_url=url, max_retries=0) as client:
            connect = client.chat.completions.connect
            socket = await resolve(connect(model="gpt-4o-mini", messages=[USER]))
            assert _text(await read_all(socket)) == "hello"
    assert handshakes == [f"Authorization, {KEY}"]


async def test_progress_shows_a_batch_bar(
    client: Client | aigateway.AsyncClient, capsys: pytest.CaptureFixture[str]
) -> None:
    items = [{"model": "gpt-4o-mini", "messages": [USER]}] * 3

    async def run() -> Any:
        if isinstance(client, Client):
            return aigateway.run_batch(client, items, progress=True)
        return await aigateway.arun_batch(client, items, progress=True)

    if not await needs("progress", run):
        return
    result = await run()
    assert [item.value.choices[0].message.content for item in result] == ["hello"] * 3
    assert "3/3" in capsys.readouterr().err


async def test_redis_says_when_it_is_unreachable() -> None:
    from aigateway.shared import RedisState

    state = RedisState(f"redis://127.0.0.1:{closed_port()}", timeout=0.2)
    if await needs("redis", lambda: state.usage(KEY)):
        with pytest.raises(SharedStateError, match="unavailable"):
            state.usage(KEY)


async def test_otel_traces_each_call(kind: str, stub: StubGateway) -> None:
    def trace_globally() -> None:
        Client(api_key=KEY, base_url=stub.base_url, tracing=True).close()

    if not await needs("otel", trace_globally):
        return
    from opentelemetry import trace

    names: list[str] = []

    class RecordingTracer(trace.NoOpTracer):
        def start_span(self, name: str, *args: Any, **kwargs: Any) -> Any:
            names.append(name)
            return super().start_span(name, *args, **kwargs)

    class RecordingProvider(trace.NoOpTracerProvider):
        def get_tracer(self, *args: Any, **kwargs: Any) -> Any:
            return RecordingTracer()

    options = {"api_key": KEY, "base_url": stub.base_url, "tracing": RecordingProvider()}
    async with opened(kind, **options) as client:
        await resolve(client.chat.completions.create(model="gpt-4o-mini", messages=[USER]))
    assert names == ["chat gpt-4o-mini"]


async def test_httpx2_carries_the_calls(
    kind: str, stub: StubGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client's own pools on httpx2 (``AIGATEWAY_HTTP_STACK=httpx2``), an httpx2 client
    given and an httpx2 transport given: each call, whole and streamed, goes over httpx2."""
    monkeypatch.setenv("AIGATEWAY_HTTP_STACK", "httpx2")
    if not installed("httpx2"):  # the client asks for httpx2 when it is made
        with pytest.raises(ConfigurationError, match=r"pip install -e '\.\[httpx2\]'"):
            Client(api_key=KEY, base_url=stub.base_url)
        return
    import httpx2

    sync = kind == "sync"
    given = httpx2.Client() if sync else httpx2.AsyncClient()
    transport = httpx2.HTTPTransport() if sync else httpx2.AsyncHTTPTransport()
    try:
        for options in [{}, {"http_client": given}, {"transport": transport}]:
            stub.script("/chat/completions", Reply(CHAT_REPLY), sse(chunk("hel"), chunk("lo")))
            async with opened(kind, api_key=KEY, base_url=stub.base_url, **options) as client:
                create = client.chat.completions.with_raw_response.create
                raw = await resolve(create(model="gpt-4o-mini", messages=[USER]))
                assert isinstance(raw.http_response, httpx2.Response), options
                assert raw.parse().choices[0].message.content == "hello"
                stream = client.chat.completions.create
                chunks = await read_all(
                    await resolve(stream(model="gpt-4o-mini", messages=[USER], stream=True))
                )
                assert _text(chunks) == "hello"
    finally:
        await resolve(given.close() if sync else given.aclose())  # the caller closes its own
    assert stub.paths() == ["/v1/chat/completions"] * 6


async def test_ray_runs_batches_on_a_cluster() -> None:
    from aigateway.helpers.ray import run_batch_on_ray

    def run() -> None:
        run_batch_on_ray([{"model": "gpt-4o-mini", "messages": [USER]}], client_options={})

    if await needs("ray", run):
        pytest.skip(
            "a Ray cluster is too heavy for a smoke test; tests/helpers/test_batch_ray.py runs one"
        )


def _text(chunks: list[Any]) -> str:
    return "".join(item.choices[0].delta.content or "" for item in chunks)


@contextmanager
def _websocket_gateway() -> Iterator[tuple[str, list[str]]]:
    """A gateway's ``/v1/stream`` on websockets' own server: "hel", "lo", then the done frame.
    Yields the base URL and the ``Sec-WebSocket-Protocol`` header of each handshake."""
    from websockets.sync.server import serve

    handshakes: list[str] = []

    def session(connection: Any) -> None:
        handshakes.append(connection.request.headers["Sec-WebSocket-Protocol"])
        assert json.loads(connection.recv())["messages"] == [USER]
        for piece in ("hel", "lo"):
            connection.send(json.dumps(chunk(piece)))
        connection.send(json.dumps({"object": "chat.completion.done"}))

    with serve(session, "127.0.0.1", 0, subprotocols=["Authorization"]) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.socket.getsockname()[1]}/v1", handshakes
        finally:
            server.shutdown()
            thread.join()
