"""Whatever a server sends, a public call returns or raises an `AIGatewayError`, nothing else.

Property tests (hypothesis) serve arbitrary replies through ``httpx.MockTransport`` to the
public calls of both clients (statuses, headers, bodies; streams are in
``tests/streams/test_fuzz_streams.py``), and deterministic regression tests pin each escape found.
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from collections.abc import Callable
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from aigateway import (
    AIGatewayError,
    APIResponseValidationError,
    APIStatusError,
    AsyncClient,
    Client,
    InternalServerError,
    RetryPolicy,
)

from ..conftest import API_KEY, BASE_URL

pytestmark = pytest.mark.filterwarnings(
    # httpx's own inner generators, left unclosed when its decoder fails on a body that is not
    # the Content-Encoding it claims; trio's finalizer warns about them (asyncio's does not)
    "ignore:Exception ignored in. <async_generator object "
    "(Response.aiter_raw|BoundAsyncStream.__aiter__|ByteStream.__aiter__)"
    ":pytest.PytestUnraisableExceptionWarning"
)
HELLO = [{"role": "user", "content": "hi"}]
Handler = Callable[[httpx.Request], httpx.Response]
OPERATIONS = ("create", "stream", "helper", "models", "run")
KINDS = ("sync", "asyncio", "trio")
FUZZ = settings(
    max_examples=int(os.environ.get("AIGATEWAY_FUZZ_EXAMPLES", "40")),  # more for a deep run
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

COMPLETION = {
    "id": "c",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
    ],
}


async def _no_sleep(seconds: float) -> None:
    """Retries never sleep."""


def _policy() -> RetryPolicy:
    return RetryPolicy(sleep=lambda seconds: None, async_sleep=_no_sleep, random=lambda: 0.5)


def sync_call(handler: Handler, operation: str) -> object:
    """Run one public call of a `Client` served by ``handler``; its result."""
    transport = httpx.MockTransport(handler)
    options: dict[str, Any] = {"transport": transport, "retry_policy": _policy(), "max_retries": 1}
    with Client(api_key=API_KEY, base_url=BASE_URL, **options) as client:
        completions = client.chat.completions
        if operation == "create":
            return completions.create(model="m", messages=HELLO)
        if operation == "stream":
            with completions.create(model="m", messages=HELLO, stream=True) as stream:
                return list(stream)
        if operation == "helper":
            with completions.stream(model="m", messages=HELLO) as helper:
                return helper.get_final_completion()
        if operation == "models":
            return client.models.list()
        return client.run("svc", {"x": 1})


async def async_call(handler: Handler, operation: str) -> object:
    """`sync_call` for an `AsyncClient`."""
    transport = httpx.MockTransport(handler)
    options: dict[str, Any] = {"transport": transport, "retry_policy": _policy(), "max_retries": 1}
    async with AsyncClient(api_key=API_KEY, base_url=BASE_URL, **options) as client:
        completions = client.chat.completions
        if operation == "create":
            return await completions.create(model="m", messages=HELLO)
        if operation == "stream":
            async with await completions.create(model="m", messages=HELLO, stream=True) as stream:
                return [chunk async for chunk in stream]
        if operation == "helper":
            async with completions.stream(model="m", messages=HELLO) as helper:
                return await helper.get_final_completion()
        if operation == "models":
            return await client.models.list()
        return await client.run("svc", {"x": 1})


def call(kind: str, handler: Handler, operation: str) -> object:
    """One public call by a client of ``kind`` (sync, or async on asyncio or trio)."""
    if kind == "sync":
        return sync_call(handler, operation)
    return anyio.run(async_call, handler, operation, backend=kind)


def outcome(kind: str, handler: Handler, operation: str) -> object:
    """The result of a call, or the `AIGatewayError` it raised; anything else propagates."""
    try:
        return call(kind, handler, operation)
    except AIGatewayError as error:
        return error


def serve(status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> Handler:
    """A handler answering every request with this reply, its body streamed (unread)."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, headers=headers, stream=httpx.ByteStream(body))

    return handler


# What a server may send

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
error_fields = st.fixed_dictionaries(
    {},
    optional={
        "message": json_values,
        "code": json_values,
        "type": json_values,
        "param": json_values,
        "status": json_values | st.integers(-(10**30), 10**30),
    },
)
error_bodies = st.builds(lambda error: {"error": error}, error_fields | json_values)


def deep(opening: str, closing: str, depth: int) -> bytes:
    return (opening * depth + closing * depth).encode()


DEEP_BODIES = [
    deep("[", "]", 5000),
    deep('{"error": ', "}", 3000),
    deep('{"error": ', "}", 3000)[:-1],
    deep('{"error": {"message": ', "}}", 3000),
]
bodies = st.one_of(
    st.binary(max_size=200),
    json_values.map(lambda value: json.dumps(value).encode()),
    error_bodies.map(lambda value: json.dumps(value).encode()),
    st.sampled_from(DEEP_BODIES),
    st.just(json.dumps(COMPLETION).encode()),
    st.just(b'{"object": "list", "data": []}'),
)
numbers = st.sampled_from(
    ["inf", "-inf", "nan", "-1", "0", "1", "1e400", "9999999999999999999999", "", " ", "٣", "½"]
)
header_values = numbers | st.text(max_size=12)
content_types = st.sampled_from(
    [
        "application/json",
        "application/json; charset=nonsense",
        "text/html; charset=nonsense",
        "text/event-stream",
        "text/event-stream; charset=utf-16",
        "text/plain",
        "",
    ]
) | st.text(max_size=20)
encodings = st.sampled_from(["gzip", "deflate", "br", "zstd", "identity", "garbage", "gzip, br"])
HEADER_NAMES = (
    "X-RateLimit-Limit",
    "X-RateLimit-Remaining",
    "X-RateLimit-Reset",
    "Retry-After",
    "retry-after-ms",
    "x-should-retry",
    "Location",
    "x-request-id",
)


@st.composite
def replies(draw: st.DrawFn) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """A status, headers and a body: anything, with bias towards what the SDK reads."""
    status = draw(st.integers(100, 599) | st.sampled_from([200, 301, 302, 307, 400, 429, 503]))
    headers: list[tuple[bytes, bytes]] = []
    for name in draw(st.lists(st.sampled_from(HEADER_NAMES), unique=True, max_size=5)):
        headers.append((name.encode(), draw(header_values).encode()))
    if draw(st.booleans()):
        headers.append((b"content-type", draw(content_types).encode()))
    body = draw(bodies)
    if draw(st.booleans()):
        encoding = draw(encodings)
        headers.append((b"content-encoding", encoding.encode()))
        if draw(st.booleans()):
            body = _encode(encoding, body)
    return status, headers, body


def _encode(encoding: str, body: bytes) -> bytes:
    if encoding == "gzip":
        return gzip.compress(body)
    if encoding == "deflate":
        return zlib.compress(body)
    return body


# The properties


@FUZZ
@given(
    reply=replies(),
    operation=st.sampled_from(OPERATIONS),
    kind=st.sampled_from(KINDS),
)
@example(  # an unknown charset's codec failing (UTF-16 without a BOM) escaped as UnicodeError
    reply=(500, [(b"content-type", b"application/json; charset=utf-16")], b"\x00\x00"),
    operation="create",
    kind="sync",
)
def test_any_reply_gives_a_result_or_a_gateway_error(
    reply: tuple[int, list[tuple[bytes, bytes]], bytes], operation: str, kind: str
) -> None:
    """Any status, headers and body: a result or an `AIGatewayError`, never another error."""
    outcome(kind, serve(*reply), operation)


# Regressions, through the public calls of every kind of client


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def reply(status: int, body: bytes, **headers: str) -> Handler:
    return serve(
        status, [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()], body
    )


def raised(kind: str, handler: Handler, operation: str = "create") -> AIGatewayError:
    result = outcome(kind, handler, operation)
    assert isinstance(result, AIGatewayError), result
    return result


def test_an_unknown_charset_that_fails_to_decode_still_gives_the_status_error(kind: str) -> None:
    """A codec that raises (UTF-16 without a BOM) falls back to UTF-8 for the error text."""
    handler = reply(500, b"\x00\x00oops", content_type="application/json; charset=utf-16")
    error = raised(kind, handler)
    assert isinstance(error, InternalServerError)
    assert "oops" in error.text


def test_an_infinite_remaining_count_on_a_billed_reply_returns_the_reply(kind: str) -> None:
    """``X-RateLimit-Remaining: inf`` (and a reset of 1e400) is ignored, not raised on."""
    handler = reply(
        200,
        json.dumps(COMPLETION).encode(),
        content_type="application/json",
        X_RateLimit_Remaining="inf",
        X_RateLimit_Reset="1e400",
    )
    completion = call(kind, handler, "create")
    assert completion.choices[0].message.content == "hi"  # type: ignore[attr-defined]


def test_an_error_body_nested_very_deep_is_the_typed_status_error(kind: str) -> None:
    """A body nested 100000 deep is too deep to parse: still the status's error class."""
    body = deep('{"error": ', "}", 100_000)
    error = raised(kind, reply(500, body, content_type="application/json"))
    assert isinstance(error, InternalServerError)
    assert error.body is None


@pytest.mark.parametrize("operation", ["create", "stream"])
def test_a_body_that_is_not_its_content_encoding_is_a_validation_error(
    kind: str, operation: str
) -> None:
    """``Content-Encoding: gzip`` on bytes that are not gzip: a reply of the wrong shape."""
    body = b"data: " + json.dumps(COMPLETION).encode() + b"\n\n"
    handler = reply(200, body, content_type="text/event-stream", content_encoding="gzip")
    error = raised(kind, handler, operation)
    assert isinstance(error, APIResponseValidationError)
    assert "Content-Encoding" in str(error)


@pytest.mark.parametrize("status", [301, 302, 307])
def test_a_redirect_names_its_status_and_location(kind: str, status: int) -> None:
    """Redirects are not followed; the error says where the gateway pointed."""
    handler = reply(status, b"", location="https://elsewhere.test/v1/chat/completions")
    error = raised(kind, handler)
    assert isinstance(error, APIStatusError)
    assert error.status_code == status
    assert f"HTTP {status}" in str(error)
    assert "https://elsewhere.test/v1/chat/completions" in str(error)
