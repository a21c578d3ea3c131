"""The pools a client makes itself, on either HTTP stack (``AIGATEWAY_HTTP_STACK=httpx2`` puts
them on httpx2): the sync transport whose reads end at the call's deadline, the async pool per
event loop (httpx-aiohttp's transport for the stack on asyncio, the stack's own on trio), the
environment's proxies mounted as the stack would, on a real socket (the served mock, tiny
servers on 127.0.0.1)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from aigateway import (
    APIConnectionError,
    APITimeoutError,
    AsyncClient,
    Client,
    ConfigurationError,
    NotFoundError,
)
from aigateway._http import async_pools
from aigateway._http.clients import environment_proxies
from aigateway._http.loops import current_loop
from aigateway._http.sync_transport import DeadlineTransport
from aigateway._stacks import STACK_ENV, Stack, get, stack_of
from aigateway.testing import MockGateway

from .._local_servers import running
from ..conftest import resolve
from .test_stacks import run_python

pytestmark = pytest.mark.anyio
HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[MockGateway, str]]:
    gateway = MockGateway(seed=2, rate_limits="unlimited", credits=1_000)
    with gateway.serve() as url:
        yield gateway, url


@pytest.fixture(params=["httpx", "httpx2"])
def stack(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Stack:
    """The stack of the clients' own pools, by the environment (as users switch it)."""
    monkeypatch.setenv(STACK_ENV, request.param)
    return get(request.param)


def own_client(kind: str, base_url: str, api_key: str = "sk-x", **options: Any) -> Any:
    client_type: Any = Client if kind == "sync" else AsyncClient
    return client_type(api_key=api_key, base_url=base_url, max_retries=0, **options)


async def test_calls_and_streams_on_the_own_pool_of_either_stack(
    served: tuple[MockGateway, str], stack: Stack, kind: str, anyio_backend: str
) -> None:
    gateway, url = served
    client = own_client(kind, url, gateway.api_key)
    http = client._pipeline.http_client
    assert stack_of(http) is stack
    whole = await resolve(client.chat.completions.create(model="gpt-4o-mini", messages=HELLO))
    stream = await resolve(
        client.chat.completions.create(model="gpt-4o-mini", messages=HELLO, stream=True)
    )
    if kind == "sync":
        with stream:
            text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        pool = http._transport
        assert isinstance(pool, DeadlineTransport)
        assert isinstance(pool, stack.BaseTransport)
    else:
        async with stream:
            text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
        pool = http._transport
        assert isinstance(pool, async_pools.AutoTransport)
        expected = async_pools.backend_for(anyio_backend, stack)
        assert pool.backend == expected
        assert isinstance(pool.pool, stack.AsyncBaseTransport)
        if expected == "aiohttp":
            assert isinstance(pool.pool, stack.aiohttp_transport())
    await resolve(client.close())
    assert text == whole.text


def test_on_asyncio_the_async_pool_is_httpx_aiohttps_for_the_stack(stack: Stack) -> None:
    import asyncio

    async def made() -> Any:
        client = AsyncClient(api_key="sk-x", base_url="https://gateway.test/v1")
        loop_pool = client._pipeline.http_client._transport._open(current_loop())
        await loop_pool.keeper.aclose()
        await client.close()
        return loop_pool.pool

    if async_pools.ASYNCIO_BACKEND == "httpx":
        pytest.skip("the async tests run on the stack's own pool (AIGATEWAY_TEST_TRANSPORT)")
    pool = asyncio.run(made())
    module = "httpx_aiohttp.transport" if stack.name == "httpx" else "httpx_aiohttp.httpx2"
    assert isinstance(pool, stack.aiohttp_transport())
    assert stack.aiohttp_transport().__module__.startswith(module)
    assert isinstance(pool, stack.AsyncBaseTransport)


class Handler(BaseHTTPRequestHandler):
    """Answers with ``behave(handler, stop)`` of its server."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.server.behave(self, self.server.stop)  # type: ignore[attr-defined]

    def log_message(self, *args: Any) -> None:
        pass


@contextlib.contextmanager
def serving(behave: Any) -> Iterator[str]:
    with ThreadingHTTPServer(("127.0.0.1", 0), Handler) as server, running(server):
        server.behave, server.stop = behave, threading.Event()  # type: ignore[attr-defined]
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/v1"
        finally:
            server.stop.set()  # type: ignore[attr-defined]


def drips_the_head(handler: BaseHTTPRequestHandler, stop: threading.Event) -> None:
    """The status line and headers one byte per tick: no read timeout ever fires."""
    for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}":
        if stop.wait(0.05):
            return
        handler.wfile.write(bytes([byte]))


def test_the_own_sync_transport_ends_a_dripping_head_at_the_deadline(stack: Stack) -> None:
    with serving(drips_the_head) as url, own_client("sync", url, deadline=0.4) as client:
        started = time.monotonic()
        with pytest.raises(APITimeoutError) as caught:
            client.chat.completions.create(model="gpt-4o", messages=HELLO)
        elapsed = time.monotonic() - started
    assert caught.value.limit_name == "deadline"
    assert 0.3 <= elapsed < 1.5  # the head would take 4 s
    last_attempt = caught.value.__cause__
    assert isinstance(last_attempt, APITimeoutError)
    assert isinstance(last_attempt.__cause__, stack.errors.timeout)  # the stack's own


def never_answers(handler: BaseHTTPRequestHandler, stop: threading.Event) -> None:
    stop.wait()


async def test_a_silent_server_is_our_timeout_error(stack: Stack, kind: str) -> None:
    with serving(never_answers) as url:
        client = own_client(kind, url, timeout=0.2)
        with pytest.raises(APITimeoutError) as caught:
            await resolve(client.chat.completions.create(model="gpt-4o", messages=HELLO))
        await resolve(client.close())
    assert caught.value.limit_name == "timeout"
    assert isinstance(caught.value.__cause__, stack.errors.timeout)


async def test_a_refused_connection_is_our_connection_error(stack: Stack, kind: str) -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]  # closed below: nothing listens there
    client = own_client(kind, f"http://127.0.0.1:{port}/v1")
    with pytest.raises(APIConnectionError) as caught:
        await resolve(client.models.list())
    await resolve(client.close())
    assert not isinstance(caught.value, APITimeoutError)
    assert isinstance(caught.value.__cause__, stack.errors.transport)


async def test_proxies_from_the_environment_on_either_stack(
    served: tuple[MockGateway, str], stack: Stack, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HTTP_PROXY is followed (the served mock, as the proxy, gets the absolute URL of a host
    that does not resolve and answers it has no such route) and NO_PROXY honoured, though the
    own client is given its pool as ``transport=`` (which makes the stack read none)."""
    gateway, url = served
    monkeypatch.setenv("HTTP_PROXY", url.removesuffix("/v1"))
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    client = own_client(kind, "http://gateway.invalid/v1", gateway.api_key)
    with pytest.raises(NotFoundError, match=r"no route for GET http://gateway\.invalid/v1/"):
        await resolve(client.models.list())
    await resolve(client.close())
    monkeypatch.setenv("NO_PROXY", "gateway.invalid")
    client = own_client(kind, "http://gateway.invalid/v1", gateway.api_key)
    with pytest.raises(APIConnectionError):
        await resolve(client.models.list())
    await resolve(client.close())


ENVIRONMENTS = [
    {},
    {"HTTP_PROXY": "proxy.test:3128"},
    {"HTTPS_PROXY": "http://p.test:1", "ALL_PROXY": "socks5://s.test:2"},
    {"HTTP_PROXY": "http://p.test:1", "NO_PROXY": "*"},
    {"HTTP_PROXY": "http://p.test:1", "NO_PROXY": "example.com, .example.org,localhost"},
    {"NO_PROXY": "127.0.0.1,10.0.0.0/8,::1,http://direct.test"},
]
"""Environments both libraries read alike."""


@pytest.mark.parametrize("environment", ENVIRONMENTS)
def test_the_environments_proxies_are_read_as_the_stacks_read_them(
    environment: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from httpx._utils import get_environment_proxies as httpx_reads  # private: a test only
    from httpx2._utils import get_environment_proxies as httpx2_reads

    for name in ("HTTP", "HTTPS", "ALL", "NO"):
        monkeypatch.delenv(f"{name}_PROXY", raising=False)
        monkeypatch.delenv(f"{name.lower()}_proxy", raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert environment_proxies(get("httpx")) == httpx_reads()
    assert environment_proxies(get("httpx2")) == httpx2_reads()


def test_no_proxy_entries_httpx_misreads_are_read_as_httpx2_reads_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """httpx 0.28 makes ``all://**.example.net`` of ``*.example.net`` and keeps an IPv6
    network whole in brackets; both stacks' own clients read them as httpx2 does."""
    from httpx2._utils import get_environment_proxies as httpx2_reads

    monkeypatch.setenv("NO_PROXY", "*.example.net,fe80::/10,[::2],foo/bar")
    monkeypatch.setenv("HTTP_PROXY", "http://p.test:1")
    expected = httpx2_reads()
    assert environment_proxies(get("httpx")) == environment_proxies(get("httpx2")) == expected
    assert "all://*.example.net" in expected
    assert "all://[fe80::]/10" in expected


def test_an_unknown_stack_in_the_environment_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(STACK_ENV, "requests")
    with pytest.raises(
        ConfigurationError, match=r"AIGATEWAY_HTTP_STACK='requests' .* httpx, httpx2"
    ):
        Client(api_key="sk-x", base_url="https://gateway.test/v1")


def test_a_given_client_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(STACK_ENV, "httpx2")
    with (
        httpx.Client() as mine,
        Client(api_key="k", base_url="https://g.test/v1", http_client=mine) as c,
    ):
        assert c._pipeline.http_client is mine
    transport = httpx.MockTransport(lambda request: httpx.Response(204))
    with Client(api_key="k", base_url="https://g.test/v1", transport=transport) as client:
        assert isinstance(client._pipeline.http_client, httpx.Client)  # the transport's stack


def test_credentials_reach_aiohttp_redacted_in_their_repr_on_either_stack(stack: Stack) -> None:
    """aiohttp copies the request's headers into its own strings: the key's must never show."""
    from aigateway._http.async_pools import CredentialHeaders

    headers_type = stack.subclass(CredentialHeaders, "Headers")
    headers = headers_type({"Authorization": "Bearer sk-secret", "Accept": "*/*"})
    assert isinstance(headers, stack.Headers)
    assert "sk-secret" not in repr(headers.items())
    assert dict(headers.items())["authorization"] == "Bearer sk-secret"


def test_httpx2_standing_in_for_httpx_is_one_stack_end_to_end() -> None:
    """After ``httpx2.alias_httpx()`` every ``import httpx`` is httpx2: the client's own pools,
    a given transport and the errors are httpx2's, sync and async."""
    script = """
        import asyncio, socket
        import httpx2
        httpx2.alias_httpx()
        import httpx
        import aigateway
        from aigateway._stacks import loaded
        assert [s.name for s in loaded()] == ["httpx2"]
        reply = {"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                 "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"},
                              "finish_reason": "stop"}]}
        transport = httpx.MockTransport(lambda request: httpx.Response(200, json=reply))
        with aigateway.Client(api_key="k", base_url="https://g.test/v1", transport=transport) as c:
            hello = [{"role": "user", "content": "hi"}]
            assert c.chat.completions.create(model="m", messages=hello).text == "hi"
        with socket.create_server(("127.0.0.1", 0)) as probe:
            port = probe.getsockname()[1]
        url = f"http://127.0.0.1:{port}/v1"
        with aigateway.Client(api_key="k", base_url=url, max_retries=0) as c:
            try:
                c.models.list()
            except aigateway.APIConnectionError as e:
                assert isinstance(e.__cause__, httpx2.ConnectError), repr(e.__cause__)
        async def main():
            async with aigateway.AsyncClient(api_key="k", base_url=url, max_retries=0) as c:
                try:
                    await c.models.list()
                except aigateway.APIConnectionError as e:
                    assert isinstance(e.__cause__, httpx2.ConnectError), repr(e.__cause__)
                assert type(c._pipeline.http_client) is httpx2.AsyncClient
        asyncio.run(main())
        print("ok")
    """
    assert run_python(script) == "ok"
