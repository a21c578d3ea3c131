"""How objects show themselves in a notebook: short reprs, escaped HTML, media inline."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from aigateway import (
    APIConnectionError,
    APIStatusError,
    AsyncClient,
    AuthenticationError,
    Client,
    InsufficientCreditsError,
    InvalidRequestError,
    RateLimitError,
    run_batch,
)
from aigateway.testing import MockGateway
from aigateway.types import ChatCompletion, Model, ModelList

from ..conftest import in_process_client, resolve

pytestmark = pytest.mark.anyio

HOSTILE = "<script>alert('x')</script>"
MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def chat(client: Client | AsyncClient, **params: Any) -> Any:
    return await resolve(
        client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, **params)
    )


async def test_a_reply_shows_its_text_escaped(kind: str) -> None:
    gateway = MockGateway()
    gateway.enqueue_reply(HOSTILE + " and more " * 20)
    async with in_process_client(kind, gateway) as client:
        reply = await chat(client)
    text = repr(reply)
    assert text.startswith("aigateway.ChatCompletion(model='gpt-4o-mini', text=\"<script>")
    assert len(text) < 160  # short: the text is cut
    page = reply._repr_html_()
    assert "<script>" not in page
    assert "&lt;script&gt;" in page
    assert "gpt-4o-mini" in page
    assert "remaining credits" in page


async def test_a_chunk_and_a_stream_show_their_state_and_text(kind: str) -> None:
    gateway = MockGateway()
    gateway.enqueue_reply(HOSTILE)
    async with in_process_client(kind, gateway) as client:
        stream = await chat(client, stream=True)
        assert repr(stream).startswith("aigateway.")
        assert "(open, " in repr(stream)
        chunks = [chunk async for chunk in stream] if kind == "async" else list(stream)
        assert repr(stream).startswith(
            f"aigateway.{'Async' if kind == 'async' else ''}Stream(finished, {len(chunks)} chunks"
        )
        assert HOSTILE in repr(stream)  # the plain repr is text, not HTML
        page = stream._repr_html_()
        assert "<script>" not in page
        assert "&lt;script&gt;" in page
        assert "finished" in page
    first = next(c for c in chunks if c.choices and c.choices[0].delta.content)
    assert repr(first).startswith("aigateway.ChatCompletionChunk(id=")
    assert "<pre" in first._repr_html_()


def test_a_stream_closed_early_says_so() -> None:
    with MockGateway().client() as client:
        stream = client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, stream=True)
        assert "Stream(open, 1 chunk, " in repr(stream)  # the first chunk is read ahead
        stream.close()
    assert "Stream(closed, 1 chunk, " in repr(stream)
    assert "closed" in stream._repr_html_()


def test_a_chat_stream_shows_what_arrived() -> None:
    with MockGateway().client() as client:
        with client.chat.completions.stream(model="gpt-4o-mini", messages=MESSAGES) as stream:
            for _ in stream:
                break
            assert "ChatCompletionStream(open, 1 chunk, text=" in repr(stream)
        assert "ChatCompletionStream(closed, 1 chunk" in repr(stream)
        assert "closed" in stream._repr_html_()


async def test_a_parsed_reply_shows_what_was_parsed(kind: str) -> None:
    class City(BaseModel):
        name: str

    gateway = MockGateway()
    gateway.enqueue_reply('{"name": "<b>Oslo</b>"}')
    async with in_process_client(kind, gateway) as client:
        reply = await resolve(
            client.chat.completions.parse(
                model="gpt-4o-mini", messages=MESSAGES, response_format=City
            )
        )
    assert repr(reply).startswith("aigateway.ParsedChatCompletion(model='gpt-4o-mini', parsed=")
    assert "&lt;b&gt;Oslo" in reply._repr_html_()


async def test_models_show_as_a_table_and_a_short_repr(kind: str) -> None:
    async with in_process_client(kind, MockGateway()) as client:
        models = await resolve(client.models.list())
    assert repr(models).startswith(f"aigateway.ModelList({len(models)} models: gpt-4o, ")
    assert repr(models).endswith(", ...)")
    page = models._repr_html_()
    assert page.startswith('<table class="aigateway"')
    assert page.count("<tr>") == len(models) + 1
    for column in ("id", "owner", "context window", "prices", "capabilities"):
        assert f">{column}</th>" in page
    assert "vision" in page
    assert "per 1k credits" in page
    assert repr(models[0]) == "aigateway.Model('gpt-4o', owner='openai', context=128000)"


def test_hostile_model_fields_are_escaped() -> None:
    hostile = Model(id=HOSTILE, owned_by=HOSTILE, capabilities={HOSTILE: True})
    for page in (ModelList(data=[hostile])._repr_html_(), hostile._repr_html_()):
        assert "<script>" not in page
        assert "&lt;script&gt;" in page


async def test_a_client_shows_credits_and_rate_limit_never_the_key(kind: str) -> None:
    gateway = MockGateway()
    async with in_process_client(kind, gateway) as client:
        before = gateway.requests[:]
        assert "remaining_credits" not in repr(client)  # nothing seen yet, nothing fetched
        assert gateway.requests == before
        await chat(client)
        shown = repr(client) + client._repr_html_()
    assert gateway.api_key not in shown
    assert "api_key=<redacted>" in repr(client)
    assert repr(client).startswith(f"aigateway.{type(client).__name__}(base_url=")
    assert "remaining credits" in shown
    assert "rate limit" in shown
    assert "of 60 left" in shown


async def test_errors_show_status_code_request_id_and_what_to_do(kind: str) -> None:
    gateway = MockGateway()
    async with in_process_client(kind, gateway, api_key="wrong", max_retries=0) as client:
        with pytest.raises(AuthenticationError) as caught:
            await chat(client)
    error = caught.value
    assert repr(error).startswith("aigateway.AuthenticationError(status=401, code=")
    page = error._repr_html_()
    assert "401" in page
    assert "Check the API key" in page
    assert "what to do" in page
    assert "wrong" not in page


async def test_a_rate_limit_error_says_to_wait(kind: str) -> None:
    gateway = MockGateway()
    gateway.faults.fail(429, retry_after=7)
    async with in_process_client(kind, gateway, max_retries=0) as client:
        with pytest.raises(RateLimitError) as caught:
            await chat(client)
    page = caught.value._repr_html_()
    assert "429" in page
    assert "Wait, then slow down" in page
    assert "resets in" in page


def status_error(cls: type[APIStatusError], status: int, message: str) -> APIStatusError:
    import httpx

    body = {"error": {"message": message, "code": "x"}}
    response = httpx.Response(
        status, json=body, headers={"x-request-id": "req_<1>"}, request=httpx.Request("GET", "/")
    )
    return cls(message, response=response, body=body, code="x")


@pytest.mark.parametrize(
    ("error", "hint"),
    [
        (status_error(InsufficientCreditsError, 402, HOSTILE), "Top up"),
        (status_error(APIStatusError, 418, HOSTILE), "request id"),
        (APIConnectionError(HOSTILE), "check base_url"),
        (InvalidRequestError([]), "Nothing was sent"),
    ],
)
def test_every_error_is_escaped_and_has_a_hint(error: Exception, hint: str) -> None:
    page = error._repr_html_()  # type: ignore[attr-defined]
    assert hint in page
    assert "<script>" not in page
    assert "<1>" not in page
    assert repr(error).startswith(f"aigateway.{type(error).__name__}(")


def test_a_failing_repr_shows_a_fallback() -> None:
    reply = ChatCompletion.model_construct(id="x")  # no choices: the fields the repr reads
    assert repr(reply) == "<aigateway.ChatCompletion object (not shown: AttributeError)>"
    assert reply._repr_html_().startswith("&lt;aigateway.ChatCompletion object")


async def test_an_image_is_fetched_once_on_first_display(kind: str) -> None:
    gateway = MockGateway()
    async with in_process_client(kind, gateway) as client:
        image = await resolve(
            client.images.generate(model="flux-schnell", prompt=HOSTILE, size="64x64")
        )
        assert "ImageResult(model='flux-schnell'" in repr(image)
        assert repr(image).startswith("aigateway.types.services.")
        sent = len(gateway.requests)
        if kind == "async":
            assert image._repr_png_() is None
            page = image._repr_html_()
            assert "not fetched: call await result.aread()" in page
            assert "<img" not in page
            await image.aread()  # then it shows
        png = image._repr_png_()
        assert png is not None
        assert png.startswith(b"\x89PNG")
        assert image._repr_html_() is None  # Jupyter shows the PNG
        image._repr_png_()
        assert len(gateway.requests) - sent == 1  # fetched once, then kept


async def test_audio_shows_inline_from_its_bytes(kind: str) -> None:
    gateway = MockGateway()
    async with in_process_client(kind, gateway) as client:
        speech = await resolve(client.audio.speech(model="tts-1", text="hello"))
        if kind == "async":
            await speech.aread()
        page = speech._repr_html_()
    assert '<audio controls src="data:audio/wav;base64,' in page
    assert "tts-1" in page


async def test_a_failed_fetch_says_so_instead_of_a_broken_image() -> None:
    gateway = MockGateway()
    with gateway.client(max_retries=3) as client:
        image = client.images.generate(model="flux-schnell", prompt="x", size="64x64")
        gateway.faults.fail(503, times=5)
        sent = len(gateway.requests)
        page = image._repr_html_()
        assert image._repr_png_() is None
    assert "not fetched (ServiceUnavailableError): call result.read()" in page
    assert "<img" not in page
    assert len(gateway.requests) == sent + 1  # one attempt, no retries


def test_a_stream_cut_to_its_last_chunks_marks_the_cut() -> None:
    gateway = MockGateway()
    gateway.enqueue_reply("A long answer that goes on. " * 20)
    gateway.enqueue_reply("Short.")
    with gateway.client() as client:
        long = client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, stream=True)
        chunks = list(long)
        short = client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, stream=True)
        list(short)
    page = long._repr_html_()
    assert f"the last 16 of {len(chunks)} chunks" in page
    assert "<pre" in page.split("the last 16")[1]
    assert page.split("<pre")[1].split(">", 1)[1].startswith("… ")  # the text's start is gone
    assert "text='…" in repr(long)
    assert repr(long).endswith("goes on. ')")  # the end of the text, as it grew there
    assert "text shown" not in short._repr_html_()  # whole: no mark
    assert "…" not in short._repr_html_() + repr(short)


def test_a_chat_stream_longer_than_the_card_shows_its_end_and_how_much() -> None:
    gateway = MockGateway()
    text = "word " * 1200 + "THE END"
    gateway.enqueue_reply(text)
    with (
        gateway.client() as client,
        client.chat.completions.stream(model="gpt-4o-mini", messages=MESSAGES) as stream,
    ):
        stream.get_final_completion()
    page = stream._repr_html_()
    assert f"the last 4999 of {len(text)} characters" in page
    assert "THE END</pre>" in page
    assert page.split("<pre")[1].split(">", 1)[1].startswith("…")


def test_every_label_is_kept_on_one_line_whatever_the_notebook_css() -> None:
    with MockGateway().client() as client:
        pages = (
            client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)._repr_html_()
            + client.models.list()._repr_html_()
        )
    labels = re.findall(r"<th\b([^>]*)>", pages)
    assert len(labels) == 5 + 5  # the reply's labels, the table's columns
    assert all("white-space:nowrap" in attributes for attributes in labels)


def batch_with_a_failure(client: Client, checkpoint: Path | None = None) -> Any:
    items = [
        {"model": "gpt-4o-mini", "messages": MESSAGES},
        {"id": HOSTILE, "model": "gpt-4o-minii", "messages": MESSAGES},
    ]
    return run_batch(client, items, checkpoint=checkpoint, progress=False)


def test_batch_results_show_as_a_table_of_item_status_cost_and_error() -> None:
    gateway = MockGateway()
    with gateway.client() as client:
        results = batch_with_a_failure(client)
        image = {"model": "flux-schnell", "inputs": {"prompt": "x", "size": "64x64"}}
        service = run_batch(client, [image], kind="run", progress=False)
    page = results._repr_html_()
    assert "aigateway.BatchResult" in page
    for column in ("item", "status", "cost", "error"):
        assert f">{column}</th>" in page
    items = page.split('<table class="aigateway"')[1]
    assert items.count("<tr>") == 3
    assert "tokens</td>" in page  # a chat reply's cost: its tokens
    assert "NotFoundError: model &#x27;gpt-4o-minii&#x27; does not exist" in page
    assert "&lt;script&gt;" in page  # the item's id, escaped
    assert "<script>" not in page
    assert "credits spent" in page
    assert " credits</td>" in service._repr_html_()  # a service result states its credits


def test_items_from_a_checkpoint_say_so_and_keep_their_error_class(tmp_path: Path) -> None:
    with MockGateway().client() as client:
        batch_with_a_failure(client, tmp_path / "batch.jsonl")
        resumed = batch_with_a_failure(client, tmp_path / "batch.jsonl")
    page = resumed._repr_html_()
    assert ">ok (checkpoint)</td>" in page
    assert ">failed (checkpoint)</td>" in page
    assert ">NotFoundError: model &#x27;gpt-4o-minii&#x27;" in page  # not "RecordedError"


def test_batch_results_read_as_aligned_text_in_a_terminal() -> None:
    pretty = pytest.importorskip("IPython.lib.pretty")
    with MockGateway().client() as client:
        results = batch_with_a_failure(client)
    text = pretty.pretty(results)
    first, header, ok, failed = text.splitlines()
    assert first == repr(results) == "<BatchResult 2 items: 1 ok, 1 failed>"
    assert header.split() == ["item", "status", "cost", "error"]
    assert ok.split()[:2] == ["0", "ok"]
    assert ok.endswith("tokens")
    assert failed.startswith(HOSTILE + "  failed")
    assert failed.index("NotFoundError") == header.index("error")  # the columns line up
    assert failed.endswith("…")  # a long message is cut


def test_a_big_batch_shows_its_failures_first_and_says_how_many_rows() -> None:
    def call(client: Client, item: int) -> int:
        if item in (3, 97):
            raise APIConnectionError(f"item {item} failed")
        return item

    with MockGateway().client() as client:
        results = run_batch(client, range(100), call=call, progress=False)
    page = results._repr_html_()
    assert page.split('<table class="aigateway"')[1].count("<tr>") == 51  # the header, 50 items
    assert "50 of 100 items: the failed ones first" in page
    assert "item 3 failed" in page
    assert "item 97 failed" in page
    pretty = pytest.importorskip("IPython.lib.pretty")
    text = pretty.pretty(results).splitlines()
    assert len(text) == 2 + 50 + 1
    assert text[-1] == "(showing 50 of 100 items: the failed ones first)"


def test_a_batch_never_shows_the_key() -> None:
    pretty = pytest.importorskip("IPython.lib.pretty")
    gateway = MockGateway()
    with gateway.client() as good, gateway.client(api_key="sk-wrong-key", max_retries=0) as bad:
        results = [batch_with_a_failure(good), batch_with_a_failure(bad)]
    assert not any(result.ok for result in results[1])
    shown = "".join(r._repr_html_() + pretty.pretty(r) + repr(r) for r in results)
    assert "AuthenticationError" in shown
    assert "sk-wrong-key" not in shown
    assert gateway.api_key not in shown
