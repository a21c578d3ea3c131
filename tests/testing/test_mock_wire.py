"""Routing, authentication, headers and the sans-io request/reply values."""

from __future__ import annotations

import re
from collections.abc import Callable

import httpx
import pytest

from aigateway.testing import MockGateway, MockRequest, MockResponse

from ._helpers import user

REQUEST_ID = re.compile(r"^req_[0-9a-f]{24}$")


def test_json_reply_carries_content_type_and_request_id(
    chat: Callable[..., httpx.Response],
) -> None:
    first, second = chat(), chat()
    for response in (first, second):
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"
        assert REQUEST_ID.match(response.headers["x-request-id"])
    assert first.headers["x-request-id"] != second.headers["x-request-id"]


def test_error_replies_carry_request_id_too(client: httpx.Client) -> None:
    response = client.get("/nowhere")
    assert response.headers["content-type"] == "application/json"
    assert REQUEST_ID.match(response.headers["x-request-id"])


def test_request_ids_follow_the_seed() -> None:
    def ids(seed: int) -> list[str]:
        gateway = MockGateway(seed=seed)
        request = MockRequest.build("GET", "/v1/models", api_key=gateway.api_key)
        return [gateway.handle(request).headers["x-request-id"] for _ in range(3)]

    assert ids(1) == ids(1)
    assert ids(1) != ids(2)


def test_requests_are_recorded(gateway: MockGateway, client: httpx.Client) -> None:
    client.post("/chat/completions", json={"model": "gpt-4o", "messages": user()})
    client.get("/models", params={"limit": "3"}, headers={"X-Trace": "abc"})
    first, second = gateway.requests
    assert (first.method, first.path) == ("POST", "/v1/chat/completions")
    assert first.json() == {"model": "gpt-4o", "messages": user()}
    assert first.headers["authorization"] == f"Bearer {gateway.api_key}"
    assert (second.method, second.path, second.query) == ("GET", "/v1/models", "limit=3")
    assert second.params == {"limit": "3"}
    assert second.headers["x-trace"] == "abc"


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/chat/completions"), ("GET", "/models"), ("GET", "/models/gpt-4o")],
)
@pytest.mark.parametrize(
    "authorization", [None, "", "Bearer", "Bearer ", "Basic abc", "Bearer not-a-key", "mock-x"]
)
def test_missing_or_unknown_key_is_401(
    gateway: MockGateway, method: str, path: str, authorization: str | None
) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    with httpx.Client(transport=gateway.transport(), base_url=gateway.base_url) as http:
        response = http.request(
            method, path, headers=headers, json={"model": "gpt-4o", "messages": user()}
        )
    assert response.status_code == 401
    error = response.json()["error"]
    assert error["type"] == "authentication_error"
    assert error["code"] == "invalid_api_key"
    assert "API key" in error["message"]
    assert gateway.charges == []


def test_a_valid_key_in_any_scheme_case_is_accepted(gateway: MockGateway) -> None:
    request = MockRequest.build(
        "GET", "/v1/models", headers={"AUTHORIZATION": f"bearer {gateway.api_key}"}
    )
    assert gateway.handle(request).status == 200


def test_401_body_is_exactly_the_spec_error_shape(gateway: MockGateway) -> None:
    response = gateway.handle(MockRequest.build("GET", "/v1/models"))
    assert response.json() == {
        "error": {
            "message": response.json()["error"]["message"],
            "type": "authentication_error",
            "code": "invalid_api_key",
            "param": None,
        }
    }


@pytest.mark.parametrize(
    "path", ["/nowhere", "/chat", "/chat/completions/extra", "/../models", "/v2/models"]
)
def test_unknown_path_is_404_with_error_body(client: httpx.Client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    assert response.json()["error"]["type"] == "invalid_request_error"


def test_paths_without_the_version_prefix_are_404(gateway: MockGateway) -> None:
    request = MockRequest.build("GET", "/models", api_key=gateway.api_key)
    assert gateway.handle(request).status == 404


def test_a_trailing_slash_is_tolerated(gateway: MockGateway) -> None:
    request = MockRequest.build("GET", "/v1/models/", api_key=gateway.api_key)
    response = gateway.handle(request)
    assert response.status == 200
    assert len(response.json()["data"]) == 11


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("GET", "/chat/completions", "POST"),
        ("PUT", "/chat/completions", "POST"),
        ("POST", "/models", "GET"),
        ("DELETE", "/models/gpt-4o", "GET"),
    ],
)
def test_wrong_method_is_405(client: httpx.Client, method: str, path: str, allowed: str) -> None:
    response = client.request(method, path)
    assert response.status_code == 405
    assert response.headers["allow"] == allowed
    assert response.json()["error"]["code"] == "method_not_allowed"


@pytest.mark.parametrize("body", [b"", b"{", b"not json", b"\xff\xfe", b'{"model": "gpt-4o",}'])
def test_a_body_that_is_not_json_is_400(
    gateway: MockGateway, client: httpx.Client, body: bytes
) -> None:
    response = client.post(
        "/chat/completions", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_json"
    assert response.json()["error"]["type"] == "invalid_request_error"
    assert gateway.charges == []


@pytest.mark.parametrize("body", [b"[]", b"[1, 2]", b'"text"', b"3", b"null", b"true"])
def test_a_json_body_that_is_not_an_object_is_400(client: httpx.Client, body: bytes) -> None:
    response = client.post("/chat/completions", content=body)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_body"


def test_handle_can_be_called_without_http(gateway: MockGateway) -> None:
    request = MockRequest.build(
        "POST",
        "/v1/chat/completions",
        json_body={"model": "gpt-4o", "messages": user()},
        api_key=gateway.api_key,
    )
    response = gateway.handle(request)
    assert isinstance(response, MockResponse)
    assert response.status == 200
    assert not response.is_stream
    assert response.json()["object"] == "chat.completion"


def test_mock_request_normalises_method_and_header_names() -> None:
    request = MockRequest("post", "/v1/x", {"Content-Type": "a", "X-ONE": "b"}, b"{}", "q=1")
    assert request.method == "POST"
    assert dict(request.headers) == {"content-type": "a", "x-one": "b"}
    assert MockRequest.build("GET", "/v1/models?a=1&b=2").params == {"a": "1", "b": "2"}


def test_streamed_reply_value_has_no_single_json_body(gateway: MockGateway) -> None:
    request = MockRequest.build(
        "POST",
        "/v1/chat/completions",
        json_body={"model": "gpt-4o", "messages": user(), "stream": True},
        api_key=gateway.api_key,
    )
    response = gateway.handle(request)
    assert response.is_stream
    with pytest.raises(TypeError):
        response.json()
    assert b"".join(response.body).endswith(b"data: [DONE]\n\n")  # type: ignore[arg-type]


def test_an_internal_failure_is_a_500_error_reply_that_tells_nothing_inside(
    gateway: MockGateway, client: httpx.Client, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(request: object) -> str:
        raise RuntimeError("boom at /secret/path")

    gateway.reply_with(broken)
    response = client.post("/chat/completions", json={"model": "gpt-4o", "messages": user()})
    assert response.status_code == 500
    assert response.json()["error"]["type"] == "server_error"
    assert "boom" not in response.text
    assert "secret" not in response.text
    assert response.headers["x-request-id"] in response.json()["error"]["message"]
    assert "boom at /secret/path" in caplog.text  # the operator's log has it
    assert REQUEST_ID.match(response.headers["x-request-id"])
    assert gateway.charges == []


def test_transport_works_with_any_host(gateway: MockGateway) -> None:
    with httpx.Client(transport=gateway.transport()) as http:
        response = http.get(
            "https://gateway.example/v1/models",
            headers={"Authorization": f"Bearer {gateway.api_key}"},
        )
    assert response.status_code == 200
