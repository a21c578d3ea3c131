"""The headers a request goes out with: the http client's own, the client's on top, the call's
on top of those (whatever their case), exactly as httpx would merge them; an http client's
cookies and query parameters still go out."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

import aigateway
from aigateway import AsyncClient, Client
from aigateway._call.settings import DEFAULT_TIMEOUT
from aigateway._http.body import accept_encoding

from ..conftest import CHAT_REPLY, resolve

pytestmark = pytest.mark.anyio

HELLO = [{"role": "user", "content": "hello"}]


def recording_client(kind: str, sent: list[httpx.Request], **http: Any) -> Client | AsyncClient:
    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        if request.headers["accept"] == "text/event-stream":
            return httpx.Response(
                200, headers={"content-type": "text/event-stream"}, content=b"data: [DONE]\n\n"
            )
        return httpx.Response(200, json=CHAT_REPLY)

    transport = httpx.MockTransport(handler)
    if kind == "sync":
        return Client(
            api_key="sk-test",
            base_url="https://gateway.test/v1",
            max_retries=0,
            http_client=httpx.Client(transport=transport, **http),
        )
    return AsyncClient(
        api_key="sk-test",
        base_url="https://gateway.test/v1",
        max_retries=0,
        http_client=httpx.AsyncClient(transport=transport, **http),
    )


def pairs(request: httpx.Request) -> list[tuple[str, str]]:
    return [(name.lower(), value) for name, value in request.headers.multi_items()]


async def test_headers_are_merged_as_httpx_merges_them(kind: str) -> None:
    sent: list[httpx.Request] = []
    client = recording_client(
        kind, sent, headers={"X-Team": "search", "user-agent": "theirs", "Accept": "*/*"}
    )
    await resolve(
        client.chat.completions.create(
            model="gpt-4o",
            messages=HELLO,
            extra_headers={"USER-AGENT": "mine", "X-Trace": "t1"},
            idempotency_key="key-1",
        )
    )
    await resolve(client.close())
    [request] = sent
    expected = httpx.Client(
        headers={"X-Team": "search", "user-agent": "theirs", "Accept": "*/*"}
    ).build_request(
        "POST",
        "https://gateway.test/v1/chat/completions",
        headers={
            "Authorization": "Bearer sk-test",
            "Accept": "application/json",
            "Accept-Encoding": accept_encoding(),
            "Content-Type": "application/json",
            "Idempotency-Key": "key-1",
            "USER-AGENT": "mine",
            "X-Trace": "t1",
        },
        content=request.content,
    )
    assert pairs(request) == pairs(expected)
    # the call's, over the client's, over theirs, whatever the case: never sent twice
    assert request.headers.get_list("user-agent") == ["mine"]
    assert request.headers.get_list("accept") == ["application/json"]
    assert request.headers["x-team"] == "search"  # the http client's own are kept
    assert json.loads(request.content)["messages"] == HELLO


async def test_default_headers_replace_the_clients_own_whatever_their_case() -> None:
    sent: list[httpx.Request] = []
    client = recording_client("sync", sent)
    custom = client.with_options(default_headers={"user-agent": "app/2", "X-Team": "a"})
    await resolve(custom.chat.completions.create(model="gpt-4o", messages=HELLO))
    [request] = sent
    assert request.headers.get_list("user-agent") == ["app/2"]
    assert request.headers["x-team"] == "a"
    assert f"aigateway-python/{aigateway.__version__}" not in str(request.headers)


async def test_a_stream_asks_for_events_and_keeps_its_read_limit(kind: str) -> None:
    sent: list[httpx.Request] = []
    client = recording_client(kind, sent)
    stream = await resolve(
        client.chat.completions.create(model="gpt-4o", messages=HELLO, stream=True)
    )
    await resolve(stream.close())
    await resolve(client.close())
    request = sent[0]
    assert request.headers.get_list("accept") == ["text/event-stream"]
    assert request.extensions["timeout"]["read"] is not None


async def test_an_http_clients_cookies_and_query_parameters_still_go_out(kind: str) -> None:
    sent: list[httpx.Request] = []
    client = recording_client(kind, sent, cookies={"session": "s1"}, params={"team": "search"})
    await resolve(client.chat.completions.create(model="gpt-4o", messages=HELLO, timeout=7))
    await resolve(client.close())
    [request] = sent
    assert request.headers["cookie"] == "session=s1"
    assert request.url.params["team"] == "search"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.extensions["timeout"] == httpx.Timeout(7).as_dict()


async def test_the_timeout_option_reaches_the_request(kind: str) -> None:
    sent: list[httpx.Request] = []
    client = recording_client(kind, sent)
    await resolve(client.chat.completions.create(model="gpt-4o", messages=HELLO, timeout=3.5))
    await resolve(client.chat.completions.create(model="gpt-4o", messages=HELLO))
    await resolve(client.close())
    assert sent[0].extensions["timeout"] == httpx.Timeout(3.5).as_dict()
    assert sent[1].extensions["timeout"] == DEFAULT_TIMEOUT.as_dict()
