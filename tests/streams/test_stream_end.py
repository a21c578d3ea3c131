"""How a streamed body may end, on a real socket: right after ``data: [DONE]`` (with or without
the blank line) is a normal end; a body cut before ``[DONE]`` still raises."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from aigateway import (
    AsyncClient,
    Client,
    IncompleteStreamError,
    RetryPolicy,
    ServiceUnavailableError,
)
from aigateway._streams.sse import SSEDecoder

from .._local_servers import running
from ..conftest import API_KEY, resolve
from .test_stream_failures import event

pytestmark = pytest.mark.anyio
HELLO = [{"role": "user", "content": "hi"}]


BODIES = {
    "done-no-line-end": event("a") + b"data: [DONE]",
    "done-one-line-end": event("a") + b"data: [DONE]\n",
    "done-crlf": event("a") + b"data: [DONE]\r\n",
    "only-done-no-line-end": b"data: [DONE]",
    "cut-after-a-chunk": event("a"),
    "cut-mid-chunk": event("a") + event("b")[:-2],
    "cut-mid-done": event("a") + b"data: [DON",
}
"""The body each model id gets from the server: the model names the ending under test."""


class Handler(BaseHTTPRequestHandler):
    """Answers a chat request with the body its ``model`` names, then closes the connection,
    so the body ends exactly where the bytes end."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        body = BODIES[request["model"]]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test output is for the tests."""


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with ThreadingHTTPServer(("127.0.0.1", 0), Handler) as server, running(server):
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"


async def read_all(
    kind: str, base_url: str, model: str, max_retries: int = 0, **options: Any
) -> list[str | None]:
    """The contents of every chunk of a stream of ``model``'s body, read to the end."""
    params: dict[str, Any] = {"model": model, "messages": HELLO, "stream": True}
    options.update(api_key=API_KEY, base_url=base_url, max_retries=max_retries)
    options["retry_policy"] = RetryPolicy(sleep=lambda _: None, async_sleep=no_sleep)
    if kind == "sync":
        with (
            Client(**options) as client,
            client.chat.completions.create(**params) as stream,
        ):
            return [chunk.choices[0].delta.content for chunk in stream]
    async with AsyncClient(**options) as aclient:
        astream = await resolve(aclient.chat.completions.create(**params))
        async with astream:
            return [chunk.choices[0].delta.content async for chunk in astream]


async def no_sleep(seconds: float) -> None:
    """Retries wait for nothing here."""


@pytest.mark.parametrize("model", ["done-no-line-end", "done-one-line-end", "done-crlf"])
async def test_a_body_ending_right_after_done_ends_the_stream(
    kind: str, base_url: str, model: str
) -> None:
    assert await read_all(kind, base_url, model) == ["a"]


async def test_a_body_of_done_alone_is_an_empty_stream(kind: str, base_url: str) -> None:
    assert await read_all(kind, base_url, "only-done-no-line-end") == []


@pytest.mark.parametrize(
    ("model", "received"), [("cut-after-a-chunk", 1), ("cut-mid-chunk", 1), ("cut-mid-done", 1)]
)
async def test_a_body_cut_before_done_still_raises(
    kind: str, base_url: str, model: str, received: int
) -> None:
    with pytest.raises(IncompleteStreamError, match="before data: \\[DONE\\]") as caught:
        await read_all(kind, base_url, model)
    assert caught.value.received == received


async def test_an_error_event_before_any_chunk_counts_the_attempts(kind: str) -> None:
    busy = b'data: {"error": {"message": "busy", "type": "service_unavailable"}}\n\n'
    transport = httpx.MockTransport(
        lambda request: httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=busy
        )
    )
    with pytest.raises(ServiceUnavailableError) as caught:
        await read_all(kind, "http://gateway.test/v1", "m", max_retries=2, transport=transport)
    assert caught.value.attempts == 3
    assert "attempts=3" in str(caught.value)


def test_the_decoder_dispatches_an_unfinished_event_only_when_asked() -> None:
    strict, lenient = SSEDecoder(), SSEDecoder()
    for decoder in (strict, lenient):
        events = decoder.feed(b"data: one\n\ndata: two\ndata: [DONE]")
        assert [event.data for event in events] == ["one"]
    assert strict.close() == []
    assert strict.pending
    assert [event.data for event in lenient.close(dispatch_unfinished=True)] == ["two\n[DONE]"]
    assert not lenient.pending
    assert lenient.close(dispatch_unfinished=True) == []  # closed already: nothing more
