"""The non-chat services when something is wrong: bad input refused with a typed error before
anything is sent, unknown service ids, replies missing their URL, the same errors as chat, and
calls that act on the world retried only with an idempotency key (reads always)."""

from __future__ import annotations

import contextlib
import io
import json
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

from ..conftest import BASE_URL, resolve

pytestmark = pytest.mark.anyio


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
