"""Clients on either HTTP stack: an httpx or an httpx2 client or transport given to `Client` or
`AsyncClient` behaves the same (replies, retries, timeouts, lost connections, streams, raw
replies, downloads), errors of either stack become ours alike, and what cannot work is refused
before anything is sent. Each test runs on both stacks, over the stack's own ``MockTransport``."""

from __future__ import annotations

import asyncio
import gzip
import json
import pickle
import re
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from aigateway import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    AsyncClient,
    Client,
    ConfigurationError,
    HTTPClientTypeError,
    NotFoundError,
    StreamConnectionError,
)
from aigateway._stacks import Stack, get, stack_of

from ..conftest import CHAT_REPLY, Sleeps, resolve
from ..streams.test_streaming import chunks_of as chunks

pytestmark = pytest.mark.anyio

BASE_URL = "https://gateway.test/v1"
HELLO = [{"role": "user", "content": "hello"}]
Handler = Callable[[Any], Any]


@pytest.fixture(params=["httpx", "httpx2"])
def stack(request: pytest.FixtureRequest) -> Stack:
    return get(request.param)


@pytest.fixture(params=["http_client", "transport"])
def via(request: pytest.FixtureRequest) -> str:
    """How the stack's object is handed to the client."""
    return str(request.param)


def make_client(
    kind: str, stack: Stack, handler: Handler, *, via: str = "transport", **options: Any
) -> Client | AsyncClient:
    """A client of ``kind`` whose requests ``handler`` answers, over ``stack``'s MockTransport,
    given as ``via`` (``http_client`` or ``transport``)."""
    transport = stack.module.MockTransport(handler)
    options = {"api_key": "sk-test", "base_url": BASE_URL, "max_retries": 0, **options}
    client_type: Any = Client if kind == "sync" else AsyncClient
    if via == "http_client":
        http_type = stack.Client if kind == "sync" else stack.AsyncClient
        return client_type(http_client=http_type(transport=transport), **options)  # type: ignore[no-any-return]
    return client_type(transport=transport, **options)  # type: ignore[no-any-return]


async def close(client: Client | AsyncClient) -> None:
    await resolve(client.close())
    http = client._pipeline.http_client
    if not client._owns_http_client:
        await resolve(http.aclose() if hasattr(http, "aclose") else http.close())


async def create(client: Client | AsyncClient, **options: Any) -> Any:
    return await resolve(client.chat.completions.create(model="gpt-4o", messages=HELLO, **options))


def sse(*contents: str) -> bytes:
    events = [
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt-4o",
            "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}],
        }
        for text in contents
    ]
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


# -- what reaches the gateway and what comes back ---------------------------------------------


async def test_a_client_or_transport_of_either_stack_carries_calls(
    kind: str, stack: Stack, via: str
) -> None:
    seen: list[Any] = []

    def handler(request: Any) -> Any:
        seen.append(request)
        return stack.Response(200, json=CHAT_REPLY)

    client = make_client(kind, stack, handler, via=via)
    assert stack_of(client._pipeline.http_client) is stack  # a transport's: a client of its stack
    assert isinstance(client.base_url, stack.URL)
    reply = await create(client, timeout=7.0)
    await close(client)
    assert reply.text == "hi"
    (request,) = seen
    assert isinstance(request, stack.Request)
    assert request.url == "https://gateway.test/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.extensions["timeout"] == {"connect": 7.0, "read": 7.0, "write": 7.0, "pool": 7.0}


async def test_timeouts_of_the_other_stack_are_rebuilt_for_the_client(
    kind: str, stack: Stack
) -> None:
    """One stack's Timeout given to the other's client would break it later (unhashable)."""
    other = get("httpx2" if stack.name == "httpx" else "httpx")
    seen: list[Any] = []

    def handler(request: Any) -> Any:
        seen.append(request.extensions["timeout"])
        return stack.Response(200, json=CHAT_REPLY, headers={"set-cookie": "lb=1"})

    client = make_client(kind, stack, handler, timeout=other.Timeout(9.0, connect=1.0))
    assert isinstance(client.config.timeout, stack.Timeout)
    await create(client)
    await create(client.with_options(timeout=other.Timeout(3.0)))
    await create(client, timeout=other.Timeout(2.0, read=4.0))  # with the cookie: build_request
    await close(client)
    assert [t["read"] for t in seen] == [9.0, 3.0, 4.0]
    assert seen[0]["connect"] == 1.0


async def test_retries_wait_and_try_again(kind: str, stack: Stack, sleeps: Sleeps) -> None:
    replies = iter(
        [
            stack.Response(503, json={"error": {"message": "busy"}}, headers={"retry-after": "2"}),
            stack.Response(200, json=CHAT_REPLY),
        ]
    )
    client = make_client(
        kind, stack, lambda request: next(replies), max_retries=2, retry_policy=sleeps.policy()
    )
    raw = await resolve(
        client.chat.completions.with_raw_response.create(model="gpt-4o", messages=HELLO)
    )
    await close(client)
    assert sleeps == [2.0]
    assert raw.attempts == 2


@pytest.mark.parametrize(
    ("raised", "ours"),
    [
        ("ReadTimeout", APITimeoutError),
        ("ConnectTimeout", APITimeoutError),
        ("ConnectError", APIConnectionError),
        ("RemoteProtocolError", APIConnectionError),
    ],
)
async def test_the_stacks_failures_become_our_errors_alike(
    kind: str, stack: Stack, raised: str, ours: type[APIError], sleeps: Sleeps
) -> None:
    calls: list[Any] = []

    def handler(request: Any) -> Any:
        calls.append(request)
        raise getattr(stack.module, raised)("it went wrong", request=request)

    client = make_client(kind, stack, handler, max_retries=1, retry_policy=sleeps.policy())
    with pytest.raises(ours) as caught:
        await create(client)
    await close(client)
    assert type(caught.value) is ours
    assert isinstance(caught.value.__cause__, getattr(stack.module, raised))
    assert len(calls) == 2  # retried, as a failure of the connection
    assert isinstance(caught.value.request, stack.Request)


async def test_a_status_error_carries_the_reply_and_its_decoded_body(
    kind: str, stack: Stack
) -> None:
    body = json.dumps({"error": {"message": "no such model", "type": "not_found_error"}}).encode()
    headers = {"content-encoding": "gzip", "x-request-id": "req-1"}

    def handler(request: Any) -> Any:
        return stack.Response(
            404, headers=headers, stream=stack.module.ByteStream(gzip.compress(body))
        )

    client = make_client(kind, stack, handler)
    with pytest.raises(NotFoundError, match="no such model") as caught:
        await create(client)
    await close(client)
    response = caught.value.response
    assert isinstance(response, stack.Response)
    assert response.content == body  # decoded by the client, a piece at a time
    assert response.headers["content-encoding"] == "gzip"  # as it came
    assert caught.value.request_id == "req-1"
    assert response.elapsed.total_seconds() >= 0
    copy = pickle.loads(pickle.dumps(caught.value))
    assert copy.response.content == body
    assert copy.request.headers["authorization"] == "Bearer <redacted>"


async def test_a_raw_reply_is_the_stacks_response_with_its_body(kind: str, stack: Stack) -> None:
    body = json.dumps(CHAT_REPLY).encode()

    def handler(request: Any) -> Any:
        return stack.Response(
            200,
            headers={"content-encoding": "gzip", "content-type": "application/json"},
            stream=stack.module.ByteStream(gzip.compress(body)),
        )

    client = make_client(kind, stack, handler)
    raw = await resolve(
        client.chat.completions.with_raw_response.create(model="gpt-4o", messages=HELLO)
    )
    await close(client)
    assert isinstance(raw.http_response, stack.Response)
    assert raw.http_response.json() == CHAT_REPLY
    assert raw.parse().text == "hi"
    assert raw.headers["content-type"] == "application/json"


async def test_downloads_on_either_stack(kind: str, stack: Stack, tmp_path: Any) -> None:
    seen: list[Any] = []

    def handler(request: Any) -> Any:
        seen.append(request)
        return stack.Response(200, content=b"\x89PNG-bytes")

    client = make_client(kind, stack, handler)
    data = await resolve(client.download("https://gateway.test/files/a.png"))
    other_host = await resolve(client.download("https://cdn.test/a.png"))
    await close(client)
    assert data == other_host == b"\x89PNG-bytes"
    assert "authorization" in seen[0].headers
    assert "authorization" not in seen[1].headers  # the key goes to the gateway only


# -- streams ----------------------------------------------------------------------------------


async def test_streams_on_either_stack(kind: str, stack: Stack) -> None:
    def handler(request: Any) -> Any:
        assert request.headers["accept"] == "text/event-stream"
        content = sse("Hel", "lo") + b"data: [DONE]\n\n"
        return stack.Response(200, headers={"content-type": "text/event-stream"}, content=content)

    client = make_client(kind, stack, handler)
    received = await chunks(await create(client, stream=True))
    await close(client)
    assert "".join(c.choices[0].delta.content for c in received) == "Hello"


def cut_body(stack: Stack, first: bytes) -> Any:
    """A body (sync and async) that gives ``first``, then loses its connection."""

    class Cut(stack.module.SyncByteStream, stack.module.AsyncByteStream):  # type: ignore[name-defined,misc]
        def __iter__(self) -> Iterator[bytes]:
            yield first
            raise stack.module.ReadError("connection reset")

        async def __aiter__(self) -> AsyncIterator[bytes]:
            yield first
            raise stack.module.ReadError("connection reset")

    return Cut()


async def test_a_stream_cut_midway_is_our_error(kind: str, stack: Stack) -> None:
    def handler(request: Any) -> Any:
        return stack.Response(
            200, headers={"content-type": "text/event-stream"}, stream=cut_body(stack, sse("Hel"))
        )

    client = make_client(kind, stack, handler)
    stream = await create(client, stream=True)
    with pytest.raises(StreamConnectionError) as caught:
        await chunks(stream)
    await close(client)
    assert caught.value.received == 1
    assert isinstance(caught.value.__cause__, stack.module.ReadError)


async def test_an_unread_reply_reads_and_fails_alike(kind: str, stack: Stack) -> None:
    """``with_streaming_response``: the body read by the caller, the stack's errors ours."""
    body = json.dumps(CHAT_REPLY).encode()
    replies = iter(
        [
            stack.Response(200, content=body),
            stack.Response(200, stream=cut_body(stack, b'{"id": ')),
        ]
    )
    client = make_client(kind, stack, lambda request: next(replies))
    view = client.chat.completions.with_streaming_response
    reply = await resolve(view.create(model="gpt-4o", messages=HELLO))
    assert isinstance(reply.http_response, stack.Response)
    assert (await resolve(reply.parse())).text == "hi"
    await resolve(reply.close())
    cut = await resolve(view.create(model="gpt-4o", messages=HELLO))
    with pytest.raises(APIConnectionError) as caught:
        await resolve(cut.read())
    await resolve(cut.close())
    await close(client)
    assert isinstance(caught.value.__cause__, stack.module.ReadError)


# -- refused before anything is sent ----------------------------------------------------------


class Session:
    """Not an HTTP client of either stack."""


def sync_and_async(stack: Stack) -> dict[str, dict[str, Any]]:
    """What each client takes of ``stack`` (http clients and transports), and what it does not."""
    return {
        "sync": {"http_client": stack.Client, "transport": stack.BaseTransport},
        "async": {"http_client": stack.AsyncClient, "transport": stack.AsyncBaseTransport},
    }


@pytest.mark.parametrize(
    ("kind", "via", "given", "expected"),
    [
        ("sync", "http_client", lambda s: Session(), r"got tests\..*Session$"),
        ("sync", "http_client", lambda s: s.AsyncClient(), r"got httpx2?\.AsyncClient \(an async"),
        ("async", "http_client", lambda s: s.Client(), r"got httpx2?\.Client \(a sync one: pass"),
        ("sync", "transport", lambda s: object(), r"got builtins\.object$"),
        ("sync", "transport", lambda s: s.module.AsyncHTTPTransport(), r"AsyncHTTPTransport \(an"),
        ("async", "transport", lambda s: s.module.HTTPTransport(), r"HTTPTransport \(a sync one"),
    ],
)
def test_what_neither_stack_offers_or_the_wrong_kind_is_refused(
    stack: Stack, kind: str, via: str, given: Callable[[Stack], Any], expected: str
) -> None:
    thing = given(stack)
    client_type: Any = Client if kind == "sync" else AsyncClient
    name = client_type.__name__
    prefix = "Async" if kind == "async" else ""
    wanted = name if via == "http_client" else f"{prefix}BaseTransport"
    with pytest.raises(HTTPClientTypeError) as caught:
        client_type(api_key="sk-test", base_url=BASE_URL, **{via: thing})
    message = str(caught.value)
    assert message.startswith(
        f"{via} must be an httpx.{wanted} or an httpx2.{wanted} for {name}, got "
    ), message
    assert re.search(expected, message), message
    assert isinstance(caught.value, TypeError)
    assert isinstance(caught.value, ConfigurationError)
    close_it = getattr(thing, "close", None)
    if close_it is not None and not asyncio.iscoroutinefunction(close_it):
        close_it()


async def test_a_closed_http_client_is_refused(kind: str, stack: Stack) -> None:
    calls: list[Any] = []
    transport = stack.module.MockTransport(lambda request: calls.append(request))
    if kind == "sync":
        http = stack.Client(transport=transport)
        http.close()
        with pytest.raises(ConfigurationError, match="http_client is closed"):
            Client(api_key="sk-test", base_url=BASE_URL, http_client=http)
    else:
        async_http = stack.AsyncClient(transport=transport)
        await async_http.aclose()
        with pytest.raises(ConfigurationError, match="http_client is closed"):
            AsyncClient(api_key="sk-test", base_url=BASE_URL, http_client=async_http)
    assert calls == []


async def test_a_client_closed_after_it_was_given_is_a_clear_error(kind: str, stack: Stack) -> None:
    client = make_client(
        kind, stack, lambda r: stack.Response(200, json=CHAT_REPLY), via="http_client"
    )
    await close(client)
    with pytest.raises(APIError, match="was not sent: the http client is closed"):
        await create(client)


def test_an_http_client_given_to_an_async_client_stays_in_its_event_loop(stack: Stack) -> None:
    """Its connections belong to one loop: a request from another is refused unsent."""
    sent: list[Any] = []

    def handler(request: Any) -> Any:
        sent.append(request)
        return stack.Response(200, json={"object": "list", "data": []})

    http = stack.AsyncClient(transport=stack.module.MockTransport(handler))
    client = AsyncClient(api_key="sk-test", base_url=BASE_URL, http_client=http)
    first, second = asyncio.new_event_loop(), asyncio.new_event_loop()
    try:
        first.run_until_complete(client.models.list())
        with pytest.raises(APIError, match="belong to another event loop") as caught:
            second.run_until_complete(client.models.list())
        assert "make it inside the loop that uses it" in str(caught.value)
        assert len(sent) == 1  # nothing went from the second loop
        first.run_until_complete(client.with_options(max_retries=0).models.list())
        assert len(sent) == 2  # a copy shares the client's loop
        first.run_until_complete(http.aclose())
    finally:
        for loop in (first, second):
            loop.close()


def test_both_given_at_once_is_refused(stack: Stack) -> None:
    with (
        stack.Client() as http,
        pytest.raises(ConfigurationError, match="pass http_client or transport, not both"),
    ):
        Client(
            api_key="sk-test",
            base_url=BASE_URL,
            http_client=http,
            transport=stack.module.MockTransport(lambda r: None),
        )
