"""The async client's own pool: chosen at the first request (aiohttp's on asyncio, httpx's on
trio), with the same behaviour on each: proxies and TLS from the environment, errors as our
typed errors; a given ``transport`` or ``http_client`` is used as it is."""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Iterator

import httpx
import pytest

from aigateway import APIConnectionError, APITimeoutError, AsyncClient, NotFoundError
from aigateway._http import async_pools as _transport
from aigateway._http.loops import current_loop
from aigateway.testing import MockGateway

pytestmark = pytest.mark.anyio
HELLO = [{"role": "user", "content": "Hello"}]


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[MockGateway, str]]:
    gateway = MockGateway(seed=2, rate_limits="unlimited", credits=1_000)
    with gateway.serve() as url:
        yield gateway, url


def own_pool(client: AsyncClient) -> _transport.AutoTransport:
    pool = client._pipeline.http_client._transport
    assert isinstance(pool, _transport.AutoTransport)
    return pool


def expected_backend(library: str) -> str:
    return _transport.backend_for(library)


def test_the_choice_by_async_library(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_transport, "ASYNCIO_BACKEND", None)
    assert _transport.backend_for("asyncio") == "aiohttp"
    assert _transport.backend_for("trio") == "httpx"
    monkeypatch.setattr(_transport.importlib.util, "find_spec", lambda name: None)
    assert _transport.backend_for("asyncio") == "httpx"  # aiohttp missing: httpx's pool


def test_made_outside_a_loop_the_pool_is_chosen_at_the_first_request(
    served: tuple[MockGateway, str], anyio_backend: str
) -> None:
    import anyio

    gateway, url = served
    client = AsyncClient(api_key=gateway.api_key, base_url=url, max_retries=0)
    assert own_pool(client).backend is None

    async def use() -> None:
        async with client:
            reply = await client.chat.completions.create(model="gpt-4o-mini", messages=HELLO)
            assert reply.text
            assert own_pool(client).backend == expected_backend(anyio_backend)

    anyio.run(use, backend=anyio_backend)


async def test_requests_and_streams_on_the_chosen_pool(
    served: tuple[MockGateway, str], anyio_backend: str
) -> None:
    gateway, url = served
    async with AsyncClient(api_key=gateway.api_key, base_url=url, max_retries=0) as client:
        whole = await client.chat.completions.create(model="gpt-4o-mini", messages=HELLO, seed=4)
        stream = await client.chat.completions.create(
            model="gpt-4o-mini", messages=HELLO, seed=4, stream=True
        )
        async with stream:
            text = "".join(
                [chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices]
            )
        assert text == whole.text
        assert own_pool(client).backend == expected_backend(anyio_backend)


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_httpx_pool_takes_many_requests_in_flight_without_queueing_them(
    served: tuple[MockGateway, str], anyio_backend: str
) -> None:
    """httpx's pool (trio's) allows 1,000 connections: with httpx's own 100, requests past
    that wait in a pool that rescans every connection for each of them."""
    gateway, url = served
    async with AsyncClient(api_key=gateway.api_key, base_url=url, max_retries=0) as client:
        await client.chat.completions.create(model="gpt-4o-mini", messages=HELLO)
        pool = own_pool(client)
        assert pool.backend == "httpx"
        inner = pool.pool._pool  # type: ignore[union-attr]
        assert inner._max_connections == 1000  # httpcore's pool
        assert inner._max_keepalive_connections == 100


async def test_a_given_transport_or_http_client_is_used_as_it_is(gateway: MockGateway) -> None:
    async with gateway.async_client() as client:  # the mock's in-process transport
        assert not isinstance(client._pipeline.http_client._transport, _transport.AutoTransport)
        assert await client.models.list()
    async with httpx.AsyncClient() as mine:
        client = AsyncClient(api_key="sk-x", base_url="http://gateway.test/v1", http_client=mine)
        assert client._pipeline.http_client is mine


async def test_proxies_from_the_environment(
    served: tuple[MockGateway, str], monkeypatch: pytest.MonkeyPatch, anyio_backend: str
) -> None:
    """HTTP_PROXY is followed (the served mock, as the proxy, receives the absolute URL of a host
    that does not resolve, and answers it has no such route), and NO_PROXY is honoured."""
    gateway, url = served
    monkeypatch.setenv("HTTP_PROXY", url.removesuffix("/v1"))
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    unresolvable = "http://gateway.invalid/v1"
    async with AsyncClient(api_key=gateway.api_key, base_url=unresolvable, max_retries=0) as client:
        with pytest.raises(NotFoundError, match=r"no route for GET http://gateway\.invalid/v1/"):
            await client.models.list()
    monkeypatch.setenv("NO_PROXY", "gateway.invalid")
    async with AsyncClient(api_key=gateway.api_key, base_url=unresolvable, max_retries=0) as client:
        with pytest.raises(APIConnectionError):
            await client.models.list()


async def test_tls_is_verified_by_default(anyio_backend: str) -> None:
    client = AsyncClient(api_key="sk-x", base_url="https://gateway.test/v1")
    made = own_pool(client)._open(current_loop())
    inner = made.pool
    context = getattr(inner, "ssl_context", None) or inner._pool._ssl_context  # type: ignore[attr-defined]
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname
    await made.keeper.aclose()
    await client.close()


@pytest.fixture
def hang_up_server() -> Iterator[str]:
    """A server that accepts each connection, reads the request and closes without replying."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.05)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.recv(65536)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    stop.set()
    thread.join()
    listener.close()


async def test_a_dropped_connection_is_a_connection_error_not_a_timeout(
    hang_up_server: str, anyio_backend: str
) -> None:
    async with AsyncClient(api_key="sk-x", base_url=hang_up_server, max_retries=0) as client:
        with pytest.raises(APIConnectionError) as caught:
            await client.models.list()
    assert not isinstance(caught.value, APITimeoutError)


async def test_a_refused_connection_is_a_connection_error(anyio_backend: str) -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]  # closed below: nothing listens there
    base_url = f"http://127.0.0.1:{port}/v1"
    async with AsyncClient(api_key="sk-x", base_url=base_url, max_retries=0) as client:
        with pytest.raises(APIConnectionError) as caught:
            await client.models.list()
    assert not isinstance(caught.value, APITimeoutError)


@pytest.mark.parametrize(
    ("raised", "reading", "expected"),
    [
        ("ConnectionTimeoutError", False, httpx.ConnectTimeout),
        ("SocketTimeoutError", True, httpx.ReadTimeout),
        ("ServerDisconnectedError", False, httpx.RemoteProtocolError),
        ("ClientPayloadError", True, httpx.RemoteProtocolError),
        ("ClientOSError", True, httpx.ReadError),
        ("ClientOSError", False, httpx.ConnectError),
    ],
)
def test_aiohttp_errors_become_httpx_errors_as_httpx_raises_them(
    raised: str, reading: bool, expected: type[Exception]
) -> None:
    """httpx-aiohttp maps every dropped connection to ConnectTimeout (a timeout to our
    classifier); ours maps each as httpx's own pool would raise it."""
    import aiohttp

    request = httpx.Request("GET", "http://gateway.test/v1/models")
    cause = getattr(aiohttp, raised)()
    mapped_by_them = httpx.ConnectTimeout("")
    mapped_by_them.__cause__ = cause
    for exc in (cause, mapped_by_them):
        error = _transport._as_httpx_error(exc, request, reading=reading)
        assert type(error) is expected
        assert error.request is request  # type: ignore[attr-defined]
    other = ValueError("not I/O")
    assert _transport._as_httpx_error(other, request) is other


async def test_cancelled_calls_leave_the_client_usable(
    served: tuple[MockGateway, str], anyio_backend: str
) -> None:
    import anyio

    gateway, url = served
    async with AsyncClient(api_key=gateway.api_key, base_url=url, max_retries=0) as client:
        for _ in range(3):  # cancelled inside a stream, after its first chunk
            with anyio.CancelScope() as scope:
                stream = await client.chat.completions.create(
                    model="gpt-4o-mini", messages=HELLO, stream=True
                )
                async with stream:
                    async for _ in stream:
                        scope.cancel()
                        await anyio.sleep(0)  # a checkpoint: the cancellation lands here
            assert scope.cancelled_caught
        async with anyio.create_task_group() as group:  # cancelled while the request is out
            group.start_soon(client.models.list)
            await anyio.sleep(0)
            group.cancel_scope.cancel()
        assert len(await client.models.list()) == 11
        assert own_pool(client).backend == expected_backend(anyio_backend)
