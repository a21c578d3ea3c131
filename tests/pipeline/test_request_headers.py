"""The headers a request goes out with: the http client's own, the client's on top, the call's
on top of those (whatever their case), exactly as httpx would merge them; an http client's
cookies and query parameters still go out."""

from __future__ import annotations

import importlib
import importlib.util
import json
from typing import Any

import httpx
import pytest

import aigateway
from aigateway import AsyncClient, Client
from aigateway._call.call import APICall
from aigateway._call.settings import DEFAULT_TIMEOUT, ClientConfig, Secret, with_headers
from aigateway._http.body import accept_encoding
from aigateway._pipeline.request import RequestBuilder, client_headers

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


LIBRARIES = [
    "httpx",
    pytest.param(
        "httpx2",
        marks=pytest.mark.skipif(
            importlib.util.find_spec("httpx2") is None, reason="httpx2 is not installed"
        ),
    ),
]


@pytest.mark.parametrize("library", LIBRARIES)
@pytest.mark.parametrize(
    ("method", "payload", "extra"),
    [
        ("POST", {"model": "m"}, {}),
        ("POST", None, {}),  # no body: Content-Length: 0, as the libraries say
        ("GET", None, {}),  # no body, no Content-Length
        ("DELETE", None, {"X-Trace": "t"}),
        ("POST", {"model": "m"}, {"content-length": "999"}),  # theirs wins, not sent twice
        ("POST", {"model": "m"}, {"HOST": "other.test"}),  # theirs replaces the URL's
    ],
)
def test_a_request_carries_what_the_librarys_own_build_would(
    library: str, method: str, payload: dict[str, str] | None, extra: dict[str, str]
) -> None:
    http = importlib.import_module(library)
    http_client = http.Client(headers={"X-Team": "search"})
    config = ClientConfig(
        api_key=Secret("sk-test"),
        base_url=http.URL("https://gateway.test:8443/v1/"),
        timeout=http.Timeout(5),
    )
    builder = RequestBuilder(config, http_client)
    call: APICall[Any] = APICall(
        method, "things", bytes, payload=payload, options={"extra_headers": extra}
    )
    ours = builder.build(call)
    theirs = http_client.build_request(
        method,
        "https://gateway.test:8443/v1/things",
        headers=with_headers(
            {**client_headers(config), **({"Content-Type": "application/json"} if payload else {})},
            extra,
        ),
        content=call.body,
    )
    assert type(ours) is http.Request
    assert ours.headers.raw == theirs.headers.raw
    assert ours.content == theirs.content == (call.body or b"")  # read, as a given body is
    assert ours.headers.get_list("host") == [extra.get("HOST", "gateway.test:8443")]


@pytest.mark.parametrize("library", LIBRARIES)
async def test_an_event_hook_reads_the_requests_body(kind: str, library: str) -> None:
    http = importlib.import_module(library)
    seen: list[bytes] = []
    reply = http.Response(200, json=CHAT_REPLY)
    if kind == "sync":
        client: Client | AsyncClient = Client(
            api_key="sk-test",
            base_url="https://gateway.test/v1",
            http_client=http.Client(
                transport=http.MockTransport(lambda request: reply),
                event_hooks={"request": [lambda request: seen.append(request.content)]},
            ),
        )
    else:

        async def hook(request: Any) -> None:
            seen.append(request.content)

        async def handler(request: Any) -> Any:
            return reply

        client = AsyncClient(
            api_key="sk-test",
            base_url="https://gateway.test/v1",
            http_client=http.AsyncClient(
                transport=http.MockTransport(handler), event_hooks={"request": [hook]}
            ),
        )
    await resolve(client.chat.completions.create(model="gpt-4o", messages=HELLO))
    await resolve(client.close())
    assert [json.loads(body)["messages"] for body in seen] == [HELLO]


def test_a_transfer_encoding_given_means_no_content_length() -> None:
    config = ClientConfig(api_key=Secret("sk-test"), base_url=httpx.URL("https://gateway.test/v1/"))
    builder = RequestBuilder(config, httpx.Client())
    call: APICall[Any] = APICall(
        "POST",
        "things",
        bytes,
        payload={},
        options={"extra_headers": {"Transfer-Encoding": "chunked"}},
    )
    request = builder.build(call)
    assert "content-length" not in request.headers
    assert request.headers["transfer-encoding"] == "chunked"
