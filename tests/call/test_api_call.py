"""The call a resource describes (`APICall`): it carries the model and the payload, so nothing
above it parses a body back; a request model is checked once, when it is built."""

from __future__ import annotations

import json
from typing import Any

import pytest

from aigateway import AsyncClient, Client, InvalidRequestError
from aigateway._call.call import APICall, encode_json
from aigateway.shared import RedisState
from aigateway.testing import MockGateway
from aigateway.types import ChatCompletionCreateRequest, ImageGenerateRequest

from ..conftest import in_process_client, resolve

pytestmark = pytest.mark.anyio

HELLO = [{"role": "user", "content": "hello"}]


def sent(gateway: MockGateway) -> dict[str, Any]:
    body = gateway.requests[-1].body
    assert isinstance(body, bytes)
    data: dict[str, Any] = json.loads(body)
    return data


def test_a_call_carries_its_model_and_its_payload_encoded_once() -> None:
    payload = {"model": "m-1", "inputs": {"text": "café"}}
    call = APICall("POST", "run", parse=bytes, payload=payload, side_effect=True)
    assert call.model == "m-1"
    assert call.body == '{"model":"m-1","inputs":{"text":"café"}}'.encode()
    other = call.for_model("m-2")
    assert (other.model, other.payload) == ("m-2", {**payload, "model": "m-2"})
    assert json.loads(other.body or b"") == {**payload, "model": "m-2"}
    assert other.side_effect
    assert other.path == "run"
    assert call.payload == payload  # the first call is unchanged
    assert APICall("GET", "models", parse=bytes).model is None


def test_a_value_json_cannot_hold_is_refused_naming_its_field() -> None:
    with pytest.raises(InvalidRequestError) as caught:
        APICall("POST", "run", parse=bytes, payload={"model": "m", "x": float("nan")})
    assert caught.value.field == "(body)"
    with pytest.raises(InvalidRequestError, match="must be JSON-serialisable") as caught:
        encode_json({"inputs": object()}, "inputs")
    assert caught.value.field == "inputs"


async def test_extra_body_is_merged_into_the_payload(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    extra = {"provider_option": {"a": 1}, "temperature": 0.5}
    await resolve(
        mock_client.chat.completions.create(
            model="gpt-4o-mini", messages=HELLO, temperature=0.1, extra_body=extra
        )
    )
    assert sent(gateway) == {"model": "gpt-4o-mini", "messages": HELLO, **extra}


async def test_extra_body_json_cannot_hold_is_refused_before_sending(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        await resolve(
            mock_client.chat.completions.create(
                model="gpt-4o-mini", messages=HELLO, extra_body={"seed": float("inf")}
            )
        )
    assert caught.value.field == "extra_body"
    assert gateway.requests == []


async def test_a_request_model_is_checked_once_when_it_is_built(
    mock_client: Client | AsyncClient, gateway: MockGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat = ChatCompletionCreateRequest(model="gpt-4o-mini", messages=HELLO, temperature=0.2)
    image = ImageGenerateRequest(model="flux-schnell", prompt="a fox", size="8x8")

    def checked_again(*args: object) -> None:
        raise AssertionError("a request model's fields were checked again")

    monkeypatch.setattr("aigateway.resources.chat.validate", checked_again)
    monkeypatch.setattr("aigateway.resources._services.validate", checked_again)
    await resolve(mock_client.chat.completions.create(chat))
    assert sent(gateway) == json.loads(chat.model_dump_json())
    stream = await resolve(mock_client.chat.completions.create(chat, stream=True))
    await resolve(stream.close())
    assert sent(gateway) == {**json.loads(chat.model_dump_json()), "stream": True}
    await resolve(mock_client.images.generate(image))
    assert sent(gateway) == json.loads(image.model_dump_json())
    with pytest.raises(AssertionError, match="checked again"):  # keywords are checked as ever
        await resolve(mock_client.chat.completions.create(model="gpt-4o-mini", messages=HELLO))


async def test_a_copy_for_another_key_shares_the_state_under_its_own_key(
    kind: str, gateway: MockGateway, redis_url: str
) -> None:
    other_key = gateway.create_account().key
    state = RedisState(redis_url)
    async with in_process_client(kind, gateway, shared_state=state) as client:
        copy = client.with_options(api_key=other_key)
        await resolve(copy.chat.completions.create(model="gpt-4o-mini", messages=HELLO))
        await resolve(copy.chat.completions.create(model="gpt-4o-mini", messages=HELLO))
        await resolve(client.chat.completions.create(model="gpt-4o-mini", messages=HELLO))
    assert state.usage(other_key)["total"]["requests"] == 2
    assert state.usage(gateway.api_key)["total"]["requests"] == 1
    assert copy.usage.total().requests == 2
