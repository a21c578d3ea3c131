"""The whole-call deadline (``deadline=``): connecting, every attempt, every wait between
attempts and a stream's whole life, per client and per call; 600 s for a plain call and none
for a stream by default; ``stream_deadline`` as its deprecated name.

Misbehaving servers are real sockets on 127.0.0.1 (a deadline of half a second); retries,
waits and defaults run on a clock that only the client's waits move (a fake one, or the mock
gateway's), so nothing sleeps for real.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from aigateway import (
    APITimeoutError,
    AsyncClient,
    Client,
    ConfigurationError,
    InvalidRequestError,
    RateLimitError,
    RetryPolicy,
    ServiceUnavailableError,
    StreamTimeoutError,
)
from aigateway._call.timeouts import CLIP_SLACK, Deadline
from aigateway.testing import MockGateway

from .._local_servers import running
from ..conftest import API_KEY, BASE_URL, in_process_client, resolve
from ..streams.test_stream_failures import event
from ..streams.test_streaming import chunks_of as collect

HELLO = [{"role": "user", "content": "hi"}]
DEADLINE = 0.5
TICK = 0.1
"""How often the misbehaving servers send a byte: far below any read timeout."""


# -- misbehaving servers on a real socket ----------------------------------------------------


Behaviour = Callable[[BaseHTTPRequestHandler, threading.Event], None]


def never_answers(handler: BaseHTTPRequestHandler, stop: threading.Event) -> None:
    stop.wait()


def drips(handler: BaseHTTPRequestHandler, stop: threading.Event) -> None:
    """A JSON reply whose body comes one byte per tick: the read timeout never fires."""
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", "100000")
    handler.end_headers()
    while not stop.wait(TICK):
        handler.wfile.write(b" ")


def drips_everything(handler: BaseHTTPRequestHandler, stop: threading.Event) -> None:
    """The whole reply, status line and headers included, one byte per tick: the read timeout
    never fires, and no body piece comes for the deadline to be checked between."""
    reply = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
    for byte in reply:
        if stop.wait(TICK):
            return
        handler.wfile.write(bytes([byte]))


def keep_alives(first_event: bool) -> Behaviour:
    """An event stream of keep-alive comments only, after one event or none."""

    def behave(handler: BaseHTTPRequestHandler, stop: threading.Event) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Connection", "close")  # the body ends when the socket does
        handler.end_headers()
        if first_event:
            handler.wfile.write(event("hi"))
        while not stop.wait(TICK):
            handler.wfile.write(b": keep-alive\n\n")

    return behave


@contextlib.contextmanager
def serving(behave: Behaviour) -> Iterator[str]:
    """A server on 127.0.0.1 answering every chat request with ``behave``; its base URL."""
    stop = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.close_connection = True
            with contextlib.suppress(OSError):  # the client hung up
                behave(self, stop)

        def log_message(self, *args: Any) -> None:
            pass

    with ThreadingHTTPServer(("127.0.0.1", 0), Handler) as server, running(server):
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/v1"
        finally:
            stop.set()


MISBEHAVING = [
    pytest.param(never_answers, False, 0, id="accepts-and-never-answers"),
    pytest.param(drips, False, 0, id="a-byte-per-tick"),
    pytest.param(drips_everything, False, 0, id="head-and-all-a-byte-per-tick"),
    pytest.param(drips_everything, True, None, id="stream-head-a-byte-per-tick"),
    pytest.param(keep_alives(first_event=False), True, 0, id="keep-alives-only"),
    pytest.param(keep_alives(first_event=True), True, 1, id="an-event-then-keep-alives"),
]
"""Each server, whether the call streams, and the chunks it gets before the deadline (None:
the stream never opens, so the error is a plain call's)."""


def check_stopped_by_the_deadline(
    caught: pytest.ExceptionInfo[APITimeoutError],
    elapsed: float,
    stream: bool,
    received: int | None,
) -> None:
    error = caught.value
    assert (error.limit_name, error.limit) == ("deadline", DEADLINE)
    assert f"deadline of {DEADLINE:g} s (deadline)" in str(error)
    assert DEADLINE * 0.9 <= elapsed < DEADLINE + 1.5  # not a read timeout, not a retry
    if stream and received is not None:
        assert isinstance(error, StreamTimeoutError)
        assert error.received == received


def read_reply(client: Client, **options: Any) -> Any:
    """A chat call's reply, read to its end."""
    reply = client.chat.completions.create(model="m", messages=HELLO, **options)
    return list(reply) if options.get("stream") else reply


async def aread_reply(client: AsyncClient, **options: Any) -> Any:
    """`read_reply` for the async client."""
    reply = await client.chat.completions.create(model="m", messages=HELLO, **options)
    return await collect(reply) if options.get("stream") else reply


@pytest.mark.parametrize(("behave", "stream", "received"), MISBEHAVING)
def test_a_misbehaving_server_is_stopped_by_the_deadline(
    behave: Behaviour, stream: bool, received: int | None
) -> None:
    with serving(behave) as url, Client(api_key=API_KEY, base_url=url) as client:
        started = time.monotonic()
        with pytest.raises(APITimeoutError) as caught:
            read_reply(client, stream=stream, deadline=DEADLINE)
        elapsed = time.monotonic() - started
    check_stopped_by_the_deadline(caught, elapsed, stream, received)


@pytest.mark.anyio
@pytest.mark.parametrize(("behave", "stream", "received"), MISBEHAVING)
async def test_a_misbehaving_server_is_stopped_by_the_deadline_async(
    behave: Behaviour, stream: bool, received: int | None
) -> None:
    with serving(behave) as url:
        async with AsyncClient(api_key=API_KEY, base_url=url, deadline=DEADLINE) as client:
            started = time.monotonic()
            with pytest.raises(APITimeoutError) as caught:
                await aread_reply(client, stream=stream)
            elapsed = time.monotonic() - started
    check_stopped_by_the_deadline(caught, elapsed, stream, received)


# -- attempts and waits on a fake clock -------------------------------------------------------


class FakeTime:
    """A clock that only the client moves: a retry wait advances it instead of sleeping, and
    so does each request the fake server answers (``per_request`` seconds)."""

    def __init__(self, per_request: float = 0.0) -> None:
        self.now = 0.0
        self.per_request = per_request
        self.slept: list[float] = []
        self.timeouts: list[dict[str, float | None]] = []
        """The timeouts each request was sent with."""

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    async def async_sleep(self, seconds: float) -> None:
        self.sleep(seconds)

    def policy(self) -> RetryPolicy:
        return RetryPolicy(
            sleep=self.sleep,
            async_sleep=self.async_sleep,
            monotonic=lambda: self.now,
            random=lambda: 0.5,  # no jitter: backoff waits of 1 s, 2 s, 4 s ...
        )

    def transport(self, reply: httpx.Response) -> httpx.MockTransport:
        """A server that takes ``per_request`` seconds, then answers ``reply``."""

        def handle(request: httpx.Request) -> httpx.Response:
            self.timeouts.append(dict(request.extensions["timeout"]))
            self.now += self.per_request
            return httpx.Response(reply.status_code, headers=reply.headers, content=reply.content)

        return httpx.MockTransport(handle)


def fake_client(kind: str, clock: FakeTime, reply: httpx.Response, **options: Any) -> Any:
    client_type = Client if kind == "sync" else AsyncClient
    return client_type(
        api_key=API_KEY,
        base_url=BASE_URL,
        transport=clock.transport(reply),
        retry_policy=clock.policy(),
        **options,
    )


UNAVAILABLE = httpx.Response(503, json={"error": {"message": "busy", "type": "server_error"}})


@pytest.mark.anyio
async def test_a_retry_wait_that_would_pass_the_deadline_raises_at_once(kind: str) -> None:
    clock = FakeTime(per_request=0.4)
    client = fake_client(kind, clock, UNAVAILABLE, max_retries=5, deadline=2.5)
    with pytest.raises(APITimeoutError) as caught:
        await resolve(client.models.list())
    await resolve(client.close())
    # 0.4 s attempt, 1 s wait, 0.4 s attempt: the 2 s wait would end past 2.5 s
    assert clock.slept == [1.0]
    error = caught.value
    assert error.limit_name == "deadline"
    assert error.attempts == 2
    assert "would go over its deadline of 2.5 s (deadline)" in str(error)
    assert "waiting 2.00 s" in str(error)
    assert "busy" in str(error)  # the last attempt's failure, also the cause
    assert isinstance(error.__cause__, ServiceUnavailableError)


@pytest.mark.anyio
async def test_a_wait_the_server_asks_for_beyond_the_deadline_is_not_made(kind: str) -> None:
    clock = FakeTime()
    limited = httpx.Response(
        429,
        headers={"Retry-After": "30"},
        json={"error": {"message": "slow down", "type": "rate_limit_error"}},
    )
    client = fake_client(kind, clock, limited, deadline=10)
    with pytest.raises(APITimeoutError) as caught:
        await resolve(client.models.list())
    await resolve(client.close())
    assert clock.slept == []
    assert isinstance(caught.value.__cause__, RateLimitError)
    assert caught.value.__cause__.retry_after == 30


@pytest.mark.anyio
async def test_each_attempt_is_sent_with_its_timeouts_lowered_to_the_time_left(
    kind: str,
) -> None:
    clock = FakeTime(per_request=3.0)
    client = fake_client(kind, clock, UNAVAILABLE, max_retries=1, timeout=8.0, deadline=10)
    with pytest.raises(ServiceUnavailableError):
        await resolve(client.models.list())
    await resolve(client.close())
    # the first attempt keeps its 8 s; the second starts at 4 s (3 s attempt, 1 s wait)
    assert clock.timeouts[0] == httpx.Timeout(8.0).as_dict()
    assert clock.timeouts[1] == httpx.Timeout(6.0).as_dict()


def test_timeouts_are_lowered_only_when_they_outlast_the_time_left() -> None:
    now = [0.0]
    deadline = Deadline(10.0, lambda: now[0])
    timeouts: dict[str, float | None] = {"connect": 5.0, "read": 10.0, "write": 3.0, "pool": 1.0}
    assert deadline.clip(timeouts) is timeouts  # the read timeout is within the slack
    now[0] = 6.0
    assert deadline.clip(timeouts) == {"connect": 4.0, "read": 4.0, "write": 3.0, "pool": 1.0}
    assert deadline.clip({"read": None})["read"] == 4.0  # no timeout: the time left
    now[0] = 12.0
    read = deadline.clip(timeouts)["read"]
    assert read is not None
    assert 0 < read < 1e-3  # passed: the next wait fails at once
    assert deadline.passed()


def test_a_timeout_counts_as_the_deadline_only_when_it_has_run_out() -> None:
    now = [0.0]
    deadline = Deadline(10.0, lambda: now[0])
    now[0] = 10.0 - 2 * CLIP_SLACK
    assert not deadline.ran_out(httpx.ReadTimeout("timed out"))  # a retry still fits
    now[0] = 10.0 - CLIP_SLACK / 2
    assert deadline.ran_out(httpx.ReadTimeout("timed out"))
    assert deadline.ran_out(TimeoutError())
    assert not deadline.ran_out(httpx.ConnectError("refused"))  # the failure is the news


# -- against the mock gateway, on its clock ---------------------------------------------------


@pytest.fixture
def gateway() -> MockGateway:
    return MockGateway(seed=5)


@pytest.mark.anyio
async def test_a_slow_reply_is_cut_at_the_deadline_on_the_mock_clock(
    kind: str, gateway: MockGateway
) -> None:
    gateway.faults.latency(1000.0)
    async with in_process_client(kind, gateway) as client:
        start = gateway.clock.now()
        with pytest.raises(APITimeoutError, match=r"deadline of 30 s \(deadline\)") as caught:
            await resolve(client.models.list(deadline=30))
    assert caught.value.limit_name == "deadline"
    assert gateway.clock.now() - start == pytest.approx(30, abs=0.5)
    assert len(gateway.requests) == 1  # the deadline is never retried


@pytest.mark.anyio
async def test_a_plain_call_has_a_deadline_of_600_s_by_default(
    kind: str, gateway: MockGateway
) -> None:
    gateway.faults.latency(700.0)
    async with in_process_client(kind, gateway, timeout=1000.0) as client:
        assert client.config.deadline == 600
        start = gateway.clock.now()
        with pytest.raises(APITimeoutError, match=r"deadline of 600 s \(deadline\)"):
            await resolve(client.models.list())
        assert gateway.clock.now() - start == pytest.approx(600, abs=0.5)
        gateway.faults.clear()
        gateway.faults.latency(700.0, times=1)
        assert await resolve(client.models.list(deadline=None))  # no deadline at all


@pytest.mark.anyio
async def test_a_stream_has_no_deadline_by_default(kind: str, gateway: MockGateway) -> None:
    gateway.faults.latency(700.0)
    async with in_process_client(kind, gateway, timeout=1000.0, stream_idle_timeout=None) as client:
        stream = await resolve(
            client.chat.completions.create(model="gpt-4o", messages=HELLO, stream=True)
        )
        chunks = await collect(stream)
    assert chunks[-1].choices[0].finish_reason == "stop"


@pytest.mark.anyio
async def test_the_deadline_bounds_a_streams_whole_life(kind: str, gateway: MockGateway) -> None:
    gateway.faults.latency(2.0, between_chunks=True)
    async with in_process_client(kind, gateway, deadline=5) as client:
        stream = await resolve(
            client.chat.completions.create(model="gpt-4o", messages=HELLO, stream=True)
        )
        with pytest.raises(StreamTimeoutError, match=r"deadline of 5 s \(deadline\)") as caught:
            await collect(stream)
    assert caught.value.limit_name == "deadline"
    assert caught.value.received >= 1  # the stream was handed over before it ran out


@pytest.mark.anyio
async def test_no_fallback_model_is_tried_once_the_deadline_ran_out(
    kind: str, gateway: MockGateway
) -> None:
    gateway.faults.latency(1000.0)
    async with in_process_client(kind, gateway) as client:
        with pytest.raises(APITimeoutError) as caught:
            await resolve(
                client.chat.completions.create(
                    model="gpt-4o", messages=HELLO, fallback_models=["gpt-4o-mini"], deadline=30
                )
            )
    assert caught.value.limit_name == "deadline"
    assert len(gateway.requests) == 1


@pytest.mark.anyio
async def test_waiting_for_a_concurrency_slot_ends_at_the_deadline(
    kind: str, gateway: MockGateway
) -> None:
    async with in_process_client(kind, gateway, max_concurrency=1) as client:
        stream = await resolve(
            client.chat.completions.create(model="gpt-4o", messages=HELLO, stream=True)
        )  # holds the only slot until closed
        started = time.monotonic()
        with pytest.raises(APITimeoutError, match=r"deadline of 0.2 s") as caught:
            await resolve(client.models.list(deadline=0.2))
        assert 0.15 < time.monotonic() - started < 1.5
        await resolve(stream.close())
    assert caught.value.limit_name == "deadline"


# -- settings: checked, and the deprecated name -----------------------------------------------


NOT_SECONDS = [-1, 0, math.nan, True, "5"]


@pytest.mark.parametrize("value", NOT_SECONDS)
def test_a_client_deadline_that_is_not_seconds_is_refused(value: object) -> None:
    rule = r"deadline must be a number of seconds > 0 or None"
    with pytest.raises(ConfigurationError, match=rule):
        Client(api_key=API_KEY, base_url=BASE_URL, deadline=value)  # type: ignore[arg-type]
    with (
        Client(api_key=API_KEY, base_url=BASE_URL) as client,
        pytest.raises(ConfigurationError, match=rule),
    ):
        client.with_options(deadline=value)  # type: ignore[arg-type]


@pytest.mark.anyio
@pytest.mark.parametrize("value", NOT_SECONDS)
async def test_a_call_deadline_that_is_not_seconds_is_refused_before_sending(
    mock_client: Client | AsyncClient, gateway: MockGateway, value: object
) -> None:
    with pytest.raises(InvalidRequestError, match=r"deadline=.* must be a number of seconds > 0"):
        await resolve(mock_client.models.list(deadline=value))  # type: ignore[arg-type]
    assert gateway.requests == []


def test_deadline_sets_plain_calls_and_streams_alike() -> None:
    with Client(api_key=API_KEY, base_url=BASE_URL, deadline=42) as client:
        assert client.config.deadline == 42
        assert client.config.stream_timeouts.deadline == 42
        unbounded = client.with_options(deadline=None)
        assert unbounded.config.deadline is None
        assert unbounded.config.stream_timeouts.deadline is None
    with Client(api_key=API_KEY, base_url=BASE_URL) as client:
        assert client.config.deadline == 600
        assert client.config.stream_timeouts.deadline is None


def test_stream_deadline_warns_at_the_callers_line_and_bounds_streams_only(
    gateway: MockGateway,
) -> None:
    with pytest.warns(DeprecationWarning, match="stream_deadline is deprecated") as warned:
        client = gateway.client(stream_deadline=5, timeout=1000.0)
    assert warned[0].filename == __file__
    with client:
        assert client.config.deadline == 600  # plain calls keep theirs
        assert client.config.stream_timeouts.deadline == 5
        with pytest.warns(DeprecationWarning, match="use deadline="):
            copy = client.with_options(stream_deadline=7)
        assert copy.config.stream_timeouts.deadline == 7
        gateway.faults.latency(2.0, between_chunks=True)
        with pytest.raises(StreamTimeoutError, match=r"deadline of 5 s") as caught:
            list(client.chat.completions.create(model="gpt-4o", messages=HELLO, stream=True))
        assert caught.value.limit_name == "deadline"


@pytest.mark.anyio
async def test_stream_deadline_per_call_still_works_with_a_warning(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    gateway.faults.latency(2.0, between_chunks=True)
    with pytest.warns(DeprecationWarning, match="stream_deadline is deprecated") as warned:
        stream = await resolve(
            mock_client.chat.completions.create(
                model="gpt-4o", messages=HELLO, stream=True, stream_deadline=3
            )
        )
    # the calling line, or the awaiting one (in conftest's resolve) for the async client
    assert warned[0].filename in {__file__, resolve.__code__.co_filename}
    with pytest.raises(StreamTimeoutError, match=r"deadline of 3 s \(deadline\)"):
        await collect(stream)


@pytest.mark.anyio
async def test_deadline_and_stream_deadline_together_are_refused(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    with (
        pytest.warns(DeprecationWarning, match="stream_deadline"),
        pytest.raises(ConfigurationError, match="pass deadline= only"),
    ):
        Client(api_key=API_KEY, base_url=BASE_URL, deadline=5, stream_deadline=5)
    with (
        pytest.warns(DeprecationWarning, match="stream_deadline"),
        pytest.raises(InvalidRequestError, match="stream_deadline=5: is the deprecated name"),
    ):
        await resolve(
            mock_client.chat.completions.create(
                model="gpt-4o", messages=HELLO, stream=True, deadline=5, stream_deadline=5
            )
        )
    assert gateway.requests == []
