"""The relay recipe of docs/relay.md on real sockets: uvicorn serves the app (the FastAPI one of
examples/fastapi_relay.py, the Starlette one of the page), the app streams from the served mock
gateway, and an httpx client plays the browser.

The mock's stream pacing decides when the browser leaves: its waits end at once for the first
events, then one lasts until the mock cancels it, which it does when its client (the relay)
closes the connection. So a stream cannot end by itself while a test waits, and every wait
here ends as soon as what it waits for happens (``BOUND`` is only a generous limit).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import json
import logging
import threading
import time
import types
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from typing import Any

import anyio
import httpx
import pytest
import uvicorn

from aigateway import errors
from aigateway._streams.sse import ServerSentEvent, SSEDecoder
from aigateway.testing import MockGateway

from .._paths import ROOT
from .test_docs_examples import doc_page

EXAMPLE = ROOT / "examples" / "fastapi_relay.py"
PAGE = ROOT / "docs" / "relay.md"
BOUND = 10.0
"""Seconds any one wait may take; each ends as soon as what it waits for happens."""

Message = MutableMapping[str, Any]
ASGIApp = Callable[
    [Message, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]],
    Awaitable[None],
]


def page_block(imports: str) -> str:
    """The page's Python block that contains ``imports``."""
    (code,) = [block.code for block in doc_page(PAGE).blocks if imports in block.code]
    return code


def load_app(framework: str) -> ASGIApp:
    """The app of the example (FastAPI) or of the page's Starlette block, freshly loaded."""
    if framework == "fastapi":
        spec = importlib.util.spec_from_file_location("fastapi_relay", EXAMPLE)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        module = types.ModuleType("starlette_relay")
        code = page_block("from starlette.applications import Starlette")
        exec(compile(code, f"{PAGE}:starlette", "exec"), module.__dict__)
    app: ASGIApp = module.app
    return app


@pytest.fixture(params=["fastapi", "starlette"])
def app(request: pytest.FixtureRequest) -> ASGIApp:
    return load_app(request.param)


@pytest.fixture
def served(gateway: MockGateway, monkeypatch: pytest.MonkeyPatch) -> Iterator[MockGateway]:
    """``gateway`` served on a free port, and the environment the relay's client reads."""
    with gateway.serve() as url:
        monkeypatch.setenv("AIGATEWAY_API_KEY", gateway.api_key)
        monkeypatch.setenv("AIGATEWAY_BASE_URL", url)
        yield gateway


@contextlib.contextmanager
def serving(app: ASGIApp) -> Iterator[str]:
    """``app`` under uvicorn on a free port of 127.0.0.1, in a thread, its lifespan run;
    yields the URL of its ``/chat``."""
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, log_config=None, log_level="warning", access_log=False
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="relay-app", daemon=True)
    thread.start()
    try:
        wait_until(lambda: server.started or not thread.is_alive())
        assert server.started, "the relay app did not start"
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}/chat"
    finally:
        server.should_exit = True
        thread.join(BOUND)


def wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + BOUND
    while not condition():
        assert time.monotonic() < deadline, "waited in vain"
        time.sleep(0.005)


class HeldStream:
    """The pace of ``gateway``'s streams for a test: the first ``free`` waits end at once, the
    next lasts until the mock cancels it (its client left)."""

    def __init__(self, gateway: MockGateway, free: int) -> None:
        self.gateway = gateway
        self.free = free
        self.holding = threading.Event()
        self.cancelled = threading.Event()
        gateway.stream_pacing = dataclasses.replace(
            gateway.stream_pacing, token_delay=1.0, async_sleep=self.sleep
        )

    async def sleep(self, seconds: float) -> None:
        if self.free:
            self.free -= 1
            return
        self.holding.set()
        try:
            await anyio.sleep_forever()
        finally:
            self.cancelled.set()

    def assert_closed_by_its_client(self) -> None:
        """The mock saw its client (the relay) close the held stream, and the request end."""
        assert self.cancelled.wait(BOUND), "the call to the gateway went on"
        gateway = self.gateway
        wait_until(lambda: gateway.rate_limits.in_flight(gateway.api_key) == 0)


def stalled(app: ASGIApp, after: int, stalling: threading.Event) -> ASGIApp:
    """``app`` whose body writes block after ``after`` events, as to a browser that stopped
    reading and whose buffers are full."""

    async def wrapped(
        scope: Message,
        receive: Callable[[], Awaitable[Message]],
        send: Callable[[Message], Awaitable[None]],
    ) -> None:
        written = 0

        async def slow_send(message: Message) -> None:
            nonlocal written
            if message["type"] == "http.response.body" and message.get("body"):
                written += 1
                if written > after:
                    stalling.set()
                    await anyio.sleep_forever()
            await send(message)

        await app(scope, receive, slow_send if scope["type"] == "http" else send)

    return wrapped


def ask(url: str, question: str = "Hi") -> contextlib.AbstractContextManager[httpx.Response]:
    return httpx.stream("GET", url, params={"q": question}, timeout=BOUND)


def events(response: httpx.Response) -> Iterator[ServerSentEvent]:
    """The relayed events, as they arrive; the relay ends its last event."""
    decoder = SSEDecoder()
    for data in response.iter_bytes():
        yield from decoder.feed(data)
    decoder.close()
    assert not decoder.pending


def problems(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What was logged at WARNING or above, or with a traceback."""
    return [
        f"{record.name}: {record.getMessage()}"
        for record in caplog.records
        if record.levelno >= logging.WARNING or record.exc_info
    ]


def test_the_page_shows_the_example_as_it_is() -> None:
    assert page_block("from fastapi import FastAPI") in EXAMPLE.read_text(encoding="utf-8")


def test_the_whole_reply_is_relayed_then_done(
    app: ASGIApp, served: MockGateway, caplog: pytest.LogCaptureFixture
) -> None:
    reply = "First line,\nsecond line."  # a line break in a piece must not end its event
    served.enqueue_reply(reply)
    with serving(app) as url, ask(url, "Tell me") as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["cache-control"] == "no-cache"
        received = list(events(response))
    *pieces, last = received
    assert len(pieces) > 1
    assert all(event.event == "message" for event in pieces)
    assert "".join(json.loads(event.data)["text"] for event in pieces) == reply
    assert (last.event, json.loads(last.data)) == ("done", {})
    (asked,) = served.requests
    assert json.loads(asked.body)["messages"] == [{"role": "user", "content": "Tell me"}]
    assert not problems(caplog)


@pytest.mark.parametrize("read", [0, 2], ids=["before-the-first-word", "mid-stream"])
def test_a_browser_leaving_closes_the_call_to_the_gateway(
    app: ASGIApp, served: MockGateway, caplog: pytest.LogCaptureFixture, read: int
) -> None:
    held = HeldStream(served, free=read)  # the first event holds no text: `read` words go
    with serving(app) as url:
        with ask(url) as response:
            received = events(response)
            assert [next(received).event for _ in range(read)] == ["message"] * read
            assert held.holding.wait(BOUND)
            assert served.rate_limits.in_flight(served.api_key) == 1  # the relay's call is open
        held.assert_closed_by_its_client()  # the browser has gone, so has the relay's call
    assert not problems(caplog)


def test_a_browser_leaving_while_an_event_is_written_closes_the_call_too(
    app: ASGIApp, served: MockGateway, caplog: pytest.LogCaptureFixture
) -> None:
    """The cancellation lands in Starlette's write, not in the generator, which waits at its
    ``yield``: the response closes it."""
    held = HeldStream(served, free=3)
    stalling = threading.Event()
    with serving(stalled(app, after=1, stalling=stalling)) as url:
        with ask(url) as response:
            assert next(events(response)).event == "message"
            assert stalling.wait(BOUND)
            assert held.holding.wait(BOUND)
        held.assert_closed_by_its_client()
    assert not problems(caplog)


def test_an_error_before_the_first_chunk_is_an_error_event(
    app: ASGIApp, served: MockGateway, caplog: pytest.LogCaptureFixture
) -> None:
    served.set_credits(served.api_key, 0)
    with serving(app) as url, ask(url) as response:
        assert response.status_code == 200
        received = [(event.event, json.loads(event.data)) for event in events(response)]
    assert received == [("error", {"error": "InsufficientCreditsError"})]
    (logged,) = problems(caplog)
    assert "chat relay failed" in logged
    assert not any(record.exc_info for record in caplog.records)


def test_an_error_mid_stream_is_an_error_event_after_the_text(
    app: ASGIApp, served: MockGateway, caplog: pytest.LogCaptureFixture
) -> None:
    served.faults.drop_mid_stream(after_events=3)
    with serving(app) as url, ask(url) as response:
        *pieces, last = events(response)
    assert pieces
    assert all(event.event == "message" for event in pieces)
    assert last.event == "error"
    assert issubclass(getattr(errors, json.loads(last.data)["error"]), errors.IncompleteStreamError)
    (logged,) = problems(caplog)
    assert "chat relay failed" in logged


def test_the_starlette_app_asks_for_a_question(served: MockGateway) -> None:
    with serving(load_app("starlette")) as url:
        response = httpx.get(url, timeout=BOUND)
    assert response.status_code == 400
    assert "q=" in response.text
