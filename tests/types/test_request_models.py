"""Requests as models: checked as the call checks them, the body the call sends, stored as JSON
lines and sent later (one by one or as a batch); error replies as `ErrorBody`."""

from __future__ import annotations

import inspect
import json
import pickle
from pathlib import Path
from typing import Any

import pytest

import aigateway
from aigateway import AsyncClient, Client, InvalidRequestError
from aigateway.errors import APIStatusError
from aigateway.resources.chat import AsyncCompletions, Completions
from aigateway.testing import MockGateway, MockResponse, RequestContext
from aigateway.types import (
    ChatCompletionCreateRequest,
    ErrorBody,
    ImageGenerateRequest,
    RunRequest,
    load_requests,
)

from ..conftest import resolve

pytestmark = pytest.mark.anyio

HELLO = [{"role": "user", "content": "hello"}]


def sent(gateway: MockGateway) -> bytes:
    body = gateway.requests[-1].body
    assert isinstance(body, bytes)
    return body


# -- building and checking ----------------------------------------------------------------


async def test_a_bad_field_raises_the_calls_error(mock_client: Client | AsyncClient) -> None:
    with pytest.raises(InvalidRequestError) as from_model:
        ChatCompletionCreateRequest(model="gpt-4o-mini", messages=HELLO, temperature=2.5)
    with pytest.raises(InvalidRequestError) as from_call:
        await resolve(
            mock_client.chat.completions.create(
                model="gpt-4o-mini", messages=HELLO, temperature=2.5
            )
        )
    assert str(from_model.value) == str(from_call.value)
    assert from_model.value.field == "temperature"
    assert "a number from 0 to 2" in str(from_model.value)


def test_checks_that_involve_two_fields_hold_in_a_model() -> None:
    with pytest.raises(InvalidRequestError, match="needs logprobs: true"):
        ChatCompletionCreateRequest(model="m", messages=HELLO, top_logprobs=3)
    with pytest.raises(InvalidRequestError, match="cannot be given with max_completion_tokens"):
        ChatCompletionCreateRequest(
            model="m", messages=HELLO, max_completion_tokens=5, max_tokens=5
        )
    ok = ChatCompletionCreateRequest(model="m", messages=HELLO, max_tokens=5)
    assert ok.max_tokens == 5


def test_unknown_fields_and_stream_are_refused_by_name() -> None:
    with pytest.raises(InvalidRequestError, match=r"temprature=.*not a field"):
        ChatCompletionCreateRequest(model="m", messages=HELLO, temprature=1)
    with pytest.raises(InvalidRequestError, match="pass stream=True to the call"):
        ChatCompletionCreateRequest(model="m", messages=HELLO, stream=True)


def test_json_round_trip_and_schema() -> None:
    request = ChatCompletionCreateRequest(model="m", messages=HELLO, temperature=0.5, seed=1)
    line = request.model_dump_json()
    assert json.loads(line) == {
        "temperature": 0.5,
        "seed": 1,
        "model": "m",
        "messages": HELLO,
    }
    assert ChatCompletionCreateRequest.model_validate_json(line) == request
    assert request.to_params() == {"temperature": 0.5, "seed": 1, "model": "m", "messages": HELLO}
    schema = ChatCompletionCreateRequest.model_json_schema()
    assert schema["required"] == ["model", "messages"]
    assert schema["properties"]["temperature"]["maximum"] == 2
    assert "stream" not in schema["properties"]
    with pytest.raises(InvalidRequestError, match="not JSON"):
        ChatCompletionCreateRequest.model_validate_json("{oops")


def test_a_reply_message_can_go_into_a_request() -> None:
    gateway = MockGateway()
    with gateway.client() as client:
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=HELLO)
    request = ChatCompletionCreateRequest(
        model="gpt-4o-mini", messages=[*HELLO, reply, {"role": "user", "content": "more"}]
    )
    assert request.messages[1]["role"] == "assistant"


def test_run_requests_per_category_check_their_inputs() -> None:
    speech = RunRequest.for_category("speech")
    assert issubclass(speech, RunRequest)
    assert speech(model="tts-1", inputs={"text": "hi"}).model_dump_json() == (
        '{"model":"tts-1","inputs":{"text":"hi"}}'
    )
    with pytest.raises(InvalidRequestError, match=r"inputs\.text='': .*allowed: a non-empty"):
        speech(model="tts-1", inputs={"text": ""})
    with pytest.raises(InvalidRequestError, match="one of 'image'"):
        RunRequest.for_category("telepathy")
    with pytest.raises(InvalidRequestError, match="model"):
        RunRequest(model="", inputs={})


# -- sending -------------------------------------------------------------------------------


async def test_the_model_dumps_the_body_the_call_sends(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    params: dict[str, Any] = {
        "model": "gpt-4o-mini",
        "messages": HELLO,
        "temperature": 0.2,
        "stop": ["x"],
        "response_format": {"type": "json_object"},
    }
    await resolve(mock_client.chat.completions.create(**params))
    by_keywords = sent(gateway)
    request = ChatCompletionCreateRequest(**params)
    reply = await resolve(mock_client.chat.completions.create(request))
    assert sent(gateway) == by_keywords == request.model_dump_json().encode()
    assert reply.choices[0].message.content


async def test_a_request_streams_with_stream_true(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    request = ChatCompletionCreateRequest(model="gpt-4o-mini", messages=HELLO)
    stream = await resolve(mock_client.chat.completions.create(request, stream=True))
    if isinstance(mock_client, Client):
        with stream:
            chunks = list(stream)
    else:
        async with stream:
            chunks = [chunk async for chunk in stream]
    assert chunks
    assert json.loads(sent(gateway)) == {**json.loads(request.model_dump_json()), "stream": True}


async def test_run_and_image_requests_are_sent(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    search = RunRequest.for_category("search")(
        model="tavily/search", inputs={"query": "sdk", "num_results": 2}
    )
    await resolve(mock_client.run(search))
    assert sent(gateway) == search.model_dump_json().encode()
    image = ImageGenerateRequest(model="flux-schnell", prompt="a fox", size="8x8")
    result = await resolve(mock_client.images.generate(image))
    assert json.loads(sent(gateway)) == json.loads(image.model_dump_json())
    assert result.model_extra is not None or result is not None


async def test_a_request_for_another_endpoint_is_refused(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    run = RunRequest(model="tavily/search", inputs={"query": "sdk"})
    chat = ChatCompletionCreateRequest(model="gpt-4o-mini", messages=HELLO)
    with pytest.raises(InvalidRequestError) as wrong:
        await resolve(mock_client.chat.completions.create(run))  # type: ignore[call-overload]
    assert "chat.completions.create takes a ChatCompletionCreateRequest" in str(wrong.value)
    assert "RunRequest (sent by run)" in str(wrong.value)
    with pytest.raises(InvalidRequestError, match="run takes a RunRequest, not a Chat"):
        await resolve(mock_client.run(chat))  # type: ignore[arg-type]
    with pytest.raises(InvalidRequestError, match=r"images\.generate takes an? ImageGenerate"):
        await resolve(mock_client.images.generate(chat))  # type: ignore[call-overload]
    with pytest.raises(InvalidRequestError, match="given both in the request and as a keyword"):
        await resolve(mock_client.chat.completions.create(chat, model="other"))  # type: ignore[call-overload]
    assert gateway.requests == []


def test_signatures_show_the_request() -> None:
    for completions in (Completions, AsyncCompletions):
        parameters = list(inspect.signature(completions.create).parameters.values())
        assert parameters[1].name == "request"
        assert parameters[1].kind is inspect.Parameter.POSITIONAL_ONLY
        assert parameters[2].name == "model"


# -- storing and batches -------------------------------------------------------------------


def test_load_requests_names_a_malformed_line(tmp_path: Path) -> None:
    path = tmp_path / "requests.jsonl"
    good = ChatCompletionCreateRequest(model="m", messages=HELLO).model_dump_json()
    path.write_text(f"{good}\n\n{good}\n{{not json\n", encoding="utf-8")
    with pytest.raises(InvalidRequestError, match=r"line 4 of requests\.jsonl: not JSON"):
        load_requests(path)
    path.write_text(f'{good}\n{{"model": "m", "messages": []}}\n', encoding="utf-8")
    with pytest.raises(InvalidRequestError) as bad:
        load_requests(path)
    assert bad.value.field == "messages"
    assert "line 2 of requests.jsonl" in str(bad.value)
    path.write_text(f"{good}\n\n{good}\n", encoding="utf-8")
    assert len(load_requests(path)) == 2


async def test_a_batch_takes_request_models_and_checkpoints_them(tmp_path: Path) -> None:
    gateway = MockGateway(seed=3)
    requests = [
        ChatCompletionCreateRequest(model="gpt-4o-mini", messages=[{"role": "user", "content": q}])
        for q in ("one", "two")
    ]
    checkpoint = tmp_path / "done.jsonl"
    items: list[Any] = [*requests, RunRequest(model="tavily/search", inputs={"query": "x"})]
    for kind in ("sync", "async"):
        checkpoint.unlink(missing_ok=True)
        if kind == "sync":
            with gateway.client(max_retries=0) as client:
                results = aigateway.run_batch(client, items, checkpoint=checkpoint)
        else:
            async with gateway.async_client(max_retries=0) as async_client:
                results = await aigateway.arun_batch(async_client, items, checkpoint=checkpoint)
        assert [r.ok for r in results] == [True, True, False]
        assert "takes a ChatCompletionCreateRequest" in str(results[2].error)
        lines = [json.loads(line) for line in checkpoint.read_text().splitlines()]
        stored = {line["id"]: line["request"] for line in lines}
        for index, request in enumerate(requests):
            assert ChatCompletionCreateRequest.model_validate(stored[index]) == request


async def test_a_run_batch_takes_run_requests(mock_client: Client | AsyncClient) -> None:
    items = [RunRequest(model="tavily/search", inputs={"query": q}) for q in ("a", "b")]
    if isinstance(mock_client, Client):
        results = aigateway.run_batch(mock_client, items, kind="run")
    else:
        results = await aigateway.arun_batch(mock_client, items, kind="run")
    assert all(result.ok for result in results)


# -- error bodies --------------------------------------------------------------------------


async def test_an_error_reply_parses_as_error_body(mock_client: Client | AsyncClient) -> None:
    with pytest.raises(APIStatusError) as raised:
        await resolve(mock_client.chat.completions.create(model="no-such-model", messages=HELLO))
    error_body = raised.value.error_body
    assert isinstance(error_body, ErrorBody)
    assert isinstance(raised.value.body, dict)
    assert error_body.error.code == raised.value.body["error"]["code"] == raised.value.code
    assert error_body.error.message


async def test_an_html_error_keeps_no_model_and_the_text(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    page = b"<html><body>502 Bad Gateway</body></html>"

    def proxy(ctx: RequestContext) -> MockResponse:
        return MockResponse(502, {"content-type": "text/html"}, page)

    gateway.add_route("POST", "/v1/chat/completions", proxy)
    with pytest.raises(APIStatusError) as raised:
        await resolve(mock_client.chat.completions.create(model="gpt-4o-mini", messages=HELLO))
    assert raised.value.error_body is None
    assert raised.value.text == page.decode()
    assert raised.value.response.text == page.decode()


def test_error_body_keeps_unknown_fields() -> None:
    body = ErrorBody.model_validate(
        {"error": {"message": "m", "code": "c", "hint": "h"}, "trace": 1}
    )
    assert body.error.model_extra == {"hint": "h"}
    assert body.model_extra == {"trace": 1}


def test_requests_pickle_for_other_processes() -> None:
    speech = RunRequest.for_category("speech")(model="tts-1", inputs={"text": "hi"})
    chat = ChatCompletionCreateRequest(model="m", messages=HELLO, seed=1)
    for request in (speech, chat, RunRequest(model="x", inputs={})):
        again = pickle.loads(pickle.dumps(request))
        assert again == request
        assert type(again) is type(request)
        assert again.model_dump_json() == request.model_dump_json()
