"""Path parameters cannot change the endpoint: dot segments are refused before sending,
reserved characters are percent-encoded, the ``/`` of provider-prefixed ids stays."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from aigateway import AsyncClient, Client, InvalidRequestError, NotFoundError
from aigateway.testing import MockGateway

from ..conftest import API_KEY, BASE_URL, in_process_client, resolve

pytestmark = pytest.mark.anyio

MODEL = {"id": "x", "object": "model", "created": 1, "owned_by": "o"}


@pytest.fixture
async def recording(kind: str) -> AsyncIterator[tuple[Client | AsyncClient, list[bytes]]]:
    """A client of ``kind`` whose every request is answered with a model; the raw paths sent."""
    sent: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request.url.raw_path)
        return httpx.Response(200, json=MODEL)

    options: dict[str, Any] = {
        "api_key": API_KEY,
        "base_url": BASE_URL,
        "transport": httpx.MockTransport(handler),
    }
    if kind == "sync":
        with Client(**options) as client:
            yield client, sent
    else:
        async with AsyncClient(**options) as aclient:
            yield aclient, sent


@pytest.mark.parametrize(
    "model_id", ["../x", "../chat/completions", "..", ".", "a/../b", "a/./b", "a//b", "/a", "a/"]
)
async def test_a_dot_or_empty_segment_is_refused_before_sending(
    recording: tuple[Client | AsyncClient, list[bytes]], model_id: str
) -> None:
    client, sent = recording
    with pytest.raises(InvalidRequestError) as caught:
        await resolve(client.models.retrieve(model_id))
    assert caught.value.field == "model_id"
    assert caught.value.violations[0].value == model_id
    assert "'..'" in str(caught.value)
    assert "models.list()" in str(caught.value)  # what is allowed
    assert sent == []


@pytest.mark.parametrize("model_id", ["", "   ", None, 3])
async def test_a_blank_or_non_string_id_is_refused(
    recording: tuple[Client | AsyncClient, list[bytes]], model_id: Any
) -> None:
    client, sent = recording
    with pytest.raises(InvalidRequestError, match="non-empty string"):
        await resolve(client.models.retrieve(model_id))
    assert sent == []


@pytest.mark.parametrize(
    ("model_id", "path"),
    [
        ("a?b", b"/v1/models/a%3Fb"),
        ("a#b", b"/v1/models/a%23b"),
        ("50%", b"/v1/models/50%25"),
        ("my model", b"/v1/models/my%20model"),
        ("meta-llama/Llama-3", b"/v1/models/meta-llama/Llama-3"),
        ("v1.2..x", b"/v1/models/v1.2..x"),  # dots inside a segment are no dot segment
    ],
)
async def test_what_goes_on_the_wire(
    recording: tuple[Client | AsyncClient, list[bytes]], model_id: str, path: bytes
) -> None:
    client, sent = recording
    await resolve(client.models.retrieve(model_id))
    await resolve(client.models.with_raw_response.retrieve(model_id))
    assert sent == [path, path]


async def test_the_mock_reads_encoded_and_prefixed_ids(kind: str) -> None:
    gateway = MockGateway()
    async with in_process_client(kind, gateway, max_retries=0) as client:
        model = await resolve(client.models.retrieve("meta-llama/llama-3.1-70b-instruct"))
        assert model.id == "meta-llama/llama-3.1-70b-instruct"
        with pytest.raises(NotFoundError, match="a\\?b"):  # the id reached it whole
            await resolve(client.models.retrieve("a?b"))
