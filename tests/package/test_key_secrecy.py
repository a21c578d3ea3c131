"""The API key appears in no pickle, no traceback rendered with locals and no log line: after
real calls and real failures on a served mock, with the sync client and the async client on
each of its pools (httpx's and aiohttp's on asyncio, httpx's on trio).

The key lives only in the module constants: a test's own frame is the first of every rendered
traceback, so it must hold no copy of the key in a local."""

from __future__ import annotations

import logging
import pickle
import socket
import traceback
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pydantic
import pytest

from aigateway import (
    APIConnectionError,
    APIResponseValidationError,
    APITimeoutError,
    AsyncClient,
    AuthenticationError,
    BadRequestError,
    Client,
    ConflictError,
    IncompleteStreamError,
    InsufficientCreditsError,
    InternalServerError,
    InvalidRequestError,
    NotFoundError,
    RateLimitError,
    ServiceUnavailableError,
)
from aigateway._http import async_pools as _transport
from aigateway.testing import MockGateway

from ..conftest import resolve

pytestmark = pytest.mark.anyio

KEY = "sk-SECRECY-5ecret-key-7f3a"
POOR_KEY = "sk-SECRECY-poor-account-91c2"
UNKNOWN_KEY = "sk-SECRECY-unknown-3b8d"
SECRETS = {"KEY": KEY, "POOR_KEY": POOR_KEY, "UNKNOWN_KEY": UNKNOWN_KEY}
HELLO = [{"role": "user", "content": "Hello"}]
FLAVOURS = ["sync", "asyncio-httpx", "asyncio-aiohttp", "trio"]


@pytest.fixture(params=FLAVOURS)
def flavour(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The client and, for an async one, its pool: ``sync``, ``asyncio-httpx``,
    ``asyncio-aiohttp`` or ``trio`` (httpx's pool)."""
    name = str(request.param)
    if name.startswith("asyncio-"):
        monkeypatch.setattr(_transport, "ASYNCIO_BACKEND", name.removeprefix("asyncio-"))
    return name


@pytest.fixture
def anyio_backend(flavour: str) -> str:
    return "trio" if flavour == "trio" else "asyncio"


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[MockGateway, str]]:
    """A served mock with an account on KEY (ample credits) and one on POOR_KEY (none)."""
    gateway = MockGateway(seed=5, rate_limits="unlimited")
    gateway.ledger.create_account(1_000, key=KEY)
    gateway.ledger.create_account(0, key=POOR_KEY)
    with gateway.serve() as url:
        yield gateway, url


@pytest.fixture
def gateway(served: tuple[MockGateway, str]) -> Iterator[MockGateway]:
    served[0].faults.clear()
    yield served[0]
    served[0].faults.clear()


@pytest.fixture
def url(served: tuple[MockGateway, str]) -> str:
    return served[1]


def new_client(flavour: str, url: str, api_key: str = KEY, **options: Any) -> Any:
    settings = {"api_key": api_key, "base_url": url, "max_retries": 0, **options}
    return Client(**settings) if flavour == "sync" else AsyncClient(**settings)


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def assert_secret_free(data: bytes | str, what: str) -> None:
    text = data.decode("latin-1") if isinstance(data, bytes) else data
    leaked = [name for name, key in SECRETS.items() if key in text]
    assert not leaked, f"{what} holds {leaked}"


def rendered(error: BaseException) -> str:
    """The traceback as ``--showlocals`` and rich print it: every frame's locals by repr."""
    exception = traceback.TracebackException.from_exception(error, capture_locals=True)
    return "".join(exception.format())


async def drain(stream: Any) -> list[Any]:
    """Every chunk of a sync or async stream."""
    if hasattr(stream, "__aiter__"):
        return [chunk async for chunk in stream]
    return list(stream)


async def read_all(stream: Any) -> list[Any]:
    """Every chunk of a stream, which is then closed."""
    try:
        return await drain(stream)
    finally:
        await resolve(stream.close())


# -- results pickle without the key; what holds a connection refuses, clearly ---------------


class Weather(pydantic.BaseModel):
    city: str


async def test_results_and_raw_replies_pickle_without_the_key(flavour: str, url: str) -> None:
    client = new_client(flavour, url)
    try:
        completions = client.chat.completions
        raw = await resolve(completions.with_raw_response.create(model="gpt-4o", messages=HELLO))
        stream = await resolve(completions.create(model="gpt-4o", messages=HELLO, stream=True))
        chunks = await read_all(stream)
        results: dict[str, Any] = {
            "completion": await resolve(completions.create(model="gpt-4o", messages=HELLO)),
            "raw": raw,
            "chunks": chunks,
            "parsed": await resolve(
                completions.parse(model="gpt-4o", messages=HELLO, response_format=Weather)
            ),
            "fallback": await resolve(
                completions.create(model="no-such", messages=HELLO, fallback_models=["gpt-4o"])
            ),
            "models": await resolve(client.models.list()),
            "model": await resolve(client.models.retrieve("gpt-4o")),
            "image": await resolve(
                client.images.generate(model="flux-schnell", prompt="a cat", size="64x64")
            ),
            "run": await resolve(client.run("tavily/search", {"query": "cats"})),
            "usage": client.usage,
            "rate_limit": client.last_rate_limit,
        }
    finally:
        await resolve(client.close())
    for name, result in results.items():
        data = pickle.dumps(result)
        assert_secret_free(data, name)
        assert type(pickle.loads(data)) is type(result)
    restored = pickle.loads(pickle.dumps(raw))
    assert restored.parse() == raw.parse()
    assert restored.status_code == 200
    assert restored.http_response.request.headers["authorization"] == "Bearer <redacted>"
    assert raw.http_response.request.headers["authorization"] == f"Bearer {KEY}"  # a copy only
    assert pickle.loads(pickle.dumps(results["usage"])).as_dict() == client.usage.as_dict()
    image = pickle.loads(pickle.dumps(results["image"]))
    assert image.model_dump() == results["image"].model_dump()
    with pytest.raises(TypeError, match="not bound to a client"):
        await resolve(image.read() if flavour == "sync" else image.aread())


async def test_what_holds_a_connection_refuses_to_be_pickled(flavour: str, url: str) -> None:
    client = new_client(flavour, url)
    try:
        completions = client.chat.completions
        stream = await resolve(completions.create(model="gpt-4o", messages=HELLO, stream=True))
        streamed = completions.with_streaming_response.create(model="gpt-4o", messages=HELLO)
        response = await resolve(streamed)
        holders = {"client": client, "stream": stream, "streamed response": response}
        for what, holder in holders.items():
            with pytest.raises(TypeError, match="cannot be pickled: it holds a connection") as e:
                pickle.dumps(holder)
            assert type(holder).__name__ in str(e.value), what
        await resolve(stream.close())
        await resolve(response.close())
        for holder in (client.config, client.config.api_key):
            with pytest.raises(TypeError, match="would write the API key in clear"):
                pickle.dumps(holder)
    finally:
        await resolve(client.close())


# -- errors after real failures: pickled and rendered with locals, without the key ---------


Failure = Callable[[Any, MockGateway], Awaitable[Any]]


async def refused(client: Any, gateway: MockGateway) -> Any:
    return await resolve(client.models.list())  # the client is on a closed port


def failing_with(code: int) -> Failure:
    async def fail(client: Any, gateway: MockGateway) -> Any:
        gateway.faults.fail(code)
        return await resolve(client.models.list())

    return fail


async def timed_out(client: Any, gateway: MockGateway) -> Any:
    gateway.faults.latency(0.5)
    return await resolve(client.with_options(timeout=0.05).models.list())


async def dropped(client: Any, gateway: MockGateway) -> Any:
    gateway.faults.drop()  # on a POST: aiohttp sends a GET again on a new connection itself
    return await resolve(client.chat.completions.create(model="gpt-4o", messages=HELLO))


async def cut_stream(client: Any, gateway: MockGateway) -> Any:
    gateway.faults.drop_mid_stream(after_events=2)
    stream = await resolve(
        client.chat.completions.create(model="gpt-4o", messages=HELLO, stream=True)
    )
    return await read_all(stream)


async def stalled_stream(client: Any, gateway: MockGateway) -> Any:
    gateway.faults.latency(0.5, between_chunks=True)
    stream = await resolve(
        client.chat.completions.create(
            model="gpt-4o", messages=HELLO, stream=True, stream_idle_timeout=0.05
        )
    )
    return await read_all(stream)


async def malformed(client: Any, gateway: MockGateway) -> Any:
    gateway.faults.malformed(b"<html>oops</html>")
    return await resolve(client.models.list())


async def unknown_model(client: Any, gateway: MockGateway) -> Any:
    return await resolve(client.models.retrieve("no-such-model"))


async def unknown_key(client: Any, gateway: MockGateway) -> Any:
    return await resolve(client.with_options(api_key=UNKNOWN_KEY).models.list())


async def no_credits(client: Any, gateway: MockGateway) -> Any:
    poor = client.with_options(api_key=POOR_KEY)
    return await resolve(poor.chat.completions.create(model="gpt-4o", messages=HELLO))


async def refused_body(client: Any, gateway: MockGateway) -> Any:
    extra = {"extra_body": {"temperature": "hot"}}
    return await resolve(client.chat.completions.create(model="gpt-4o", messages=HELLO, **extra))


async def reused_idempotency_key(client: Any, gateway: MockGateway) -> Any:
    key = {"idempotency_key": "secrecy-test-one-key"}
    await resolve(client.chat.completions.create(model="gpt-4o", messages=HELLO, **key))
    other = [{"role": "user", "content": "Something else"}]
    return await resolve(client.chat.completions.create(model="gpt-4o", messages=other, **key))


async def every_fallback_failed(client: Any, gateway: MockGateway) -> Any:
    create = client.chat.completions.create
    return await resolve(create(model="no-such", messages=HELLO, fallback_models=["nor-this"]))


async def rejected_arguments(client: Any, gateway: MockGateway) -> Any:
    return await resolve(client.chat.completions.create(model="gpt-4o", messages=HELLO, n=0))


FAILURES: dict[str, tuple[Failure, type[Exception]]] = {
    "connection refused": (refused, APIConnectionError),
    "500": (failing_with(500), InternalServerError),
    "503": (failing_with(503), ServiceUnavailableError),
    "429": (failing_with(429), RateLimitError),
    "timeout": (timed_out, APITimeoutError),
    "connection dropped": (dropped, APIConnectionError),
    "stream cut": (cut_stream, IncompleteStreamError),
    "stream stalled": (stalled_stream, APITimeoutError),
    "not JSON": (malformed, APIResponseValidationError),
    "404": (unknown_model, NotFoundError),
    "401": (unknown_key, AuthenticationError),
    "402": (no_credits, InsufficientCreditsError),
    "400": (refused_body, BadRequestError),
    "409": (reused_idempotency_key, ConflictError),
    "fallbacks": (every_fallback_failed, NotFoundError),
    "bad arguments": (rejected_arguments, InvalidRequestError),
}


@pytest.mark.parametrize("failure", FAILURES, ids=str)
async def test_errors_pickle_and_render_without_the_key(
    flavour: str, url: str, gateway: MockGateway, failure: str
) -> None:
    run, expected = FAILURES[failure]
    client = new_client(flavour, closed_port_url() if run is refused else url)
    try:
        with pytest.raises(expected) as caught:
            await run(client, gateway)
    finally:
        await resolve(client.close())
    assert_secret_free(pickle.dumps(caught.value), "the pickled error")
    restored = pickle.loads(pickle.dumps(caught.value))
    assert type(restored) is type(caught.value)
    assert str(restored) == str(caught.value)
    assert_secret_free(rendered(caught.value), "the traceback rendered with locals")


# -- WebSocket handshakes that fail ----------------------------------------------------------


def connect(client: Any) -> Any:
    return client.chat.completions.connect(model="gpt-4o", messages=HELLO)


async def open_and_read(client: Any) -> None:
    if isinstance(client, Client):
        with connect(client) as chat_socket:
            await drain(chat_socket)
    else:
        async with connect(client) as chat_socket:
            await drain(chat_socket)


@pytest.mark.parametrize("flavour", ["sync", "asyncio-httpx"], indirect=True)
@pytest.mark.parametrize("failure", ["refused", "unknown key"])
async def test_a_failed_handshake_renders_without_the_key(
    flavour: str, url: str, failure: str
) -> None:
    pytest.importorskip("websockets")
    if failure == "refused":
        client = new_client(flavour, closed_port_url())
    else:
        client = new_client(flavour, url, api_key=UNKNOWN_KEY)
    try:
        with pytest.raises((APIConnectionError, AuthenticationError)) as caught:
            await open_and_read(client)
    finally:
        await resolve(client.close())
    assert_secret_free(rendered(caught.value), "the traceback rendered with locals")
    assert_secret_free(pickle.dumps(caught.value), "the pickled error")


# -- no log line, of the SDK or the served mock, at any level --------------------------------

LOGGERS = ("", "aigateway", "httpx", "httpcore", "aiohttp", "asyncio", "uvicorn", "uvicorn.error")
LOGGERS += ("websockets", "websockets.client", "websockets.server")


@pytest.fixture
def everything_logged(
    caplog: pytest.LogCaptureFixture, served: tuple[MockGateway, str]
) -> pytest.LogCaptureFixture:
    """Every logger at DEBUG, set once the server runs (uvicorn sets its own level then)."""
    for name in LOGGERS:
        caplog.set_level(logging.DEBUG, logger=name or None)
    return caplog


async def test_no_log_line_holds_a_key(
    flavour: str, url: str, gateway: MockGateway, everything_logged: pytest.LogCaptureFixture
) -> None:
    client = new_client(flavour, url)
    try:
        completions = client.chat.completions
        await resolve(completions.create(model="gpt-4o", messages=HELLO))
        stream = await resolve(completions.create(model="gpt-4o", messages=HELLO, stream=True))
        await read_all(stream)
        with pytest.raises(NotFoundError):
            await resolve(client.models.retrieve("no-such-model"))
        with pytest.raises(AuthenticationError):
            await resolve(client.with_options(api_key=UNKNOWN_KEY).models.list())
        if flavour in ("sync", "asyncio-httpx"):  # WebSockets: the handshake carries the key
            pytest.importorskip("websockets")
            await open_and_read(client)
            with pytest.raises(AuthenticationError):
                await open_and_read(client.with_options(api_key=UNKNOWN_KEY))
    finally:
        await resolve(client.close())
    assert any(record.name == "aigateway" for record in everything_logged.records)
    if flavour in ("sync", "asyncio-httpx"):
        assert any(line.startswith("< sec-websocket-protocol") for line in lines(everything_logged))
    assert_secret_free("\n".join(lines(everything_logged)), "the log")
    assert_secret_free(everything_logged.text, "the formatted log")


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records]
