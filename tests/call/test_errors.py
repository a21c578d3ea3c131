"""Replies that are errors or not what the API promises become typed errors carrying what arrived."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
import respx

import aigateway
from aigateway import (
    APIConnectionError,
    APIResponseValidationError,
    APIStatusError,
    APITimeoutError,
    AsyncClient,
    AuthenticationError,
    BadRequestError,
    Client,
    ConflictError,
    InsufficientCreditsError,
    InternalServerError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ServiceUnavailableError,
    UnprocessableEntityError,
)
from aigateway.testing import MockGateway, Quota

from .._stack import http
from ..conftest import API_KEY, BASE_URL, in_process_client, resolve

pytestmark = pytest.mark.anyio
USER = [{"role": "user", "content": "Hello"}]


def error_body(code: str, type_: str, message: str = "nope") -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "code": code}}


@pytest.fixture
def gateway() -> Any:
    with respx.mock(base_url=BASE_URL, assert_all_called=False) as router:
        yield router


@pytest.mark.parametrize(
    ("status", "body", "cls"),
    [
        (400, error_body("invalid_parameter", "invalid_request_error"), BadRequestError),
        (401, error_body("invalid_api_key", "authentication_error"), AuthenticationError),
        (401, error_body("invalid_api_key", "invalid_request_error"), AuthenticationError),
        (402, error_body("insufficient_credits", "insufficient_credits"), InsufficientCreditsError),
        (402, error_body("insufficient_balance", "insufficient_balance"), InsufficientCreditsError),
        (429, error_body("insufficient_quota", "insufficient_quota"), InsufficientCreditsError),
        (403, error_body("model_not_allowed", "permission_error"), PermissionDeniedError),
        (404, error_body("model_not_found", "not_found_error"), NotFoundError),
        (422, error_body("unprocessable", "invalid_request_error"), UnprocessableEntityError),
        (429, error_body("rate_limit_exceeded", "rate_limit_error"), RateLimitError),
        (500, error_body("server_error", "server_error"), InternalServerError),
        (502, error_body("bad_gateway", "server_error"), InternalServerError),
        (503, error_body("unavailable", "service_unavailable"), ServiceUnavailableError),
        (409, error_body("idempotency_key_reused", "conflict"), ConflictError),
        (418, error_body("teapot", "teapot"), APIStatusError),
    ],
)
async def test_status_and_code_pick_the_class(
    client: Client | AsyncClient,
    gateway: respx.Router,
    status: int,
    body: dict[str, Any],
    cls: type[APIStatusError],
) -> None:
    gateway.post("/chat/completions").respond(status, json=body, headers={"x-request-id": "req_42"})
    with pytest.raises(cls) as caught:
        await resolve(
            client.with_options(max_retries=0).chat.completions.create(model="m", messages=USER)
        )
    error = caught.value
    assert type(error) is cls
    assert error.status_code == status
    assert error.code == body["error"]["code"]
    assert error.error_type == body["error"]["type"]
    assert error.body == body
    assert error.request_id == "req_42"
    assert error.param is None
    assert "nope" in str(error)
    assert f"HTTP {status}" in str(error)
    assert API_KEY not in str(error)
    assert API_KEY not in repr(error)


async def test_rate_limit_error_carries_the_headers(
    client: Client | AsyncClient, gateway: respx.Router
) -> None:
    headers = {
        "X-RateLimit-Limit": "60",
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset": "1700000060",
    }
    gateway.post("/chat/completions").respond(
        429, json=error_body("rate_limit", "rate_limit"), headers=headers
    )
    with pytest.raises(RateLimitError) as caught:
        await resolve(
            client.with_options(max_retries=0).chat.completions.create(model="m", messages=USER)
        )
    assert caught.value.rate_limit == aigateway.RateLimitInfo(
        limit=60, remaining=0, reset=1_700_000_060
    )


async def test_the_offending_param_is_on_the_error(
    client: Client | AsyncClient, gateway: respx.Router
) -> None:
    body = error_body("invalid_parameter", "invalid_request_error")
    body["error"]["param"] = "temperature"
    gateway.post("/chat/completions").respond(400, json=body)
    with pytest.raises(BadRequestError) as caught:
        await resolve(client.chat.completions.create(model="m", messages=USER))
    assert caught.value.param == "temperature"


def test_param_given_by_the_caller_wins_over_the_body() -> None:
    body = {"error": {"message": "no", "param": "top_p"}}
    response = httpx.Response(400, json=body, request=httpx.Request("POST", BASE_URL))
    assert BadRequestError("no", response=response, body=body).param == "top_p"
    assert BadRequestError("no", response=response, body=body, param="n").param == "n"
    assert BadRequestError("no", response=response, body=None).param is None


async def test_headers_are_httpx_headers_on_every_error(
    client: Client | AsyncClient, gateway: respx.Router
) -> None:
    route = gateway.post("/chat/completions")
    route.respond(500, json=error_body("boom", "server_error"), headers={"X-Trace": "t1"})
    with pytest.raises(InternalServerError) as status_error:
        await resolve(client.chat.completions.create(model="m", messages=USER, max_retries=0))
    route.respond(200, text="<html/>", headers={"X-Trace": "t2"})
    with pytest.raises(APIResponseValidationError) as invalid:
        await resolve(client.chat.completions.create(model="m", messages=USER))
    for error, trace in ((status_error.value, "t1"), (invalid.value, "t2")):
        assert isinstance(error.headers, http.Headers)  # the lane's library's
        assert error.headers["x-trace"] == trace  # case-insensitive, as on the reply


async def test_insufficient_credits_carries_the_balance(
    client: Client | AsyncClient, gateway: respx.Router
) -> None:
    body = error_body("insufficient_credits", "insufficient_credits")
    body["error"]["_remaining_credits"] = 0.25
    gateway.post("/chat/completions").respond(402, json=body)
    with pytest.raises(InsufficientCreditsError) as caught:
        await resolve(client.chat.completions.create(model="m", messages=USER))
    assert caught.value.remaining_credits == 0.25


async def test_html_from_a_proxy_still_gives_the_right_class(
    client: Client | AsyncClient, gateway: respx.Router
) -> None:
    page = "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
    gateway.post("/chat/completions").respond(502, text=page, headers={"content-type": "text/html"})
    with pytest.raises(InternalServerError) as caught:
        await resolve(
            client.with_options(max_retries=0).chat.completions.create(model="m", messages=USER)
        )
    error = caught.value
    assert error.body is None
    assert error.text == page
    assert "502 Bad Gateway" in str(error)
    assert "text/html" in str(error)


async def test_html_instead_of_json_on_200_is_a_validation_error(
    client: Client | AsyncClient, gateway: respx.Router
) -> None:
    gateway.post("/chat/completions").respond(
        200, text="<html>login</html>", headers={"content-type": "text/html"}
    )
    with pytest.raises(APIResponseValidationError) as caught:
        await resolve(client.chat.completions.create(model="m", messages=USER))
    assert caught.value.body == b"<html>login</html>"
    assert "<html>login</html>" in str(caught.value)


@pytest.mark.parametrize(
    "body",
    [
        b'{"id": "chatcmpl-1", "object": "chat.completion"}',  # no choices
        b'{"id": "chatcmpl-1", "choices": [{"index": 0, "mess',  # truncated
        b"[]",
        b"",
    ],
)
async def test_reply_of_the_wrong_shape_is_a_validation_error(
    client: Client | AsyncClient, gateway: respx.Router, body: bytes
) -> None:
    gateway.post("/chat/completions").respond(
        200, content=body, headers={"content-type": "application/json"}
    )
    with pytest.raises(APIResponseValidationError) as caught:
        await resolve(client.chat.completions.create(model="m", messages=USER))
    assert caught.value.body == body
    assert caught.value.status_code == 200


async def test_missing_choices_names_the_field(
    client: Client | AsyncClient, gateway: respx.Router
) -> None:
    gateway.post("/chat/completions").respond(200, json={"id": "chatcmpl-1"})
    with pytest.raises(APIResponseValidationError, match="choices"):
        await resolve(client.chat.completions.create(model="m", messages=USER))


async def test_connection_errors_and_timeouts(
    client: Client | AsyncClient, gateway: respx.Router
) -> None:
    client = client.with_options(max_retries=0)
    gateway.post("/chat/completions").mock(side_effect=httpx.ConnectError("refused"))
    with pytest.raises(APIConnectionError) as caught:
        await resolve(client.chat.completions.create(model="m", messages=USER))
    assert not isinstance(caught.value, APITimeoutError)
    gateway.post("/chat/completions").mock(side_effect=httpx.ReadTimeout("slow"))
    with pytest.raises(APITimeoutError):
        await resolve(client.chat.completions.create(model="m", messages=USER))


def test_every_error_is_an_aigateway_error() -> None:
    for name in aigateway.errors.__all__:
        obj = getattr(aigateway.errors, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, aigateway.AIGatewayError), name


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_the_mocks_quota_refusal_is_a_permission_denied_error(kind: str) -> None:
    gateway = MockGateway(quota=Quota(storage_bytes=10), rate_limits="unlimited")
    inputs = {"operation": "put", "key": "a", "data": "data:text/plain;base64,eHh4eHh4eHh4eHh4"}
    async with in_process_client(kind, gateway, max_retries=0) as client:
        with pytest.raises(PermissionDeniedError) as caught:
            await resolve(client.run.create("s3/storage", inputs))
    error = caught.value
    assert isinstance(error, APIStatusError)
    assert error.status_code == 403
    assert error.code == "quota_exceeded"
    assert error.error_body is not None
    assert "storage_bytes is 10" in error.error_body.error.message
    assert error.request_id is not None
    assert error.request_id.startswith("req_")


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_422_from_the_mock_is_an_unprocessable_entity_error(kind: str) -> None:
    gateway = MockGateway()
    gateway.faults.fail(422, code="unprocessable_input", message="cannot process this")
    async with in_process_client(kind, gateway, max_retries=0) as client:
        with pytest.raises(UnprocessableEntityError) as caught:
            await resolve(client.chat.completions.create(model="gpt-4o-mini", messages=USER))
    error = caught.value
    assert error.status_code == 422
    assert error.code == "unprocessable_input"
    assert isinstance(error.body, dict)
    assert error.body["error"]["message"] == "cannot process this"
    assert error.request_id is not None
    assert error.attempts == 1  # a 422 is not retried


def drawn_tree() -> dict[str, str | None]:
    """The class tree drawn in aigateway/errors.py's docstring: each class -> its parent."""
    doc = aigateway.errors.__doc__ or ""
    drawing = doc.split("::\n\n", 1)[1].split("\n\n", 1)[0]
    parents: dict[str, str | None] = {}
    path: list[str] = []  # the drawn ancestors of the line being read
    for line in drawing.splitlines():
        found = re.match(r"    ((?:[│ ]   |[├└]── )*)(\w+)", line)
        assert found, f"not a line of the tree: {line!r}"
        depth = len(found.group(1)) // 4
        del path[depth:]
        parents[found.group(2)] = path[-1] if path else None
        path.append(found.group(2))
    return parents


def test_the_tree_drawn_in_the_errors_docstring_is_the_class_tree() -> None:
    """Every exception class of `aigateway.errors` is drawn once, under its first base."""
    drawn = drawn_tree()
    classes = {
        name: obj
        for name, obj in vars(aigateway.errors).items()
        if isinstance(obj, type) and issubclass(obj, Exception)
    }
    assert sorted(drawn) == sorted(classes)
    for name, parent in drawn.items():
        real = classes[name].__bases__[0]
        assert parent == (None if real is Exception else real.__name__), name


def test_every_error_class_is_exported_by_the_errors_module() -> None:
    exported = set(aigateway.errors.__all__)
    for name, obj in vars(aigateway.errors).items():
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert name in exported, name
