"""Record and replay: exchanges with the served mock recorded once, replayed with it stopped."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from aigateway import APIError, AsyncClient, Client, NotFoundError
from aigateway.testing import CassetteError, CassetteTransport, MockGateway

from ._helpers import user

MESSAGES = user("Say hello")


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def cassette(tmp_path: Path) -> Path:
    return tmp_path / "cassettes" / "calls.json"


@pytest.fixture
def served(gateway: MockGateway) -> Iterator[str]:
    with gateway.serve() as url:
        yield url


def sync_calls(client: Client) -> dict[str, Any]:
    """A plain call, a stream both ways, a 404 and a ``/run`` call: what a user would compare."""
    reply = client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    chunks = client.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True)
    with client.chat.completions.stream(model="gpt-4o-mini", messages=MESSAGES) as stream:
        texts = list(stream.text_stream)
        final = stream.get_final_completion()
    with pytest.raises(NotFoundError) as missing:
        client.chat.completions.create(model="no-such-model", messages=MESSAGES)
    run = client.run("tavily/search", {"query": "record and replay"})
    return outcome(reply, [c.model_dump() for c in chunks], texts, final, missing.value, run)


async def async_calls(client: AsyncClient) -> dict[str, Any]:
    reply = await client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    chunks = await client.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True)
    dumped = [c.model_dump() async for c in chunks]
    async with client.chat.completions.stream(model="gpt-4o-mini", messages=MESSAGES) as stream:
        texts = [text async for text in stream.text_stream]
        final = await stream.get_final_completion()
    with pytest.raises(NotFoundError) as missing:
        await client.chat.completions.create(model="no-such-model", messages=MESSAGES)
    run = await client.run("tavily/search", {"query": "record and replay"})
    return outcome(reply, dumped, texts, final, missing.value, run)


def outcome(
    reply: Any, chunks: list[Any], texts: list[str], final: Any, error: APIError, run: Any
) -> dict[str, Any]:
    assert len(chunks) > 2
    assert texts
    return {
        "text": reply.text,
        "usage": reply.usage.model_dump(),
        "credits": reply.remaining_credits,
        "reply": reply.model_dump(),
        "chunks": chunks,
        "texts": texts,
        "final": final.model_dump(),
        "error": (type(error), error.status_code, error.code, str(error)),
        "run": run.model_dump(),
    }


def client_on(kind: str, url: str, transport: CassetteTransport, key: str) -> Any:
    client_type = Client if kind == "sync" else AsyncClient
    return client_type(api_key=key, base_url=url, transport=transport, max_retries=0)


def test_sync_calls_replay_identically_with_the_server_stopped(
    gateway: MockGateway, cassette: Path
) -> None:
    with gateway.serve() as url:
        recorder = CassetteTransport(cassette, mode="record")
        with client_on("sync", url, recorder, gateway.api_key) as client:
            recorded = sync_calls(client)
    served = len(gateway.requests)
    player = CassetteTransport(cassette, mode="replay")
    with client_on("sync", url, player, gateway.api_key) as client:
        assert sync_calls(client) == recorded
    assert len(gateway.requests) == served  # nothing reached the gateway
    assert recorded["error"][:3] == (NotFoundError, 404, "model_not_found")


@pytest.mark.anyio
async def test_async_calls_replay_identically_with_the_server_stopped(
    gateway: MockGateway, cassette: Path
) -> None:
    with gateway.serve() as url:
        recorder = CassetteTransport(cassette, mode="record")
        async with client_on("async", url, recorder, gateway.api_key) as client:
            recorded = await async_calls(client)
    player = CassetteTransport(cassette, mode="replay")
    async with client_on("async", url, player, gateway.api_key) as client:
        assert await async_calls(client) == recorded
    # the same exchanges serve the other kind of client too
    with client_on("sync", url, CassetteTransport(cassette, mode="replay"), "sk-any") as client:
        assert sync_calls(client) == recorded


def test_a_replayed_stream_comes_event_by_event(
    gateway: MockGateway, served: str, cassette: Path
) -> None:
    body = {"model": "gpt-4o", "messages": MESSAGES, "stream": True}
    headers = {"Authorization": f"Bearer {gateway.api_key}"}
    with httpx.Client(transport=CassetteTransport(cassette, mode="record"), headers=headers) as h:
        recorded = h.post(f"{served}/chat/completions", json=body).content
    events = json.loads(cassette.read_text())["exchanges"][0]["response"]["events"]
    assert events[-1] == "data: [DONE]\n\n"
    assert "".join(events).encode() == recorded
    with (
        httpx.Client(transport=CassetteTransport(cassette, mode="replay")) as h,
        h.stream("POST", f"{served}/chat/completions", json=body) as response,
    ):
        assert response.headers["content-type"].startswith("text/event-stream")
        assert [chunk.decode() for chunk in response.iter_raw()] == events


def test_a_stream_left_early_is_still_recorded_whole(
    gateway: MockGateway, served: str, cassette: Path
) -> None:
    body = {"model": "gpt-4o", "messages": MESSAGES, "stream": True}
    headers = {"Authorization": f"Bearer {gateway.api_key}"}
    with (
        httpx.Client(transport=CassetteTransport(cassette, mode="record"), headers=headers) as h,
        h.stream("POST", f"{served}/chat/completions", json=body) as response,
    ):
        first = next(response.iter_lines())
    assert first.startswith("data: {")
    events = json.loads(cassette.read_text())["exchanges"][0]["response"]["events"]
    assert events[0].startswith(first)
    assert events[-1] == "data: [DONE]\n\n"


def test_an_unrecorded_request_fails_naming_method_path_and_matching(
    gateway: MockGateway, served: str, cassette: Path
) -> None:
    with Client(
        api_key=gateway.api_key, base_url=served, transport=CassetteTransport(cassette)
    ) as client:
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    player = CassetteTransport(cassette)  # "once": the file exists now, so replay only
    assert player.mode == "replay"
    with Client(api_key=gateway.api_key, base_url=served, transport=player) as client:
        with pytest.raises(APIError) as caught:
            client.chat.completions.create(model="gpt-4o", messages=user("Something new"))
        miss = caught.value.__cause__
        assert isinstance(miss, CassetteError)
        message = str(miss)
        assert "POST /v1/chat/completions was not recorded" in message
        assert "matched on method, path, query, body" in message
        assert "Something new" in message  # the body that did not match
        assert "Say hello" in message  # and what was recorded for that method and path
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
        with pytest.raises(APIError) as again:  # recorded once, replayed once
            client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
        assert "replayed already" in str(again.value.__cause__)
    assert len(gateway.requests) == 1


def test_identical_requests_replay_in_recorded_order(
    gateway: MockGateway, served: str, cassette: Path
) -> None:
    with client_on("sync", served, CassetteTransport(cassette), gateway.api_key) as client:
        ids = [client.chat.completions.create(model="gpt-4o", messages=MESSAGES).id for _ in "ab"]
    assert ids[0] != ids[1]
    with client_on("sync", served, CassetteTransport(cassette), gateway.api_key) as client:
        assert [
            client.chat.completions.create(model="gpt-4o", messages=MESSAGES).id for _ in "ab"
        ] == ids


def test_bodies_match_whatever_their_key_order_and_query_order(cassette: Path) -> None:
    inner = httpx.MockTransport(lambda request: httpx.Response(200, json={"n": 1}))
    url = "http://gateway.test/v1/run?b=2&a=1"
    with httpx.Client(transport=CassetteTransport(cassette, transport=inner)) as h:
        h.post(url, content=b'{"model": "m", "inputs": {"x": 1, "y": 2}}')
    with httpx.Client(transport=CassetteTransport(cassette, mode="replay")) as h:
        reply = h.post(
            "http://other.host/v1/run?a=1&b=2", json={"inputs": {"y": 2, "x": 1}, "model": "m"}
        )
        assert reply.json() == {"n": 1}
        with pytest.raises(CassetteError, match=r"POST /v1/run\?a=1 was not recorded"):
            h.post("http://other.host/v1/run?a=1", json={"model": "m"})
    loose = CassetteTransport(cassette, mode="replay", match_on=["method", "path"])
    with httpx.Client(transport=loose) as h:
        assert h.post("http://gateway.test/v1/run", content=b"anything").json() == {"n": 1}
    with pytest.raises(ValueError, match="match_on takes"):
        CassetteTransport(cassette, match_on=["host"])


def test_keys_and_cookies_never_reach_the_file(
    gateway: MockGateway, served: str, cassette: Path
) -> None:
    key = gateway.api_key
    other = "sk-other-secret-0123456789"
    recorder = CassetteTransport(cassette, secrets=["my-extra-secret"])
    headers = {
        "Authorization": f"Bearer {key}",
        "X-Api-Key": other,
        "Cookie": "session=cookie-value-42",
        "Idempotency-Key": "idem-123",
    }
    with httpx.Client(transport=recorder, base_url=served, headers=headers) as h:
        h.post("/chat/completions", json={"model": "gpt-4o", "messages": user(f"my key {key}")})
        h.get(f"/models?key={key}&also={other}", params={"extra": "my-extra-secret"})
    with client_on("sync", served, recorder, key) as client:
        client.chat.completions.create(model="gpt-4o", messages=user(f"{other} again"))
    raw = cassette.read_bytes()
    for secret in (key, other, "cookie-value-42", "my-extra-secret"):
        assert secret.encode() not in raw
    first = json.loads(raw)["exchanges"][0]["request"]
    assert first["headers"]["authorization"] == "<redacted>"
    assert first["headers"]["x-api-key"] == "<redacted>"
    assert first["headers"]["cookie"] == "<redacted>"
    assert first["headers"]["idempotency-key"] == "idem-123"  # not a secret: kept
    assert "my key <redacted>" in first["body"]
    # a replay with another key still matches: each side's key is scrubbed before matching
    replay_headers = {"Authorization": "Bearer sk-replaying-key"}
    with httpx.Client(transport=CassetteTransport(cassette), headers=replay_headers) as h:
        body = {"model": "gpt-4o", "messages": user("my key sk-replaying-key")}
        assert h.post(f"{served}/chat/completions", json=body).status_code == 200
        with pytest.raises(CassetteError) as caught:
            h.post(f"{served}/chat/completions", json=body)  # recorded once only
        assert "sk-replaying-key" not in str(caught.value)


def test_compressed_binary_and_cookie_replies_are_stored_safely_and_replayed_exactly(
    cassette: Path,
) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/text"):
            headers = {"Content-Encoding": "gzip", "Set-Cookie": "session=s3cr3t"}
            return httpx.Response(200, headers=headers, content=gzip.compress(b"plain text"))
        return httpx.Response(200, content=bytes(range(256)))

    inner = httpx.MockTransport(answer)
    with httpx.Client(transport=CassetteTransport(cassette, transport=inner)) as h:
        assert h.get("http://gateway.test/v1/text").text == "plain text"
        binary = h.get("http://gateway.test/v1/file").content
    stored = json.loads(cassette.read_text())
    assert stored["version"] == 1
    text_reply, file_reply = (e["response"] for e in stored["exchanges"])
    assert text_reply["body"] == "plain text"
    assert "content-encoding" not in text_reply["headers"]
    assert text_reply["headers"]["set-cookie"] == "<redacted>"
    assert b"s3cr3t" not in cassette.read_bytes()
    assert "body_base64" in file_reply
    with httpx.Client(transport=CassetteTransport(cassette, mode="replay")) as h:
        replayed = h.get("http://gateway.test/v1/text")
        assert replayed.text == "plain text"
        assert "set-cookie" not in replayed.headers  # its value is gone: not replayed
        assert h.get("http://gateway.test/v1/file").content == binary == bytes(range(256))


def test_bodies_over_the_limit_are_refused(cassette: Path) -> None:
    inner = httpx.MockTransport(lambda request: httpx.Response(200, content=b"x" * 500))
    recorder = CassetteTransport(cassette, transport=inner, max_body_size=100)
    with httpx.Client(transport=recorder) as h:
        with pytest.raises(CassetteError, match=r"GET /v1/big is over 100 bytes"):
            h.get("http://gateway.test/v1/big")
        with pytest.raises(CassetteError, match=r"body of POST /v1/up is 200 bytes, over 100"):
            h.post("http://gateway.test/v1/up", content=b"y" * 200)
    assert not cassette.exists()


def test_modes_once_record_replay_and_the_environment(
    cassette: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(CassetteError, match=r"no cassette at .*calls.json to replay"):
        CassetteTransport(cassette, mode="replay")
    assert CassetteTransport(cassette).mode == "record"
    monkeypatch.setenv("AIGATEWAY_CASSETTE_MODE", "replay")
    with pytest.raises(CassetteError, match="no cassette"):
        CassetteTransport(cassette)
    assert CassetteTransport(cassette, mode="record").mode == "record"  # an explicit mode wins
    monkeypatch.setenv("AIGATEWAY_CASSETTE_MODE", "sometimes")
    with pytest.raises(ValueError, match="AIGATEWAY_CASSETTE_MODE must be one of"):
        CassetteTransport(cassette)
    cassette.parent.mkdir()
    cassette.write_text('{"version": 1, "exchanges": [{"request": {}}]}')
    with pytest.raises(CassetteError, match="is not a cassette file"):
        CassetteTransport(cassette, mode="replay")


@pytest.mark.anyio
async def test_a_sync_inner_transport_cannot_serve_an_async_client(cassette: Path) -> None:
    inner = httpx.HTTPTransport()
    async with httpx.AsyncClient(transport=CassetteTransport(cassette, transport=inner)) as h:
        with pytest.raises(TypeError, match="is not an AsyncBaseTransport"):
            await h.get("http://gateway.test/v1/models")
    inner.close()


def test_the_openai_sdk_replays_a_recorded_chat_completion(
    gateway: MockGateway, cassette: Path
) -> None:
    openai = pytest.importorskip("openai")

    def completions(url: str) -> tuple[Any, list[Any]]:
        http = httpx.Client(transport=CassetteTransport(cassette))
        sdk = openai.OpenAI(base_url=url, api_key=gateway.api_key, http_client=http, max_retries=0)
        with sdk:
            whole = sdk.chat.completions.create(model="gpt-4o", messages=MESSAGES)
            chunks = sdk.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True)
            return whole, [chunk.model_dump() for chunk in chunks]

    with gateway.serve() as url:
        recorded = completions(url)
    replayed = completions(url)
    assert replayed[0].choices[0].message.content == recorded[0].choices[0].message.content
    assert replayed[0].model_dump() == recorded[0].model_dump()
    assert replayed[1] == recorded[1]
