"""The non-chat services against the bundled mock, sync and async: ``client.run``, the typed
resources of the thirteen categories, ``/image/generate``, files in and out, bad input."""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import struct
import wave
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from aigateway import (
    APIResponseValidationError,
    AsyncClient,
    AuthenticationError,
    BadRequestError,
    Client,
    InsufficientCreditsError,
    InternalServerError,
    InvalidRequestError,
    NotFoundError,
)
from aigateway.testing import MockGateway
from aigateway.types.services import ImageResult, RunResult, SpeechResult

from .conftest import API_KEY, BASE_URL, resolve

pytestmark = pytest.mark.anyio


async def read(result: Any) -> bytes:
    """A media result's bytes, with ``read`` or ``aread`` as its client wants."""
    return await result.aread() if inspect.iscoroutinefunction(result._fetch) else result.read()


def png_size(data: bytes) -> tuple[int, int]:
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


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


# -- files out ------------------------------------------------------------------------------


async def test_save_writes_the_file(
    mock_client: Client | AsyncClient, gateway: MockGateway, tmp_path: Path
) -> None:
    image = await resolve(mock_client.images.generate(model="flux-schnell", prompt="x", size="8x8"))
    target = tmp_path / "out.png"
    if isinstance(mock_client, AsyncClient):
        with pytest.raises(TypeError, match="aread"):
            image.read()
        assert await image.asave(target) == target
    else:
        with pytest.raises(TypeError, match=r"read\(\)"):
            await image.aread()
        assert image.save(target) == target
    assert png_size(target.read_bytes()) == (8, 8)
    files_fetched = [r for r in gateway.requests if r.path.startswith("/v1/files/")]
    assert len(files_fetched) == 1  # the bytes are kept after the first read
    await read(image)
    assert len([r for r in gateway.requests if r.path.startswith("/v1/files/")]) == 1


async def test_data_urls_decode_locally() -> None:
    image = ImageResult.model_validate({"image_url": "data:image/png;base64,iVBORw0KGgo="})
    assert image.read() == b"\x89PNG\r\n\x1a\n"
    assert await image.aread() == b"\x89PNG\r\n\x1a\n"
    assert image._repr_png_() == b"\x89PNG\r\n\x1a\n"
    assert image._repr_html_() is None  # Jupyter shows the PNG
    broken = ImageResult.model_validate({"image_url": "data:image/png;base64,@@@"})
    with pytest.raises(APIResponseValidationError, match="malformed data: URL"):
        broken.read()


def test_jupyter_reprs() -> None:
    gateway = MockGateway()
    with gateway.client() as client:
        image = client.images.generate(model="flux-schnell", prompt="x", size="4x4")
        sent = len(gateway.requests)
        assert png_size(image._repr_png_() or b"") == (4, 4)  # fetched on first display
        assert image._repr_html_() is None  # the PNG is shown
        assert len(gateway.requests) == sent + 1
        speech = client.audio.speech(model="tts-1", text="hi")
        assert '<audio controls src="data:audio/wav;base64,' in speech._repr_html_()
        video = client.videos.generate(model="luma/dream-machine", prompt="x", duration=1)
        assert '<video controls src="data:video/mp4;base64,' in video._repr_html_()
    unbound = ImageResult.model_validate({"image_url": "http://elsewhere.test/a.png"})
    assert unbound._repr_png_() is None
    assert "not fetched" in unbound._repr_html_()
    assert "<img" not in unbound._repr_html_()
    with pytest.raises(TypeError, match="not bound to a client"):
        unbound.read()


@respx.mock
def test_the_key_goes_only_to_the_gateways_host() -> None:
    respx.post(f"{BASE_URL}/image/generate").respond(
        json={"image_url": "https://cdn.example.com/a.png"}
    )
    cdn = respx.get("https://cdn.example.com/a.png").respond(content=b"\x89PNG...")
    own = respx.get(f"{BASE_URL}/files/f1").respond(content=b"own")
    with Client(api_key=API_KEY, base_url=BASE_URL) as client:
        image = client.images.generate(model="m", prompt="p")
        assert image.read() == b"\x89PNG..."
        assert "authorization" not in cdn.calls.last.request.headers
        own_file = ImageResult.model_validate({"image_url": f"{BASE_URL}/files/f1"})
        own_file.bind(client.download)
        assert own_file.read() == b"own"
        assert own.calls.last.request.headers["authorization"] == f"Bearer {API_KEY}"


@respx.mock
def test_a_failed_fetch_is_a_typed_error() -> None:
    respx.get("https://cdn.example.com/gone.png").respond(404, json={"error": {"message": "gone"}})
    with Client(api_key=API_KEY, base_url=BASE_URL, max_retries=0) as client:
        image = ImageResult.model_validate({"image_url": "https://cdn.example.com/gone.png"})
        image.bind(client.download)
        with pytest.raises(NotFoundError, match="gone"):
            image.read()


# -- bad input: a typed error, nothing sent -------------------------------------------------


@pytest.mark.parametrize("size", ["1024", "0x512", "512x0", "12x-3", "axb", "1024 x 1024"])
async def test_a_bad_size_is_refused_before_sending(
    mock_client: Client | AsyncClient, gateway: MockGateway, size: str
) -> None:
    with pytest.raises(InvalidRequestError) as error:
        await resolve(mock_client.images.generate(model="flux-schnell", prompt="x", size=size))
    assert error.value.field == "size"
    assert repr(size) in str(error.value)
    assert "<width>x<height>" in str(error.value)
    assert gateway.requests == []


async def test_a_missing_prompt_is_refused_before_sending(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    with pytest.raises(InvalidRequestError, match="prompt") as error:
        await resolve(mock_client.images.generate(model="flux-schnell"))  # type: ignore[call-arg]
    assert error.value.field == "prompt"
    with pytest.raises(InvalidRequestError, match="model"):
        await resolve(mock_client.videos.generate(model="", prompt="x"))
    with pytest.raises(TypeError, match="did you mean 'prompt'"):
        await resolve(mock_client.images.generate(model="m", promt="x"))  # type: ignore[call-arg]
    assert gateway.requests == []


async def test_the_mock_refuses_a_missing_input_that_only_it_can_see(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    with pytest.raises(BadRequestError) as error:
        await resolve(mock_client.run("flux-schnell", {"size": "64x64"}))
    assert error.value.code == "invalid_parameter"
    assert error.value.body["error"]["param"] == "inputs.prompt"
    assert gateway.charges == []


async def test_a_file_over_the_limit_is_refused(
    mock_client: Client | AsyncClient,
    gateway: MockGateway,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("aigateway.types.files.MAX_FILE_BYTES", 1000)
    big = tmp_path / "big.wav"
    big.write_bytes(b"\0" * 1001)
    for audio in (big, b"\0" * 1001, io.BytesIO(b"\0" * 1001)):
        with pytest.raises(InvalidRequestError, match="1001 bytes; allowed: at most 1000") as error:
            await resolve(mock_client.audio.transcribe(model="whisper-1", audio=audio))
        assert error.value.field == "audio"
    with pytest.raises(InvalidRequestError, match="at most 1000"):
        await resolve(mock_client.run("whisper-1", {"audio": b"\0" * 1001}))
    assert gateway.requests == []


async def test_a_path_that_does_not_exist(
    mock_client: Client | AsyncClient, gateway: MockGateway, tmp_path: Path
) -> None:
    missing = tmp_path / "nope.pdf"
    with pytest.raises(InvalidRequestError, match="does not exist") as error:
        await resolve(mock_client.documents.parse(model="llamaparse/parse", file=missing))
    assert (error.value.field, error.value.violations[0].value) == ("file", str(missing))
    with pytest.raises(InvalidRequestError, match="is a directory"):
        await resolve(mock_client.documents.parse(model="llamaparse/parse", file=tmp_path))
    with pytest.raises(InvalidRequestError, match="not binary"):
        await resolve(
            mock_client.documents.parse(model="llamaparse/parse", file=io.StringIO("text"))  # type: ignore[arg-type]
        )
    assert gateway.requests == []


async def test_an_unknown_service_id_is_a_404_with_the_closest_ids(
    mock_client: Client | AsyncClient,
) -> None:
    with pytest.raises(NotFoundError) as error:
        await resolve(mock_client.run("whisper-2", {"audio": "data:,x"}))
    assert error.value.code == "model_not_found"
    assert "whisper-1" in str(error.value)
    with pytest.raises(NotFoundError, match="tts-1"):
        await resolve(mock_client.audio.speech(model="tts-l", text="hi"))


@pytest.mark.parametrize("inputs", [["prompt"], "prompt", None, 3])
async def test_inputs_must_be_an_object(
    mock_client: Client | AsyncClient, gateway: MockGateway, inputs: Any
) -> None:
    with pytest.raises(InvalidRequestError, match="must be an object") as error:
        await resolve(mock_client.run("flux-schnell", inputs))
    assert error.value.field == "inputs"
    assert gateway.requests == []


@pytest.mark.parametrize(
    ("reply", "method"),
    [
        ({"image_url": None}, "image"),
        ({"id": "img_1", "object": "image"}, "image"),
        ({"output": {"format": "wav"}}, "speech"),
        ({"output": {"duration_seconds": 2}}, "video"),
    ],
)
@respx.mock
async def test_a_reply_missing_its_url_is_a_typed_error(
    client: Client | AsyncClient, reply: dict[str, Any], method: str
) -> None:
    respx.post(f"{BASE_URL}/image/generate").respond(json=reply)
    respx.post(f"{BASE_URL}/run").respond(json=reply)
    calls = {
        "image": lambda: client.images.generate(model="m", prompt="p"),
        "speech": lambda: client.audio.speech(model="m", text="t"),
        "video": lambda: client.videos.generate(model="m", prompt="p"),
    }
    with pytest.raises(APIResponseValidationError, match="_url") as error:
        await resolve(calls[method]())
    assert json.loads(error.value.body) == reply


@pytest.mark.filterwarnings("ignore::aigateway.LowBalanceWarning")
async def test_errors_are_those_of_chat(gateway: MockGateway) -> None:
    poor = gateway.create_account(credits=0.001)
    async with gateway.async_client(api_key=poor.key, max_retries=0) as client:
        with pytest.raises(InsufficientCreditsError) as error:
            await client.videos.generate(model="runway/gen-3", prompt="x", duration=10)
        assert error.value.remaining_credits == pytest.approx(0.001)
        await client.storage.put(model="s3/storage", key="k1", data=b"x")  # 0.0005 of 0.001
        await client.storage.put(model="s3/storage", key="k2", data=b"x")  # the last 0.0005
        with pytest.raises(InsufficientCreditsError):
            await client.storage.put(model="s3/storage", key="k3", data=b"x")
    assert list(gateway.stores.objects[(poor.id, "s3/storage")]) == ["k1", "k2"]  # k3 not stored
    async with gateway.async_client(api_key="wrong", max_retries=0) as client:
        with pytest.raises(AuthenticationError):
            await client.run("tavily/search", {"query": "x"})


# -- calls that act on the world ------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "call"),
    [
        ("email", lambda c, **o: c.email.send(model="m", to="a@b.co", subject="s", text="t", **o)),
        ("sms", lambda c, **o: c.sms.send(model="m", to="+14155550123", text="t", **o)),
        ("payment", lambda c, **o: c.payments.create(model="m", amount=1, currency="usd", **o)),
        ("put", lambda c, **o: c.storage.put(model="m", key="k", data=b"x", **o)),
        ("delete", lambda c, **o: c.storage.delete(model="m", key="k", **o)),
        ("execute", lambda c, **o: c.databases.execute(model="m", sql="DELETE FROM t", **o)),
        ("run", lambda c, **o: c.run("m", {"x": 1}, **o)),
    ],
)
@respx.mock
async def test_acts_are_retried_only_with_an_idempotency_key(
    client: Client | AsyncClient, name: str, call: Any
) -> None:
    route = respx.post(f"{BASE_URL}/run").mock(
        side_effect=[httpx.Response(500), httpx.Response(500)]
    )
    with pytest.raises(InternalServerError):
        await resolve(call(client, max_retries=2))
    assert route.call_count == 1
    route.reset()
    route.side_effect = [httpx.Response(500), httpx.Response(200, json={"output": {}})]
    # The reply lacks the typed fields; what matters here is that the call was retried.
    with contextlib.suppress(APIResponseValidationError):
        await resolve(call(client, max_retries=2, idempotency_key="once"))
    assert route.call_count == 2
    assert {c.request.headers["idempotency-key"] for c in route.calls} == {"once"}


@respx.mock
async def test_reads_are_retried(client: Client | AsyncClient) -> None:
    route = respx.post(f"{BASE_URL}/run").mock(
        side_effect=[httpx.Response(500), httpx.Response(200, json={"output": {"rows": []}})]
    )
    result = await resolve(client.databases.query(model="m", sql="SELECT 1", max_retries=1))
    assert result.rows == []
    assert route.call_count == 2
    assert json.loads(route.calls.last.request.content)["inputs"]["read_only"] is True


def wav_bytes(seconds: float) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(b"\0\0" * int(8000 * seconds))
    return buffer.getvalue()
