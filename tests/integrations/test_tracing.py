"""Opt-in OpenTelemetry tracing: a span per call with the GenAI attributes, attempts as events,
streams traced until they close, errors marked, the key nowhere; off by default."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from aigateway import (
    APIConnectionError,
    AsyncClient,
    AuthenticationError,
    Client,
    ConfigurationError,
    NotFoundError,
)
from aigateway.testing import MockGateway

from ..conftest import resolve

pytestmark = pytest.mark.anyio

HELLO = [{"role": "user", "content": "a secret question"}]


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    """A provider of this test's own (the global one is never set)."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider
    provider.shutdown()


def traced(
    gateway: MockGateway, kind: str, provider: TracerProvider, **options: Any
) -> Client | AsyncClient:
    if kind == "sync":
        return gateway.client(tracing=provider, **options)
    return gateway.async_client(tracing=provider, **options)


def only_span(exporter: InMemorySpanExporter) -> ReadableSpan:
    (span,) = exporter.get_finished_spans()
    return span


def attempts(span: ReadableSpan) -> list[dict[str, Any]]:
    return [
        dict(event.attributes or {}) for event in span.events if event.name == "aigateway.attempt"
    ]


async def chat(client: Client | AsyncClient, **params: Any) -> Any:
    params.setdefault("messages", HELLO)
    return await resolve(client.chat.completions.create(**params))


async def test_a_chat_call_is_one_client_span_with_the_genai_attributes(
    kind: str, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    gateway = MockGateway()
    client = traced(gateway, kind, provider)
    try:
        await chat(client, model="gpt-4o-mini")  # the first reply tells the balance
        exporter.clear()
        reply = await chat(client, model="gpt-4o-mini", temperature=0.5, top_p=0.9, max_tokens=20)
    finally:
        await resolve(client.close())
    span = only_span(exporter)
    assert span.name == "chat gpt-4o-mini"
    assert span.kind is SpanKind.CLIENT
    assert span.status.status_code is StatusCode.UNSET
    attributes = dict(span.attributes or {})
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == "aigateway"
    assert attributes["gen_ai.request.model"] == "gpt-4o-mini"
    assert attributes["gen_ai.request.temperature"] == 0.5
    assert attributes["gen_ai.request.top_p"] == 0.9
    assert attributes["gen_ai.request.max_tokens"] == 20
    assert attributes["gen_ai.response.model"] == reply.model
    assert attributes["gen_ai.response.id"] == reply.id
    assert attributes["gen_ai.response.finish_reasons"] == (reply.choices[0].finish_reason,)
    assert attributes["gen_ai.usage.input_tokens"] == reply.usage.prompt_tokens
    assert attributes["gen_ai.usage.output_tokens"] == reply.usage.completion_tokens
    assert attributes["server.address"] == client.base_url.host
    assert attributes["server.port"] == 80
    assert attributes["http.response.status_code"] == 200
    assert str(attributes["aigateway.request_id"]).startswith("req_")
    assert attributes["aigateway.attempts"] == 1
    assert attributes["aigateway.credits.remaining"] == reply.remaining_credits
    assert attributes["aigateway.credits.cost"] == pytest.approx(client.usage.credits)
    assert attributes["aigateway.credits.cost"] > 0
    assert attempts(span) == [{"aigateway.attempt.number": 1, "http.response.status_code": 200}]
    assert "error.type" not in attributes


async def test_a_retried_call_has_an_event_per_attempt_with_the_wait(
    kind: str, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    gateway = MockGateway()  # its client's retry sleeps move the mock clock: nothing sleeps
    gateway.faults.fail(503, times=2, retry_after=2, path="/chat/completions")
    client = traced(gateway, kind, provider)
    try:
        await chat(client, model="gpt-4o-mini")
    finally:
        await resolve(client.close())
    span = only_span(exporter)
    assert attempts(span) == [
        {
            "aigateway.attempt.number": 1,
            "http.response.status_code": 503,
            "error.type": "ServiceUnavailableError",
            "aigateway.attempt.wait": 2.0,
        },
        {
            "aigateway.attempt.number": 2,
            "http.response.status_code": 503,
            "error.type": "ServiceUnavailableError",
            "aigateway.attempt.wait": 2.0,
        },
        {"aigateway.attempt.number": 3, "http.response.status_code": 200},
    ]
    assert span.attributes is not None
    assert span.attributes["aigateway.attempts"] == 3
    assert span.attributes["http.response.status_code"] == 200
    assert span.status.status_code is StatusCode.UNSET


async def test_a_failed_call_marks_its_span_as_an_error(
    kind: str, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    gateway = MockGateway()
    client = traced(gateway, kind, provider, max_retries=0)
    try:
        with pytest.raises(NotFoundError):
            await chat(client, model="no-such-model")
        gateway.faults.drop(times=1)
        with pytest.raises(APIConnectionError):
            await chat(client, model="gpt-4o-mini")
    finally:
        await resolve(client.close())
    not_found, cut = exporter.get_finished_spans()
    assert not_found.name == "chat no-such-model"
    assert not_found.status.status_code is StatusCode.ERROR
    assert not_found.status.description is not None
    assert not_found.status.description.startswith("NotFoundError")
    assert not_found.attributes is not None
    assert not_found.attributes["error.type"] == "NotFoundError"
    assert not_found.attributes["http.response.status_code"] == 404
    assert cut.status.status_code is StatusCode.ERROR
    assert cut.attributes is not None
    assert cut.attributes["error.type"] == "APIConnectionError"
    assert "http.response.status_code" not in cut.attributes
    assert attempts(cut) == [{"aigateway.attempt.number": 1, "error.type": "APIConnectionError"}]


async def test_a_fallback_that_served_is_named(
    kind: str, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    gateway = MockGateway()
    client = traced(gateway, kind, provider)
    try:
        await chat(client, model="no-such-model", fallback_models=["gpt-4o-mini"])
    finally:
        await resolve(client.close())
    span = only_span(exporter)
    assert span.name == "chat no-such-model"
    assert span.attributes is not None
    assert span.attributes["aigateway.fallback.model"] == "gpt-4o-mini"
    assert span.attributes["gen_ai.response.model"] == "gpt-4o-mini"
    assert span.attributes["aigateway.attempts"] == 2
    assert [event.get("http.response.status_code") for event in attempts(span)] == [404, 200]


async def open_stream(client: Client | AsyncClient, **params: Any) -> Any:
    return await chat(client, model="gpt-4o-mini", stream=True, **params)


async def read_all(stream: Any) -> list[Any]:
    if hasattr(stream, "__aiter__"):
        return [chunk async for chunk in stream]
    return list(stream)


async def test_a_stream_span_ends_with_the_stream_and_has_its_first_chunk_time(
    kind: str, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    gateway = MockGateway(time_to_first_token=0.25)  # on the mock clock: nothing sleeps
    client = traced(gateway, kind, provider)
    try:
        stream = await open_stream(client, stream_options={"include_usage": True})
        assert exporter.get_finished_spans() == ()  # create() returned; the stream is open
        chunks = await read_all(stream)
    finally:
        await resolve(client.close())
    span = only_span(exporter)
    assert span.name == "chat gpt-4o-mini"
    attributes = dict(span.attributes or {})
    assert attributes["gen_ai.request.stream"] is True
    assert attributes["gen_ai.response.time_to_first_chunk"] == pytest.approx(0.25)
    assert attributes["aigateway.stream.chunks"] == len(chunks)
    assert attributes["aigateway.stream.completed"] is True
    assert attributes["gen_ai.response.id"] == chunks[0].id
    assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert attributes["gen_ai.usage.output_tokens"] == chunks[-1].usage.completion_tokens
    assert attempts(span) == [{"aigateway.attempt.number": 1, "http.response.status_code": 200}]


async def test_a_stream_closed_early_ends_its_span_at_the_close(
    kind: str, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    gateway = MockGateway()
    client = traced(gateway, kind, provider)
    try:
        stream = await open_stream(client, max_tokens=50)
        if isinstance(client, AsyncClient):
            await stream.__anext__()
            await stream.__anext__()
            assert exporter.get_finished_spans() == ()
            await stream.close()
        else:
            next(stream)
            next(stream)
            assert exporter.get_finished_spans() == ()
            stream.close()
    finally:
        await resolve(client.close())
    span = only_span(exporter)
    assert span.attributes is not None
    assert span.attributes["aigateway.stream.completed"] is False
    assert 2 <= int(str(span.attributes["aigateway.stream.chunks"])) < 50
    assert span.status.status_code is StatusCode.UNSET


async def test_service_and_image_calls_have_spans_with_their_cost(
    kind: str, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    gateway = MockGateway()
    client = traced(gateway, kind, provider)
    try:
        image = await resolve(client.images.generate(model="flux-schnell", prompt="a cat"))
        await resolve(client.run("tavily/search", {"query": "otel"}))
        await resolve(client.models.list())
    finally:
        await resolve(client.close())
    generated, searched, listed = exporter.get_finished_spans()
    assert generated.name == "generate_content flux-schnell"
    assert generated.attributes is not None
    assert generated.attributes["gen_ai.output.type"] == "image"
    assert generated.attributes["aigateway.credits.remaining"] == image.remaining_credits
    assert searched.name == "run tavily/search"
    assert searched.attributes is not None
    assert searched.attributes["aigateway.credits.cost"] == pytest.approx(0.005)
    assert listed.name == "models"


async def test_the_api_key_and_message_contents_appear_nowhere(
    kind: str, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    gateway = MockGateway()
    gateway.faults.fail(401, times=1, path="/chat/completions")
    client = traced(gateway, kind, provider, max_retries=1)
    try:
        with pytest.raises(AuthenticationError):
            await chat(client, model="gpt-4o-mini")
        await chat(client, model="gpt-4o-mini")
        await read_all(await open_stream(client))
        await resolve(client.run("tavily/search", {"query": "otel"}))
        with pytest.raises(NotFoundError):
            await chat(client, model="no-such-model")
    finally:
        await resolve(client.close())
    spans = exporter.get_finished_spans()
    assert len(spans) == 5
    texts: list[str] = []
    for span in spans:
        texts += [span.name, str(span.status.description)]
        texts += [f"{key}={value}" for key, value in (span.attributes or {}).items()]
        for event in span.events:
            texts += [event.name, *(f"{k}={v}" for k, v in (event.attributes or {}).items())]
    seen = "\n".join(texts)
    assert gateway.api_key not in seen
    assert "secret question" not in seen


async def test_tracing_is_off_by_default_and_with_options_keeps_it(
    kind: str, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    gateway = MockGateway()
    plain = gateway.client() if kind == "sync" else gateway.async_client()
    client = traced(gateway, kind, provider)
    try:
        assert plain._pipeline.observer is None
        copy = client.with_options(timeout=5).with_budget(max_credits=10)
        await chat(copy, model="gpt-4o-mini")
        await chat(plain, model="gpt-4o-mini")
    finally:
        await resolve(client.close())
        await resolve(plain.close())
    assert only_span(exporter).name == "chat gpt-4o-mini"


def test_tracing_true_uses_the_global_provider_and_bad_values_are_refused() -> None:
    gateway = MockGateway()
    with gateway.client(tracing=True) as client:  # the global provider: a no-op one here
        assert client._pipeline.observer is not None
        client.models.list()
    with pytest.raises(ConfigurationError, match="TracerProvider"):
        gateway.client(tracing="yes")


def test_a_missing_extra_is_an_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.trace", None)
    with pytest.raises(ImportError, match=r"-e '\.\[otel\]'"):
        Client(api_key="sk-x", base_url="http://gateway.test/v1", tracing=True)


async def test_a_call_with_shared_limits_is_traced_too(
    kind: str, provider: TracerProvider, exporter: InMemorySpanExporter, redis_url: str
) -> None:
    from aigateway.shared import RedisState

    gateway = MockGateway()
    client = traced(gateway, kind, provider, shared_state=RedisState(redis_url))
    try:
        await chat(client, model="gpt-4o-mini")
    finally:
        await resolve(client.close())
    span = only_span(exporter)
    assert span.name == "chat gpt-4o-mini"
    assert span.attributes is not None
    assert span.attributes["gen_ai.usage.output_tokens"] > 0
