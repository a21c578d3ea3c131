"""The mock over real sockets: uvicorn, the official openai SDK, the WebSocket, pacing."""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from aigateway.testing import MockGateway
from aigateway.testing._core.pacing import StreamPacing

from ._helpers import parse_sse, user

openai = pytest.importorskip("openai")
ws_client = pytest.importorskip("websockets.sync.client")


@pytest.fixture
def served(gateway: MockGateway) -> Iterator[str]:
    with gateway.serve() as url:
        yield url


def ws_url(url: str) -> str:
    return url.replace("http://", "ws://") + "/stream"


def test_serve_gives_a_base_url_sharing_the_gateway_state(
    gateway: MockGateway, served: str
) -> None:
    assert served.startswith("http://127.0.0.1:")
    assert served.endswith("/v1")
    with httpx.Client(base_url=served, headers={"Authorization": f"Bearer {gateway.api_key}"}) as h:
        reply = h.post("/chat/completions", json={"model": "gpt-4o", "messages": user()})
        with h.stream(
            "POST",
            "/chat/completions",
            json={"model": "gpt-4o", "messages": user(), "stream": True},
        ) as response:
            events = parse_sse(response.read())
    assert reply.status_code == 200
    assert reply.headers["x-request-id"].startswith("req_")
    assert reply.json()["_remaining_credits"] > gateway.credits()  # the stream was charged too
    assert response.headers["content-type"].startswith("text/event-stream")
    assert events[-1] == "[DONE]"
    assert len(gateway.requests) == 2
    assert len(gateway.charges) == 2


def test_the_server_stops_with_the_block(gateway: MockGateway) -> None:
    with gateway.serve() as url:
        assert httpx.get(f"{url}/models").status_code == 401
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/models")


def test_the_official_openai_sdk_works_against_the_served_mock(
    gateway: MockGateway, served: str
) -> None:
    sdk = openai.OpenAI(base_url=served, api_key=gateway.api_key, max_retries=0)
    messages: Any = [{"role": "user", "content": "hi"}]
    try:
        whole = sdk.chat.completions.create(model="gpt-4o", messages=messages)
        assert whole.choices[0].message.role == "assistant"
        streamed = sdk.chat.completions.create(model="gpt-4o", messages=messages, stream=True)
        text = "".join(chunk.choices[0].delta.content or "" for chunk in streamed)
        assert text == whole.choices[0].message.content
        assert len([model.id for model in sdk.models.list()]) == 11
    finally:
        sdk.close()
    wrong = openai.OpenAI(base_url=served, api_key="sk-wrong", max_retries=0)
    try:
        with pytest.raises(openai.AuthenticationError) as caught:
            wrong.chat.completions.create(model="gpt-4o", messages=messages)
        assert caught.value.status_code == 401
        assert caught.value.code == "invalid_api_key"
    finally:
        wrong.close()


def test_websocket_streams_the_sse_chunks_then_the_done_frame(
    gateway: MockGateway, served: str
) -> None:
    request = {"model": "gpt-4o", "messages": user(), "seed": 4}
    with httpx.Client(base_url=served, headers={"Authorization": f"Bearer {gateway.api_key}"}) as h:
        sse = parse_sse(h.post("/chat/completions", json={**request, "stream": True}).content)
    with ws_client.connect(ws_url(served), subprotocols=["Authorization", gateway.api_key]) as ws:
        assert ws.subprotocol == "Authorization"
        ws.send(json.dumps(request))
        frames = [json.loads(frame) for frame in ws]
    assert frames[-1] == {"object": "chat.completion.done"}
    strip = {"id", "created", "_remaining_credits", "_balance_warning"}  # created: served time
    assert [{k: v for k, v in f.items() if k not in strip} for f in frames[:-1]] == [
        {k: v for k, v in c.items() if k not in strip} for c in sse[:-1]
    ]


def test_websocket_with_a_wrong_key_closes_with_a_reason(served: str) -> None:
    connection = ws_client.connect(ws_url(served), subprotocols=["Authorization", "sk-wrong"])
    with connection as ws:
        frame = json.loads(ws.recv())
        with pytest.raises(Exception, match="1008"):
            ws.recv()
    assert frame["error"]["code"] == "invalid_api_key"
    assert frame["error"]["status"] == 401
    assert connection.close_code == 1008
    assert "invalid API key" in (connection.close_reason or "")


def test_websocket_error_frame_for_a_bad_request(gateway: MockGateway, served: str) -> None:
    with ws_client.connect(ws_url(served), subprotocols=["Authorization", gateway.api_key]) as ws:
        ws.send(json.dumps({"model": "gpt-5", "messages": user()}))
        frames = [json.loads(frame) for frame in ws]
    assert len(frames) == 1
    assert frames[0]["error"]["status"] == 404
    assert frames[0]["error"]["code"] == "model_not_found"


def test_websocket_accepts_the_key_as_a_bearer_header(gateway: MockGateway, served: str) -> None:
    headers = {"Authorization": f"Bearer {gateway.api_key}"}
    with ws_client.connect(ws_url(served), additional_headers=headers) as ws:
        assert ws.subprotocol is None
        ws.send(json.dumps({"model": "gpt-4o", "messages": user()}))
        frames = list(ws)
    assert json.loads(frames[-1]) == {"object": "chat.completion.done"}


def test_pacing_waits_before_each_event_sync_and_async(gateway: MockGateway) -> None:
    waits: list[float] = []

    async def async_sleep(seconds: float) -> None:
        waits.append(-seconds)

    gateway.stream_pacing = StreamPacing(0.5, 0.01, sleep=waits.append, async_sleep=async_sleep)
    body = {"model": "gpt-4o", "messages": user(), "stream": True}
    headers = {"Authorization": f"Bearer {gateway.api_key}"}
    with httpx.Client(transport=gateway.transport(), base_url=gateway.base_url) as h:
        events = parse_sse(h.post("/chat/completions", json=body, headers=headers).content)
    assert waits == [0.5] + [0.01] * (len(events) - 1)
    waits.clear()
    with gateway.serve() as url, httpx.Client(base_url=url, headers=headers) as h:
        served_events = parse_sse(h.post("/chat/completions", json=body).content)
    assert waits == [-0.5] + [-0.01] * (len(served_events) - 1)


def test_pacing_is_off_by_default_and_checked() -> None:
    assert not MockGateway().stream_pacing.enabled
    assert MockGateway(time_to_first_token=0.2, token_delay=0.05).stream_pacing.enabled
    with pytest.raises(ValueError, match="token_delay"):
        StreamPacing(token_delay=-1)


def test_serve_without_uvicorn_names_the_extra(
    gateway: MockGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.import_module

    def no_uvicorn(name: str, package: str | None = None) -> Any:
        if name == "uvicorn":
            raise ModuleNotFoundError("No module named 'uvicorn'")
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", no_uvicorn)
    with pytest.raises(ImportError, match=r"-e '\.\[server\]'"), gateway.serve():
        pass
