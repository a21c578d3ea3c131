"""Fallback models: a call whose model is unavailable is sent again with the next model, before
any output reached the caller; the reply (or the last error) says how it went."""

from __future__ import annotations

from typing import Any

import pytest

from aigateway import (
    AsyncClient,
    Client,
    FailedAttempt,
    InsufficientCreditsError,
    InternalServerError,
    InvalidRequestError,
    NotFoundError,
    RateLimitError,
)
from aigateway.testing import MockGateway

from ..conftest import in_process_client, resolve

pytestmark = pytest.mark.anyio

HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def chat(client: Client | AsyncClient, model: str, **options: Any) -> Any:
    return await resolve(client.chat.completions.create(model=model, messages=HELLO, **options))


def failing_for(*models: str) -> Any:
    """A reply function that fails (a 500) for ``models`` and answers the others."""

    def reply(request: dict[str, Any]) -> str:
        if request["model"] in models:
            raise RuntimeError(f"{request['model']} is down")
        return f"served by {request['model']}"

    return reply


def sent_models(gateway: MockGateway) -> list[str]:
    return [request.json()["model"] for request in gateway.requests]


async def test_an_unknown_model_falls_back_to_the_next(gateway: MockGateway, kind: str) -> None:
    async with in_process_client(kind, gateway, max_retries=0) as client:
        reply = await chat(client, "no-such-model", fallback_models=["gpt-4o-mini"])
    assert reply.model == "gpt-4o-mini"
    assert reply.fallback is not None
    assert reply.fallback.served_by == "gpt-4o-mini"
    [failed] = reply.fallback.failed
    assert isinstance(failed, FailedAttempt)
    assert failed.model == "no-such-model"
    assert isinstance(failed.error, NotFoundError)
    assert sent_models(gateway) == ["no-such-model", "gpt-4o-mini"]
    assert reply.rate_limit is not None  # the serving reply's own headers


async def test_a_failing_model_falls_back_after_its_retries(
    gateway: MockGateway, kind: str
) -> None:
    gateway.reply_with(failing_for("gpt-4o"))
    async with in_process_client(kind, gateway, max_retries=1) as client:
        reply = await chat(client, "gpt-4o", fallback_models=["gpt-4o", "gpt-4o-mini"])
        models = client.usage.as_dict()["models"]
    assert reply.choices[0].message.content == "served by gpt-4o-mini"
    assert [attempt.model for attempt in reply.fallback.failed] == ["gpt-4o", "gpt-4o"]
    assert all(isinstance(a.error, InternalServerError) for a in reply.fallback.failed)
    assert sent_models(gateway) == ["gpt-4o"] * 4 + ["gpt-4o-mini"]  # each retried once
    assert models["gpt-4o"]["failures"] == {"InternalServerError": 2}
    assert models["gpt-4o-mini"]["requests"] == 1


async def test_the_first_model_that_serves_ends_the_call(gateway: MockGateway, kind: str) -> None:
    async with in_process_client(kind, gateway, max_retries=0) as client:
        reply = await chat(client, "gpt-4o", fallback_models=["gpt-4o-mini"])
        plain = await chat(client, "gpt-4o")
    assert reply.fallback.served_by == "gpt-4o"
    assert reply.fallback.failed == ()
    assert plain.fallback is None
    assert sent_models(gateway) == ["gpt-4o", "gpt-4o"]


async def test_an_error_that_is_not_the_models_does_not_fall_back(
    gateway: MockGateway, kind: str
) -> None:
    gateway.set_credits(gateway.account, 0)
    async with in_process_client(kind, gateway, max_retries=0) as client:
        with pytest.raises(InsufficientCreditsError) as caught:
            await chat(client, "gpt-4o", fallback_models=["gpt-4o-mini"])
    assert sent_models(gateway) == ["gpt-4o"]
    assert caught.value.fallback is not None
    assert caught.value.fallback.served_by is None


async def test_when_every_model_fails_the_last_error_lists_the_attempts(
    gateway: MockGateway, kind: str
) -> None:
    gateway.reply_with(failing_for("gpt-4o"))
    async with in_process_client(kind, gateway, max_retries=0) as client:
        with pytest.raises(NotFoundError) as caught:
            await chat(client, "gpt-4o", fallback_models=["no-such-model"])
    fallback = caught.value.fallback
    assert fallback is not None
    assert fallback.served_by is None
    assert [(a.model, type(a.error)) for a in fallback.failed] == [
        ("gpt-4o", InternalServerError),
        ("no-such-model", NotFoundError),
    ]
    assert fallback.failed[-1].error is caught.value


async def test_a_stream_falls_back_before_its_first_chunk(gateway: MockGateway, kind: str) -> None:
    gateway.reply_with(failing_for("gpt-4o"))
    async with in_process_client(kind, gateway, max_retries=0) as client:
        stream = await resolve(
            client.chat.completions.create(
                model="gpt-4o", messages=HELLO, stream=True, fallback_models=["gpt-4o-mini"]
            )
        )
        if isinstance(client, Client):
            with stream:
                chunks = list(stream)
        else:
            async with stream:
                chunks = [chunk async for chunk in stream]
        models = client.usage.as_dict()["models"]
    assert stream.fallback.served_by == "gpt-4o-mini"
    assert [a.model for a in stream.fallback.failed] == ["gpt-4o"]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == (
        "served by gpt-4o-mini"
    )
    assert models["gpt-4o-mini"]["requests"] == 1
    assert models["gpt-4o"]["failures"] == {"InternalServerError": 1}


async def test_a_stream_cut_before_its_first_chunk_falls_back(
    gateway: MockGateway, kind: str
) -> None:
    gateway.faults.drop(times=1, path="/v1/chat/completions")
    async with in_process_client(kind, gateway, max_retries=0) as client:
        stream = await resolve(
            client.chat.completions.create(
                model="gpt-4o", messages=HELLO, stream=True, fallback_models=["gpt-4o-mini"]
            )
        )
        await resolve(stream.close())
    assert stream.fallback.served_by == "gpt-4o-mini"
    assert sent_models(gateway)[-1] == "gpt-4o-mini"


@pytest.mark.parametrize(
    "fallbacks",
    [[], [""], "gpt-4o-mini", ["a", "b", "c", "d", "e", "f"], [3]],
    ids=["empty", "empty-name", "a-string", "six", "not-a-string"],
)
async def test_fallback_models_are_checked_before_sending(
    gateway: MockGateway, kind: str, fallbacks: Any
) -> None:
    async with in_process_client(kind, gateway, max_retries=0) as client:
        with pytest.raises(InvalidRequestError, match="fallback_models"):
            await chat(client, "gpt-4o", fallback_models=fallbacks)
    assert gateway.requests == []


async def test_a_run_call_checks_its_fallbacks_too(gateway: MockGateway, kind: str) -> None:
    async with in_process_client(kind, gateway, max_retries=0) as client:
        with pytest.raises(InvalidRequestError, match="fallback_models"):
            await resolve(client.run("tavily/search", {"query": "x"}, fallback_models="exa"))
    assert gateway.requests == []


async def test_a_429_past_the_retry_cap_falls_back(gateway: MockGateway, kind: str) -> None:
    gateway.faults.fail(429, times=1, retry_after=3600, path="/v1/chat/completions")
    async with in_process_client(kind, gateway, max_retries=2) as client:
        reply = await chat(client, "gpt-4o", fallback_models=["gpt-4o-mini"])
    [failed] = reply.fallback.failed
    assert isinstance(failed.error, RateLimitError)
    assert failed.error.retry_after == 3600
    assert reply.fallback.served_by == "gpt-4o-mini"
