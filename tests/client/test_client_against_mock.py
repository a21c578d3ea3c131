"""The clients against the bundled mock: every chat and models behaviour, sync and async."""

from __future__ import annotations

import json
from typing import Any

import pytest

from aigateway import (
    AsyncClient,
    AuthenticationError,
    BadRequestError,
    Client,
    InsufficientCreditsError,
    NotFoundError,
)
from aigateway.testing import MockGateway

from ..conftest import resolve

pytestmark = pytest.mark.anyio
HELLO = [{"role": "user", "content": "Hello there"}]
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["c", "f"]},
                "days": {"type": "integer", "minimum": 1, "maximum": 7},
            },
            "required": ["city", "unit"],
        },
    },
}


async def test_completion_shape_usage_and_credits(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    before = gateway.credits()
    reply = await resolve(mock_client.chat.completions.create(model="gpt-4o-mini", messages=HELLO))
    assert reply.id.startswith("chatcmpl-")
    assert reply.object == "chat.completion"
    assert reply.model == "gpt-4o-mini"
    assert reply.choices[0].message.role == "assistant"
    assert reply.text
    assert reply.choices[0].finish_reason == "stop"
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens
    assert reply.remaining_credits == pytest.approx(gateway.credits())
    assert reply.remaining_credits < before
    assert reply.balance_warning is False
    assert mock_client.remaining_credits == reply.remaining_credits
    assert mock_client.balance_warning is False


@pytest.mark.filterwarnings("ignore::aigateway.LowBalanceWarning")
async def test_low_balance_sets_the_warning_on_reply_and_client(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    gateway.set_credits(gateway.api_key, 9.5)
    reply = await resolve(mock_client.chat.completions.create(model="gpt-4o-mini", messages=HELLO))
    assert reply.balance_warning is True
    assert mock_client.balance_warning is True


async def test_no_credits_is_insufficient_credits_and_nothing_charged(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    gateway.set_credits(gateway.api_key, 0.000001)
    with pytest.raises(InsufficientCreditsError) as caught:
        await resolve(mock_client.chat.completions.create(model="claude-3-opus", messages=HELLO))
    assert caught.value.status_code == 402
    assert caught.value.code == "insufficient_credits"
    assert caught.value.remaining_credits == pytest.approx(0.000001)
    assert gateway.credits() == pytest.approx(0.000001)
    assert gateway.charges == []


async def test_wrong_key_is_an_authentication_error(gateway: MockGateway) -> None:
    with (
        gateway.client(api_key="sk-wrong-key") as client,
        pytest.raises(AuthenticationError) as caught,
    ):
        client.chat.completions.create(model="gpt-4o-mini", messages=HELLO)
    assert caught.value.code == "invalid_api_key"
    assert "sk-wrong-key" not in str(caught.value)


async def test_unknown_model_is_not_found_naming_the_closest(
    mock_client: Client | AsyncClient,
) -> None:
    with pytest.raises(NotFoundError) as caught:
        await resolve(mock_client.chat.completions.create(model="gpt-4o-mni", messages=HELLO))
    assert "gpt-4o-mini" in str(caught.value)


async def test_both_id_spellings_are_served(mock_client: Client | AsyncClient) -> None:
    dotted = await resolve(
        mock_client.chat.completions.create(model="claude-3.5-sonnet", messages=HELLO)
    )
    hyphen = await resolve(
        mock_client.chat.completions.create(model="claude-3-5-sonnet", messages=HELLO)
    )
    assert dotted.model == hyphen.model
    assert dotted.text == hyphen.text


async def test_image_part_to_a_non_vision_model_is_a_bad_request(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    vision = [spec.id for spec in gateway.catalogue.specs() if spec.vision]
    blind = next(spec.id for spec in gateway.catalogue.specs() if not spec.vision)
    parts = [
        {"type": "text", "text": "What is in the picture?"},
        {"type": "image_url", "image_url": {"url": "https://img.test/cat.png"}},
    ]
    with pytest.raises(BadRequestError) as caught:
        await resolve(
            mock_client.chat.completions.create(
                model=blind, messages=[{"role": "user", "content": parts}]
            )
        )
    assert blind in str(caught.value) or "vision" in str(caught.value)
    ok = await resolve(
        mock_client.chat.completions.create(
            model=vision[0], messages=[{"role": "user", "content": parts}]
        )
    )
    assert ok.text


async def test_the_mock_refuses_what_the_client_would(mock_client: Client | AsyncClient) -> None:
    """extra_body skips the client's own check, so the mock's 400 is seen."""
    with pytest.raises(BadRequestError) as caught:
        await resolve(
            mock_client.chat.completions.create(
                model="gpt-4o-mini", messages=HELLO, extra_body={"temperature": 2.5}
            )
        )
    assert "temperature" in str(caught.value)


async def test_max_tokens_truncates_with_length(mock_client: Client | AsyncClient) -> None:
    reply = await resolve(
        mock_client.chat.completions.create(model="gpt-4o-mini", messages=HELLO, max_tokens=3)
    )
    assert reply.choices[0].finish_reason == "length"
    assert reply.usage.completion_tokens == 3


async def test_stop_sequence_cuts_the_text(mock_client: Client | AsyncClient) -> None:
    full = await resolve(
        mock_client.chat.completions.create(model="gpt-4o-mini", messages=HELLO, seed=5)
    )
    word = full.text.split()[3]
    cut = await resolve(
        mock_client.chat.completions.create(model="gpt-4o-mini", messages=HELLO, seed=5, stop=word)
    )
    assert word not in cut.text
    assert full.text.startswith(cut.text)
    assert cut.choices[0].finish_reason == "stop"


async def test_json_mode_gives_json(mock_client: Client | AsyncClient) -> None:
    reply = await resolve(
        mock_client.chat.completions.create(
            model="gpt-4o", messages=HELLO, response_format={"type": "json_object"}
        )
    )
    assert isinstance(json.loads(reply.text), dict)


async def test_tools_give_tool_calls_matching_the_schema(mock_client: Client | AsyncClient) -> None:
    reply = await resolve(
        mock_client.chat.completions.create(
            model="gpt-4o", messages=HELLO, tools=[WEATHER_TOOL], tool_choice="auto"
        )
    )
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls"
    call = choice.message.tool_calls[0]
    assert call.function.name == "get_weather"
    args = call.function.parsed_arguments()
    assert isinstance(args["city"], str)
    assert args["unit"] in ("c", "f")
    if "days" in args:
        assert 1 <= args["days"] <= 7
    # the reply goes back as it is, with the tool's result
    final = await resolve(
        mock_client.chat.completions.create(
            model="gpt-4o",
            messages=[
                *HELLO,
                choice.message,
                {"role": "tool", "tool_call_id": call.id, "content": "sunny, 21C"},
            ],
            tools=[WEATHER_TOOL],
        )
    )
    assert final.choices[0].finish_reason == "stop"
    assert final.text


async def test_same_seed_same_output(gateway: MockGateway) -> None:
    other = MockGateway(seed=3)
    with gateway.client() as first, other.client() as second:
        a = first.chat.completions.create(model="gpt-4o-mini", messages=HELLO, seed=11)
        b = second.chat.completions.create(model="gpt-4o-mini", messages=HELLO, seed=11)
        c = first.chat.completions.create(model="gpt-4o-mini", messages=HELLO, seed=12)
    assert a.text == b.text
    assert a.text != c.text


async def test_models_list_and_retrieve(mock_client: Client | AsyncClient) -> None:
    models = await resolve(mock_client.models.list())
    assert len(models) == 11
    ids = [model.id for model in models]
    assert "meta-llama/llama-3.1-70b-instruct" in ids
    model = await resolve(mock_client.models.retrieve("meta-llama/llama-3.1-70b-instruct"))
    assert model.id == "meta-llama/llama-3.1-70b-instruct"
    assert model.owned_by
    assert model.model_extra is not None
    assert "pricing" in model.model_extra
    with pytest.raises(NotFoundError, match="gpt-4o"):
        await resolve(mock_client.models.retrieve("gpt-4oo"))


async def test_raw_response_through_the_mock(mock_client: Client | AsyncClient) -> None:
    raw = await resolve(
        mock_client.chat.completions.with_raw_response.create(model="gpt-4o-mini", messages=HELLO)
    )
    assert raw.status_code == 200
    assert raw.attempts == 1
    assert raw.request_id.startswith("req_")
    assert raw.parse().text
    listed = await resolve(mock_client.models.with_raw_response.list())
    assert listed.status_code == 200
    assert len(listed.parse()) == 11


async def test_nothing_reaches_the_mock_for_invalid_input(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    bad: list[dict[str, Any]] = [{"temperature": 2.5}, {"messages": []}, {"stop": list("abcde")}]
    for override in bad:
        params: dict[str, Any] = {"model": "gpt-4o-mini", "messages": HELLO, **override}
        with pytest.raises(ValueError, match="nothing was sent"):
            await resolve(mock_client.chat.completions.create(**params))
    assert gateway.requests == []
