"""The non-chat services against the bundled mock, sync and async: the generic
``client.run`` and the typed resources of the thirteen categories (images through
``/image/generate``, video, audio, web, email, SMS, payments, documents, social, storage,
databases), each billed as its category says."""

from __future__ import annotations

import io
import json
import wave
from pathlib import Path

import pytest

from aigateway import AsyncClient, BadRequestError, Client, NotFoundError
from aigateway.testing import MockGateway
from aigateway.types.services import ImageResult, RunResult, SpeechResult

from ..conftest import resolve
from ._services_helpers import png_size, read

pytestmark = pytest.mark.anyio


# -- the generic run ------------------------------------------------------------------------


async def test_run_returns_the_whole_reply_with_credits(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    result = await resolve(mock_client.run("tavily/search", {"query": "sdk", "num_results": 2}))
    assert isinstance(result, RunResult)
    assert str(result.id).startswith("run_")
    assert result.model == "tavily/search"
    assert result.category == "search"
    assert len(result.output["results"]) == 2
    assert result.usage is not None
    assert (result.usage.quantity, result.usage.unit) == (1.0, "request")
    assert result.remaining_credits == pytest.approx(gateway.credits())
    assert result.balance_warning is False
    assert mock_client.remaining_credits == result.remaining_credits
    sent = json.loads(gateway.requests[-1].body)
    assert sent == {"model": "tavily/search", "inputs": {"query": "sdk", "num_results": 2}}


async def test_run_raw_response(mock_client: Client | AsyncClient) -> None:
    raw = await resolve(mock_client.run.with_raw_response.create("serper/search", {"query": "x"}))
    assert raw.status_code == 200
    assert raw.request_id.startswith("req_")
    assert raw.parse().category == "search"


async def test_run_encodes_file_values(
    mock_client: Client | AsyncClient, gateway: MockGateway, tmp_path: Path
) -> None:
    audio = tmp_path / "a.wav"
    audio.write_bytes(wav_bytes(seconds=0.5))
    result = await resolve(mock_client.run("whisper-1", {"audio": audio}))
    assert "0.50 seconds" in result.output["text"]
    inputs = json.loads(gateway.requests[-1].body)["inputs"]
    assert inputs["audio"].startswith("data:audio/wav;base64,")


# -- each category, typed -------------------------------------------------------------------


async def test_images_generate_hits_the_dedicated_endpoint(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    before = gateway.credits()
    image = await resolve(
        mock_client.images.generate(model="flux-schnell", prompt="a red fox", size="64x48")
    )
    assert isinstance(image, ImageResult)
    request = gateway.requests[0]
    assert request.path == "/v1/image/generate"
    assert json.loads(request.body) == {
        "model": "flux-schnell",
        "prompt": "a red fox",
        "size": "64x48",
    }
    assert image.image_url.startswith(gateway.base_url + "/files/")
    assert (image.width, image.height, image.usage.unit) == (64, 48, "image")
    assert gateway.credits() == pytest.approx(before - 0.003)
    assert png_size(await read(image)) == (64, 48)


async def test_images_create_runs_n_images_billed_per_image(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    result = await resolve(
        mock_client.images.create(model="dall-e-3", prompt="a fox", size="16x16", n=3)
    )
    assert len(result.images) == 3
    assert result.image_url == result.images[0]
    assert result.usage.quantity == 3
    assert result.usage.credits == pytest.approx(3 * 0.04)
    assert json.loads(gateway.requests[0].body)["inputs"]["n"] == 3


async def test_video_is_billed_per_second_and_is_an_mp4(
    mock_client: Client | AsyncClient,
) -> None:
    video = await resolve(
        mock_client.videos.generate(model="runway/gen-3", prompt="waves", duration=4)
    )
    assert (video.duration_seconds, video.usage.quantity, video.usage.unit) == (4, 4, "second")
    assert video.usage.credits == pytest.approx(4 * 0.05)
    assert (await read(video))[4:8] == b"ftyp"


async def test_speech_is_a_wav_billed_per_1k_characters(
    mock_client: Client | AsyncClient,
) -> None:
    text = "Hello from the gateway. " * 5
    speech = await resolve(mock_client.audio.speech(model="tts-1", text=text, voice="nova"))
    assert isinstance(speech, SpeechResult)
    assert speech.characters == len(text)
    assert speech.usage.credits == pytest.approx(len(text) / 1000 * 0.015)
    with wave.open(io.BytesIO(await read(speech))) as audio:
        assert audio.getnframes() / audio.getframerate() == pytest.approx(speech.duration_seconds)


async def test_transcribe_takes_a_path_bytes_a_file_object_or_a_url(
    mock_client: Client | AsyncClient, tmp_path: Path
) -> None:
    data = wav_bytes(seconds=1.25)
    path = tmp_path / "speech.wav"
    path.write_bytes(data)
    for audio in (path, str(path), data, io.BytesIO(data), open(path, "rb")):  # noqa: SIM115
        result = await resolve(mock_client.audio.transcribe(model="whisper-1", audio=audio))
        assert "1.25 seconds" in result.text, audio
        assert result.duration_seconds == pytest.approx(1.25)
        if hasattr(audio, "close"):
            audio.close()
    speech = await resolve(mock_client.audio.speech(model="tts-1", text="round trip"))
    again = await resolve(mock_client.audio.transcribe(model="whisper-1", audio=speech.audio_url))
    assert again.duration_seconds == pytest.approx(speech.duration_seconds)


async def test_web_scrape_and_search(mock_client: Client | AsyncClient) -> None:
    page = await resolve(mock_client.web.scrape(model="jina/reader", url="https://example.org/a"))
    assert page.title.startswith("example.org")
    assert page.text
    assert page.status_code == 200
    assert all(link.startswith("https://example.org/") for link in page.links)
    hits = await resolve(mock_client.web.search(model="tavily/search", query="rust", num_results=3))
    assert [hit.position for hit in hits.results] == [1, 2, 3]
    assert len(hits) == 3
    assert all("rust" in hit.snippet for hit in hits.results)


async def test_email_sms_payments(mock_client: Client | AsyncClient, gateway: MockGateway) -> None:
    email = await resolve(
        mock_client.email.send(
            model="resend/email", to=["a@example.com", "b@example.com"], subject="Hi", text="Hello"
        )
    )
    assert email.message_id.startswith("msg_")
    assert email.to == ["a@example.com", "b@example.com"]
    assert email.usage.unit == "message"
    sms = await resolve(mock_client.sms.send(model="twilio/sms", to="+14155550123", text="x" * 161))
    assert (sms.message_id[:4], sms.segments) == ("sms_", 2)
    payment = await resolve(
        mock_client.payments.create(model="stripe/payments", amount=1250, currency="EUR")
    )
    assert (payment.status, payment.amount, payment.currency) == ("succeeded", 1250, "eur")


async def test_documents_parse_pages_billed_per_page(
    mock_client: Client | AsyncClient,
) -> None:
    document = await resolve(
        mock_client.documents.parse(model="unstructured/parse", file=b"one\ftwo\fthree")
    )
    assert [page.text for page in document.pages] == ["one", "two", "three"]
    assert document.page_count == 3
    assert document.usage.quantity == 3
    assert document.usage.credits == pytest.approx(0.03)
    pdf = b"%PDF-1.4\n1 0 obj << /Type /Pages >>\n2 0 obj << /Type /Page >>\n3 0 obj << /Type /Page >>"
    parsed = await resolve(
        mock_client.documents.parse(model="llamaparse/parse", file=pdf, pages=[2])
    )
    assert (parsed.page_count, [p.number for p in parsed.pages]) == (2, [2])
    assert parsed.usage.quantity == 1


async def test_social_profile(mock_client: Client | AsyncClient) -> None:
    result = await resolve(
        mock_client.social.profile(model="socialdata/profile", handle="@ada", limit=3)
    )
    assert result.profile.handle == "ada"
    assert len(result.posts) == 3


async def test_storage_put_get_list_delete(mock_client: Client | AsyncClient) -> None:
    storage = mock_client.storage
    stored = await resolve(storage.put(model="s3/storage", key="notes/a.txt", data=b"hello"))
    assert (stored.key, stored.size, stored.content_type) == ("notes/a.txt", 5, "text/plain")
    fetched = await resolve(storage.get(model="s3/storage", key="notes/a.txt"))
    assert await read(fetched) == b"hello"
    listing = await resolve(storage.list(model="s3/storage", prefix="notes/"))
    assert [obj.key for obj in listing.objects] == ["notes/a.txt"]
    deleted = await resolve(storage.delete(model="s3/storage", key="notes/a.txt"))
    assert deleted.deleted is True
    with pytest.raises(NotFoundError, match=r"notes/a\.txt"):
        await resolve(storage.get(model="s3/storage", key="notes/a.txt"))


async def test_databases_query_is_read_only_and_execute_writes(
    mock_client: Client | AsyncClient,
) -> None:
    db = mock_client.databases
    await resolve(db.execute(model="supabase/sql", sql="CREATE TABLE t (id INTEGER, name TEXT)"))
    written = await resolve(
        db.execute(model="supabase/sql", sql="INSERT INTO t VALUES (?, ?)", params=[1, "ada"])
    )
    assert written.rows_affected == 1
    rows = await resolve(db.query(model="supabase/sql", sql="SELECT * FROM t"))
    assert rows.records() == [{"id": 1, "name": "ada"}]
    with pytest.raises(BadRequestError) as refused:
        await resolve(db.query(model="supabase/sql", sql="DELETE FROM t"))
    assert refused.value.code == "read_only"
    assert (await resolve(db.query(model="supabase/sql", sql="SELECT count(*) FROM t"))).rows == [
        [1]
    ]


async def test_typed_methods_take_extra_inputs_and_raw_responses(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    raw = await resolve(
        mock_client.audio.with_raw_response.speech(
            model="tts-1", text="hi", extra_inputs={"style": "calm"}
        )
    )
    assert raw.status_code == 200
    assert raw.parse().audio_url
    assert json.loads(gateway.requests[-1].body)["inputs"] == {"text": "hi", "style": "calm"}


def wav_bytes(seconds: float) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(b"\0\0" * int(8000 * seconds))
    return buffer.getvalue()
