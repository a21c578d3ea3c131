"""Files out of the non-chat services: saving a media result, data: URLs decoded locally,
Jupyter reprs, the API key sent only to the gateway's own host, and a failed fetch as a typed
error."""

from __future__ import annotations

from pathlib import Path

import pytest
import respx

from aigateway import APIResponseValidationError, AsyncClient, Client, NotFoundError
from aigateway.testing import MockGateway
from aigateway.types.services import ImageResult

from ..conftest import API_KEY, BASE_URL, resolve
from ._services_helpers import png_size, read

pytestmark = pytest.mark.anyio


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
    assert len(files_fetched) == 1  # saved as it arrived: the bytes were not kept in memory
    await read(image)
    await read(image)
    assert len([r for r in gateway.requests if r.path.startswith("/v1/files/")]) == 2  # kept


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
