"""The core of the installed client, sync and async, over real HTTP: a call, a stream, a
service, typed errors and retries."""

from __future__ import annotations

import pytest

from aigateway import (
    APIConnectionError,
    AsyncClient,
    AuthenticationError,
    BadRequestError,
    Client,
    InsufficientCreditsError,
    InvalidRequestError,
    NotFoundError,
    RateLimitError,
    ServiceUnavailableError,
)

from ._gateway import Reply, StubGateway, chunk, sse
from .conftest import KEY, USER, Sleeps, closed_port, opened, read_all, resolve

pytestmark = pytest.mark.anyio

FAILURE = {"error": {"message": "try again later", "type": "server_error"}}


async def test_a_chat_call(client: Client | AsyncClient, stub: StubGateway) -> None:
    reply = await resolve(client.chat.completions.create(model="gpt-4o-mini", messages=[USER]))
    assert reply.choices[0].message.content == "hello"
    assert reply.usage.total_tokens == 4
    (request,) = stub.requests
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.json() == {"model": "gpt-4o-mini", "messages": [USER]}  # nothing unset sent


async def test_the_model_list(client: Client | AsyncClient, stub: StubGateway) -> None:
    models = await resolve(client.models.list())
    assert [model.id for model in models] == ["gpt-4o-mini"]
    assert stub.paths() == ["/v1/models"]


async def test_a_stream(client: Client | AsyncClient, stub: StubGateway) -> None:
    stub.script("/chat/completions", sse(chunk("hel"), chunk("lo", "stop")))
    stream = await resolve(
        client.chat.completions.create(model="gpt-4o-mini", messages=[USER], stream=True)
    )
    chunks = await read_all(stream)
    assert "".join(item.choices[0].delta.content for item in chunks) == "hello"
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert stub.requests[0].json()["stream"] is True


async def test_a_service_by_id_and_by_its_typed_method(
    client: Client | AsyncClient, stub: StubGateway
) -> None:
    result = await resolve(client.run("tavily/search", {"query": "gateways"}))
    assert result.output["results"][0]["url"] == "https://example.org/"
    assert result.usage.credits == 0.01
    found = await resolve(client.web.search(model="tavily/search", query="gateways"))
    assert [hit.title for hit in found.results] == ["Example"]
    assert stub.paths() == ["/v1/run", "/v1/run"]
    assert [request.json() for request in stub.requests] == [
        {"model": "tavily/search", "inputs": {"query": "gateways"}}
    ] * 2


@pytest.mark.parametrize(
    ("status", "error_class"),
    [
        (400, BadRequestError),
        (401, AuthenticationError),
        (402, InsufficientCreditsError),
        (404, NotFoundError),
    ],
)
async def test_a_refusal_is_its_typed_error_and_not_retried(
    client: Client | AsyncClient, stub: StubGateway, status: int, error_class: type[Exception]
) -> None:
    body = {"error": {"message": "refused here", "type": "some_error", "code": "some_code"}}
    stub.script("/chat/completions", Reply(body, status))
    with pytest.raises(error_class) as caught:
        await resolve(client.chat.completions.create(model="gpt-4o-mini", messages=[USER]))
    assert caught.value.status_code == status  # type: ignore[attr-defined]
    assert "refused here" in str(caught.value)
    assert KEY not in str(caught.value)
    assert KEY not in repr(caught.value)
    assert len(stub.requests) == 1


async def test_bad_arguments_are_refused_before_sending(
    client: Client | AsyncClient, stub: StubGateway
) -> None:
    with pytest.raises(InvalidRequestError, match="temperature") as caught:
        await resolve(
            client.chat.completions.create(model="gpt-4o-mini", messages=[USER], temperature=7)
        )
    assert "0 to 2" in str(caught.value)
    assert stub.requests == []


async def test_no_server_is_a_connection_error(kind: str) -> None:
    base_url = f"http://127.0.0.1:{closed_port()}/v1"
    async with opened(kind, api_key=KEY, base_url=base_url, max_retries=0) as client:
        with pytest.raises(APIConnectionError):
            await resolve(client.models.list())


async def test_failures_are_retried_with_the_servers_wait(
    client: Client | AsyncClient, stub: StubGateway, sleeps: Sleeps
) -> None:
    stub.script(
        "/chat/completions",
        Reply(FAILURE, 503),
        Reply(FAILURE, 429, {"retry-after": "3"}),
    )
    reply = await resolve(client.chat.completions.create(model="gpt-4o-mini", messages=[USER]))
    assert reply.choices[0].message.content == "hello"
    assert len(stub.requests) == 3
    assert len(sleeps) == 2
    assert sleeps[0] > 0
    assert sleeps[1] == 3


async def test_retries_run_out_with_the_last_error(
    client: Client | AsyncClient, stub: StubGateway, sleeps: Sleeps
) -> None:
    stub.script("/chat/completions", Reply(FAILURE, 429), Reply(FAILURE, 503))
    with pytest.raises(ServiceUnavailableError) as caught:
        await resolve(
            client.chat.completions.create(model="gpt-4o-mini", messages=[USER], max_retries=1)
        )
    assert caught.value.attempts == 2
    assert len(stub.requests) == 2
    assert len(sleeps) == 1
    assert not isinstance(caught.value, RateLimitError)
