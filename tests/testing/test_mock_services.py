"""The mock's non-chat routes on the wire: ``/run``, ``/image/generate``, ``/files/{id}``."""

from __future__ import annotations

import base64
import io
import struct
import wave
import zlib
from typing import Any

import httpx
import pytest

from aigateway.testing import MockGateway, ServiceSpec
from aigateway.types.service_params import CATEGORIES

SAMPLE_INPUTS: dict[str, tuple[str, dict[str, Any]]] = {
    "image": ("flux-schnell", {"prompt": "a fox", "size": "32x16"}),
    "video": ("runway/gen-3", {"prompt": "waves", "duration": 2}),
    "speech": ("tts-1", {"text": "Hello there"}),
    "transcription": ("whisper-1", {"audio": "data:audio/wav;base64,"}),
    "scrape": ("firecrawl/scrape", {"url": "https://example.org/page"}),
    "search": ("tavily/search", {"query": "python"}),
    "email": ("resend/email", {"to": "a@example.com", "subject": "s", "text": "t"}),
    "payment": ("stripe/payments", {"amount": 500, "currency": "usd"}),
    "document": ("llamaparse/parse", {"file": "data:text/plain,one%0Ctwo"}),
    "social": ("socialdata/profile", {"handle": "ada"}),
    "storage": ("s3/storage", {"operation": "list"}),
    "database": ("supabase/sql", {"sql": "SELECT 1 AS one"}),
    "sms": ("twilio/sms", {"to": "+4915112345678", "text": "hi"}),
}


def run(client: httpx.Client, model: str, inputs: object) -> httpx.Response:
    return client.post("/run", json={"model": model, "inputs": inputs})


def output_without_ids(body: dict[str, Any]) -> dict[str, Any]:
    """The output with the per-call ids (message ids, file URLs) taken out."""
    return {
        key: value
        for key, value in body["output"].items()
        if not key.endswith(("_id", "_url")) and key != "images"
    }


def test_every_category_is_served() -> None:
    assert set(SAMPLE_INPUTS) == set(CATEGORIES)
    gateway = MockGateway()
    assert {spec.category for spec in gateway.services.values()} == set(CATEGORIES)


@pytest.mark.parametrize("category", sorted(SAMPLE_INPUTS))
def test_each_category_answers_deterministically_under_a_seed(category: str) -> None:
    model, inputs = SAMPLE_INPUTS[category]
    outputs = []
    for seed in (1, 1, 2):
        gateway = MockGateway(seed=seed, fixed_keys=True)  # file URLs compared too
        with httpx.Client(
            transport=gateway.transport(),
            base_url=gateway.base_url,
            headers={"Authorization": f"Bearer {gateway.api_key}"},
        ) as client:
            response = run(client, model, inputs)
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["object"] == "run"
        assert body["category"] == category
        assert body["usage"]["credits"] == pytest.approx(20 - body["_remaining_credits"])
        outputs.append(body)
    assert outputs[0] == outputs[1]
    if category in {"scrape", "search", "social"}:
        assert output_without_ids(outputs[0]) != output_without_ids(outputs[2])


def test_a_png_is_sized_as_asked_and_served_at_the_mocks_own_url(client: httpx.Client) -> None:
    body = client.post(
        "/image/generate", json={"model": "stability/sdxl", "prompt": "p", "size": "300x200"}
    ).json()
    assert body["object"] == "image"
    url = httpx.URL(body["image_url"])
    assert url.host == httpx.URL(MockGateway.base_url).host
    image = client.get(url)
    assert image.headers["content-type"] == "image/png"
    data = image.content
    assert data[12:16] == b"IHDR"
    assert struct.unpack(">II", data[16:24]) == (300, 200)
    idat_length = struct.unpack(">I", data[33:37])[0]
    raw = zlib.decompress(data[41 : 41 + idat_length])
    assert len(raw) == 200 * (1 + 300 * 3)


def test_speech_is_a_valid_wav(client: httpx.Client) -> None:
    body = run(client, "tts-1", {"text": "x" * 100}).json()
    audio = client.get(body["output"]["audio_url"])
    assert audio.headers["content-type"] == "audio/wav"
    with wave.open(io.BytesIO(audio.content)) as wav:
        assert (wav.getnchannels(), wav.getsampwidth(), wav.getframerate()) == (1, 2, 8000)
        assert wav.getnframes() == 8000 * body["output"]["duration_seconds"]


def test_billing_follows_the_units_of_the_spec(client: httpx.Client, gateway: MockGateway) -> None:
    gateway.services["flux-schnell"] = ServiceSpec("flux-schnell", "image", 0.5, "image")
    expectations = [
        (("flux-schnell", {"prompt": "p", "size": "8x8", "n": 2}), 2, 1.0),
        (("runway/gen-3", {"prompt": "p", "duration": 3}), 3, 0.15),
        (("tts-1", {"text": "y" * 2500}), 2.5, 0.0375),
        (("tavily/search", {"query": "q"}), 1, 0.005),
        (("llamaparse/parse", {"file": "data:text/plain,a%0Cb%0Cc"}), 3, 0.009),
        (("twilio/sms", {"to": "+15550000000", "text": "t"}), 1, 0.0075),
    ]
    for (model, inputs), quantity, credits in expectations:
        before = gateway.credits()
        usage = run(client, model, inputs).json()["usage"]
        assert usage["quantity"] == quantity, model
        assert usage["credits"] == pytest.approx(credits), model
        assert gateway.credits() == pytest.approx(before - credits), model
        assert gateway.charges[-1].model == model


def test_401_402_400_404_as_for_chat(client: httpx.Client, gateway: MockGateway) -> None:
    no_key = client.post("/run", json={}, headers={"Authorization": "Bearer nope"})
    assert no_key.status_code == 401
    assert no_key.json()["error"]["code"] == "invalid_api_key"

    gateway.set_credits(gateway.account, 0.01)
    poor = run(client, "runway/gen-3", {"prompt": "p", "duration": 10})
    assert poor.status_code == 402
    assert poor.json()["error"]["_remaining_credits"] == pytest.approx(0.01)
    assert len(gateway.files) == 0  # nothing was made

    not_object = run(client, "tts-1", ["text"])
    assert not_object.status_code == 400
    assert not_object.json()["error"]["param"] == "inputs"
    missing = run(client, "tts-1", {})
    assert missing.json()["error"]["param"] == "inputs.text"
    assert "Field required" in missing.json()["error"]["message"]
    bad_json = client.post("/run", content=b"{", headers={"content-type": "application/json"})
    assert bad_json.json()["error"]["code"] == "invalid_json"

    unknown = run(client, "tts-2", {"text": "x"})
    assert unknown.status_code == 404
    assert "tts-1" in unknown.json()["error"]["message"]
    chat_model = run(client, "gpt-4o", {"text": "x"})
    assert chat_model.status_code == 400
    assert chat_model.json()["error"]["code"] == "wrong_endpoint"
    speech_as_image = client.post("/image/generate", json={"model": "tts-1", "prompt": "p"})
    assert speech_as_image.json()["error"]["code"] == "wrong_service_category"
    assert client.get("/files/file_nothing").status_code == 404


def test_what_only_the_service_can_tell(client: httpx.Client) -> None:
    too_big = run(client, "flux-schnell", {"prompt": "p", "size": "4096x4096"})
    assert too_big.json()["error"]["code"] == "size_too_large"
    elsewhere = run(client, "whisper-1", {"audio": "https://example.com/a.wav"})
    assert elsewhere.json()["error"]["code"] == "unfetchable_url"
    broken = run(client, "whisper-1", {"audio": "data:audio/wav;base64,@@"})
    assert broken.json()["error"]["code"] == "invalid_file"
    bad_sql = run(client, "supabase/sql", {"sql": "SELEC 1"})
    assert bad_sql.json()["error"]["code"] == "sql_error"
    pages = run(client, "llamaparse/parse", {"file": "data:text/plain,one", "pages": [2]})
    assert pages.json()["error"]["param"] == "inputs.pages"


def test_an_uploaded_file_over_the_limit_is_refused(
    client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("aigateway.testing._core.context.MAX_FILE_BYTES", 10)
    data = base64.b64encode(b"0123456789A").decode()
    response = run(client, "whisper-1", {"audio": f"data:audio/wav;base64,{data}"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "file_too_large"


def test_a_refused_charge_leaves_the_database_untouched(
    client: httpx.Client, gateway: MockGateway
) -> None:
    assert run(client, "supabase/sql", {"sql": "CREATE TABLE t (a)"}).status_code == 200
    gateway.set_credits(gateway.account, 0)
    assert run(client, "supabase/sql", {"sql": "INSERT INTO t VALUES (1)"}).status_code == 402
    gateway.set_credits(gateway.account, 1)
    rows = run(client, "supabase/sql", {"sql": "SELECT count(*) FROM t"}).json()["output"]["rows"]
    assert rows == [[0]]


def test_a_replaced_catalogue_serves_only_its_services() -> None:
    gateway = MockGateway(services=[ServiceSpec("acme/voice", "speech", 0.1, "1k_characters")])
    with httpx.Client(
        transport=gateway.transport(),
        base_url=gateway.base_url,
        headers={"Authorization": f"Bearer {gateway.api_key}"},
    ) as client:
        assert run(client, "acme/voice", {"text": "hi"}).status_code == 200
        assert run(client, "tts-1", {"text": "hi"}).status_code == 404
    with pytest.raises(ValueError, match="unknown category 'telepathy'"):
        gateway.services.add(ServiceSpec("x", "telepathy", 1.0))
    for price in (-0.01, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="price"):
            ServiceSpec("x", "speech", price)
