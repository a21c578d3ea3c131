"""The official ``openai`` SDK (3.x, on httpx2) against the mock in-process, no port:
`gateway.openai_client()`, `gateway.async_openai_client()` and the pytest plugin's fixtures;
chat, streams, tools, ``parse``, errors, retries, a dropped connection and a timeout, sync
and async. openai sleeps on the wall clock between retries: injected failures carry a tiny
``retry_after``, so nothing here waits more than a few milliseconds."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2
import pytest
from pydantic import BaseModel

from aigateway.testing import MockGateway

openai = pytest.importorskip("openai", minversion="3.0")

pytest_plugins = ["pytester"]

KINDS = ["sync", "async"]
MESSAGES = [{"role": "user", "content": "Hello there"}]
ADD = {
    "type": "function",
    "function": {
        "name": "add",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
}


class Answer(BaseModel):
    city: str
    population: int


Make = Callable[..., Any]


@pytest.fixture(params=KINDS)
async def make(request: pytest.FixtureRequest, gateway: MockGateway) -> AsyncIterator[Make]:
    """Makes SDK clients of the test's kind (``openai.OpenAI`` or ``openai.AsyncOpenAI``) wired
    to ``gateway``, closed after the test."""
    made: list[Any] = []

    def make(**options: Any) -> Any:
        factory = gateway.openai_client if request.param == "sync" else gateway.async_openai_client
        made.append(factory(**options))
        return made[-1]

    yield make
    for client in made:
        await done(client.close())


async def done(result: Any) -> Any:
    """``result``, awaited when the SDK client is async."""
    return await result if inspect.isawaitable(result) else result


async def collected(stream: Any) -> list[Any]:
    if hasattr(stream, "__aiter__"):
        return [chunk async for chunk in stream]
    return list(stream)


async def helper_final(completions: Any, **options: Any) -> tuple[list[str], Any]:
    """The text deltas and the final completion of the ``.stream()`` helper."""
    manager = completions.stream(**options)
    if hasattr(manager, "__aenter__"):
        async with manager as stream:
            events = [event async for event in stream]
            final = await stream.get_final_completion()
    else:
        with manager as stream:
            events = list(stream)
            final = stream.get_final_completion()
    return [event.delta for event in events if event.type == "content.delta"], final


@pytest.mark.anyio
async def test_chat_streams_and_the_stream_helpers_final_completion(make: Make) -> None:
    sdk = make(max_retries=0)
    whole = await done(sdk.chat.completions.create(model="gpt-4o", messages=MESSAGES))
    text = whole.choices[0].message.content
    assert text
    assert whole.usage.total_tokens == whole.usage.prompt_tokens + whole.usage.completion_tokens
    stream = await done(sdk.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True))
    chunks = await collected(stream)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == text
    deltas, final = await helper_final(sdk.chat.completions, model="gpt-4o", messages=MESSAGES)
    assert "".join(deltas) == text
    assert final.choices[0].message.content == text
    assert final.choices[0].finish_reason == "stop"


@pytest.mark.anyio
async def test_tool_calls_and_parse_with_a_pydantic_model(make: Make) -> None:
    sdk = make(max_retries=0)
    asked = [{"role": "user", "content": "What is 1 + 2?"}]
    reply = await done(sdk.chat.completions.create(model="gpt-4o", messages=asked, tools=[ADD]))
    (call,) = reply.choices[0].message.tool_calls
    assert call.function.name == "add"
    assert json.loads(call.function.arguments).keys() == {"a", "b"}
    parsed = await done(
        sdk.chat.completions.parse(model="gpt-4o", messages=MESSAGES, response_format=Answer)
    )
    answer = parsed.choices[0].message.parsed
    assert isinstance(answer, Answer)
    assert answer == Answer.model_validate_json(parsed.choices[0].message.content)


@pytest.mark.anyio
async def test_errors_are_the_sdks_classes(make: Make, gateway: MockGateway) -> None:
    sdk = make(max_retries=0)
    with pytest.raises(openai.AuthenticationError) as wrong_key:
        await done(make(api_key="sk-not-a-key", max_retries=0).models.list())
    assert wrong_key.value.status_code == 401
    with pytest.raises(openai.NotFoundError):
        await done(sdk.models.retrieve("gpt-5"))
    gateway.faults.fail(429, retry_after=0.001)
    with pytest.raises(openai.RateLimitError) as limited:
        await done(sdk.chat.completions.create(model="gpt-4o", messages=MESSAGES))
    assert limited.value.response.headers["retry-after"] == "0.001"
    gateway.set_credits(gateway.api_key, 0)
    with pytest.raises(openai.APIStatusError) as broke:
        await done(sdk.chat.completions.create(model="gpt-4o", messages=MESSAGES))
    assert broke.value.status_code == 402
    assert broke.value.body["code"] == "insufficient_credits"


@pytest.mark.anyio
async def test_retries_after_two_503s_without_sleeping(make: Make, gateway: MockGateway) -> None:
    sdk = make(max_retries=2)
    create = sdk.chat.completions.with_raw_response.create
    await done(create(model="gpt-4o", messages=MESSAGES))  # the SDK's first call imports a lot
    gateway.faults.fail(503, times=2, retry_after=0.001)
    start = time.monotonic()
    raw = await done(create(model="gpt-4o", messages=MESSAGES))
    assert time.monotonic() - start < 0.5  # openai's own backoff would take over a second
    assert raw.retries_taken == 2
    assert raw.http_response.status_code == 200
    assert raw.parse().choices[0].message.content
    assert gateway.faults.pending == []


@pytest.mark.anyio
async def test_a_dropped_connection_and_a_timeout(make: Make, gateway: MockGateway) -> None:
    sdk = make(max_retries=0)
    gateway.faults.drop()
    with pytest.raises(openai.APIConnectionError) as dropped:
        await done(sdk.models.list())
    assert type(dropped.value.__cause__) is httpx2.RemoteProtocolError
    start = gateway.clock.now()
    gateway.faults.latency(30.0, times=1)
    with pytest.raises(openai.APITimeoutError) as late:
        await done(sdk.with_options(timeout=2.0).models.list())
    assert type(late.value.__cause__) is httpx2.ReadTimeout
    assert gateway.clock.now() == start + 2.0  # mock time; nothing was slept


@pytest.mark.anyio
async def test_a_stream_cut_mid_way_and_a_malformed_chunk(make: Make, gateway: MockGateway) -> None:
    sdk = make(max_retries=0)
    gateway.faults.drop_mid_stream(after_events=2)
    cut = await done(sdk.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True))
    # openai before 3.5x hands a stream's read error on as it is; later ones wrap it
    with pytest.raises((httpx2.ReadError, openai.APIConnectionError)) as cut_off:
        await collected(cut)
    error = cut_off.value
    read_error = error.__cause__ if isinstance(error, openai.APIConnectionError) else error
    assert isinstance(read_error, httpx2.ReadError)
    gateway.faults.malformed_chunk(after_events=1)
    spoilt = await done(sdk.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True))
    with pytest.raises((json.JSONDecodeError, openai.APIError)):
        await collected(spoilt)


def test_options_go_to_the_sdk_and_its_http_client_is_the_mocks(gateway: MockGateway) -> None:
    with gateway.openai_client(max_retries=5, default_headers={"X-Team": "blue"}) as sdk:
        assert sdk.max_retries == 5
        assert str(sdk.base_url).rstrip("/") == gateway.base_url
        sdk.models.list()
    assert gateway.requests[-1].headers["x-team"] == "blue"
    with pytest.raises(TypeError, match=r"openai_client\(\) makes the SDK's http_client"):
        gateway.openai_client(http_client=httpx2.Client())


def test_without_openai_the_error_says_how_to_install_it() -> None:
    script = textwrap.dedent(
        """
        import sys
        sys.modules["openai"] = None  # as if it were not installed
        from aigateway.testing import MockGateway
        try:
            MockGateway().openai_client()
        except ImportError as exc:
            print(exc)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "need the official openai package" in done.stdout
    assert "python -m pip install openai" in done.stdout


# -- the pytest plugin's fixtures -----------------------------------------------------------


LOAD = ("-p", "no:aigateway", "-p", "_aigateway_pytest", "-p", "no:cacheprovider")


def test_the_plugins_openai_fixtures_are_wired_to_the_mock_and_closed(
    pytester: pytest.Pytester,
) -> None:
    # streams on asyncio: openai's async streams leave a generator of theirs for the collector,
    # which trio reports (with httpx2's own MockTransport too); plain calls on trio as well
    pytester.makeconftest(
        "import pytest\n\n@pytest.fixture\ndef anyio_backend():\n    return 'asyncio'\n"
    )
    pytester.makepyfile(
        test_inner=textwrap.dedent(
            """
            import pytest

            MESSAGES = [{"role": "user", "content": "hi"}]
            seen = []

            @pytest.mark.aigateway(credits=3, faults=[("fail", 503, {"retry_after": 0.001})])
            def test_sync(aigateway_openai, aigateway_mock):
                raw = aigateway_openai.chat.completions.with_raw_response.create(
                    model="gpt-4o", messages=MESSAGES
                )
                assert raw.retries_taken == 1
                assert aigateway_mock.credits() < 3
                seen.append(aigateway_openai)

            @pytest.mark.anyio
            async def test_async(aigateway_async_openai, aigateway_mock):
                stream = await aigateway_async_openai.chat.completions.create(
                    model="gpt-4o", messages=MESSAGES, stream=True
                )
                assert [chunk async for chunk in stream]
                assert len(aigateway_mock.requests) == 1  # a fresh gateway
                seen.append(aigateway_async_openai)

            @pytest.mark.anyio
            @pytest.mark.parametrize("anyio_backend", ["trio"])
            async def test_async_on_trio(aigateway_async_openai, aigateway_mock):
                reply = await aigateway_async_openai.chat.completions.create(
                    model="gpt-4o", messages=MESSAGES
                )
                assert reply.choices[0].message.content
                assert len(aigateway_mock.requests) == 1
                seen.append(aigateway_async_openai)

            def test_clients_were_closed():
                assert len(seen) == 3
                assert all(sdk.is_closed() for sdk in seen)
            """
        )
    )
    result = pytester.runpytest_inprocess(*LOAD)
    result.assert_outcomes(passed=4)
