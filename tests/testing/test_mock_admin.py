"""The mock's admin API over real HTTP: the token, every endpoint, and its effect as clients
(httpx, the official ``openai`` SDK) see it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from aigateway import APIConnectionError
from aigateway.testing import RATE_LIMIT_PRESETS, MockGateway, MockRequest

from ._helpers import user

openai = pytest.importorskip("openai")

HELLO: Any = user("hi")
ROUTES = [
    ("GET", "/_mock/faults"),
    ("POST", "/_mock/faults"),
    ("DELETE", "/_mock/faults"),
    ("GET", "/_mock/pacing"),
    ("PUT", "/_mock/pacing"),
    ("GET", "/_mock/clock"),
    ("POST", "/_mock/clock"),
    ("GET", "/_mock/accounts"),
    ("POST", "/_mock/accounts"),
    ("GET", "/_mock/accounts/KEY"),
    ("PUT", "/_mock/accounts/KEY/credits"),
    ("PUT", "/_mock/rate-limits"),
    ("POST", "/_mock/replies"),
    ("GET", "/_mock/requests"),
]


def admin_client(root: str, token: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return httpx.Client(base_url=root, headers=headers)


@pytest.fixture
def served(gateway: MockGateway) -> Iterator[str]:
    """The site root of the served gateway (``http://127.0.0.1:<port>``)."""
    with gateway.serve(clock="manual") as url:  # the tests move time themselves
        yield url.removesuffix("/v1")


@pytest.fixture
def admin(gateway: MockGateway, served: str) -> Iterator[httpx.Client]:
    with admin_client(served, gateway.admin_token) as client:
        yield client


@pytest.fixture
def api(gateway: MockGateway, served: str) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {gateway.api_key}"}
    with httpx.Client(base_url=served + "/v1", headers=headers) as client:
        yield client


@pytest.fixture
def sdk(gateway: MockGateway, served: str) -> Iterator[Any]:
    client = openai.OpenAI(base_url=served + "/v1", api_key=gateway.api_key, max_retries=0)
    yield client
    client.close()


@pytest.fixture(scope="module")
def shared() -> Iterator[tuple[MockGateway, str]]:
    """One served gateway for the checks that change nothing (refusals, bad bodies)."""
    gateway = MockGateway()
    with gateway.serve() as url:
        yield gateway, url.removesuffix("/v1")


def test_each_gateway_has_its_own_unguessable_token() -> None:
    tokens = {MockGateway(seed=1).admin_token for _ in range(3)}
    assert len(tokens) == 3  # not derived from the seed
    assert all(token and len(token) >= 32 for token in tokens)


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_every_endpoint_refuses_a_missing_or_wrong_token(
    shared: tuple[MockGateway, str], method: str, path: str
) -> None:
    gateway, root = shared
    assert gateway.admin_token is not None
    path = path.replace("KEY", gateway.api_key)
    body = {"kind": "fail"} if method != "GET" else None
    wrong = gateway.admin_token[:-1] + ("x" if gateway.admin_token[-1] != "x" else "y")
    answers = {}
    for name, headers in {
        "none": {},
        "basic": {"Authorization": f"Basic {gateway.admin_token}"},
        "wrong": {"Authorization": f"Bearer {wrong}"},
        "api key": {"Authorization": f"Bearer {gateway.api_key}"},
    }.items():
        reply = httpx.request(method, root + path, json=body, headers=headers)
        answers[name] = (reply.status_code, reply.json()["error"]["code"])
    assert answers == {
        "none": (401, "missing_admin_token"),
        "basic": (401, "missing_admin_token"),
        "wrong": (403, "invalid_admin_token"),
        "api key": (403, "invalid_admin_token"),
    }
    assert gateway.faults.pending == []
    assert gateway.requests == []  # refused admin requests are not traffic either


def test_no_token_turns_the_admin_api_off(gateway: MockGateway, served: str) -> None:
    gateway.admin_token = None
    with admin_client(served, "None") as client:
        assert client.get("/_mock/clock").status_code == 403


def test_a_fault_set_over_http_reaches_the_openai_sdk(
    gateway: MockGateway, admin: httpx.Client, sdk: Any
) -> None:
    queued = admin.post(
        "/_mock/faults",
        json={"kind": "fail", "status": 429, "times": 1, "path": "/chat/completions",
              "retry_after": 7},
    )  # fmt: skip
    assert queued.status_code == 201
    assert queued.json()["data"] == [
        {"kind": "fail", "times": 1, "path": "/chat/completions", "status": 429}
    ]
    assert sdk.models.list().data  # another path: not faulted
    with pytest.raises(openai.RateLimitError) as caught:
        sdk.chat.completions.create(model="gpt-4o", messages=HELLO)
    assert caught.value.status_code == 429
    assert caught.value.response.headers["retry-after"] == "7"
    assert sdk.chat.completions.create(model="gpt-4o", messages=HELLO).choices
    assert admin.get("/_mock/faults").json()["data"] == []


def test_a_reply_scripted_over_http_is_what_the_openai_sdk_gets(
    admin: httpx.Client, sdk: Any
) -> None:
    call = {"name": "lookup", "arguments": {"term": "gateway"}}
    scripted = admin.post("/_mock/replies", json={"content": "Scripted!", "tool_calls": [call]})
    assert scripted.status_code == 201
    assert scripted.json()["finish_reason"] is None  # the default applies: tool_calls
    assert admin.post("/_mock/replies", json={"content": "Second."}).status_code == 201
    first = sdk.chat.completions.create(model="gpt-4o", messages=HELLO)
    message = first.choices[0].message
    assert message.content == "Scripted!"
    assert message.tool_calls[0].function.name == "lookup"
    assert json.loads(message.tool_calls[0].function.arguments) == {"term": "gateway"}
    assert first.choices[0].finish_reason == "tool_calls"
    second = sdk.chat.completions.create(model="gpt-4o", messages=HELLO)
    assert second.choices[0].message.content == "Second."


@pytest.mark.parametrize(
    ("body", "view"),
    [
        ({"kind": "fail", "status": 503, "times": 2},
         {"kind": "fail", "times": 2, "path": None, "status": 503}),
        ({"kind": "drop", "after_processing": True},
         {"kind": "drop", "times": 1, "path": None, "after_processing": True}),
        ({"kind": "drop_mid_stream", "after_events": 3, "path": "/v1/chat/completions"},
         {"kind": "drop_mid_stream", "times": 1, "path": "/v1/chat/completions",
          "after_events": 3}),
        ({"kind": "truncate", "times": 4}, {"kind": "truncate", "times": 4, "path": None}),
        ({"kind": "malformed", "body": "<html>oops</html>", "status": 502},
         {"kind": "malformed", "times": 1, "path": None, "status": 502,
          "content_type": "text/html"}),
        ({"kind": "latency", "seconds": 2.5},
         {"kind": "latency", "times": None, "path": None, "seconds": 2.5,
          "between_chunks": False}),
        ({"kind": "latency", "seconds": 1, "between_chunks": True, "times": 2},
         {"kind": "latency", "times": 2, "path": None, "seconds": 1.0, "between_chunks": True}),
    ],
)  # fmt: skip
def test_every_kind_of_fault_is_queued_as_the_fault_plan_would(
    shared: tuple[MockGateway, str], body: dict[str, Any], view: dict[str, Any]
) -> None:
    gateway, root = shared
    gateway.faults.clear()
    with admin_client(root, gateway.admin_token) as admin:
        assert admin.post("/_mock/faults", json=body).json()["data"] == [view]
        assert admin.get("/_mock/faults").json()["data"] == [view]
        (fault,) = gateway.faults.pending
        if body["kind"] == "malformed":
            assert fault.body == b"<html>oops</html>"
        assert admin.delete("/_mock/faults").json()["data"] == []
    assert gateway.faults.pending == []


def test_admin_requests_are_not_faulted_limited_billed_or_logged(
    gateway: MockGateway, admin: httpx.Client, api: httpx.Client
) -> None:
    gateway.rate_limits.set("free_plan")  # 10 requests a minute
    admin.post("/_mock/faults", json={"kind": "fail", "status": 503})
    for _ in range(15):
        assert admin.get("/_mock/clock").status_code == 200
    assert len(gateway.faults.pending) == 1  # admin requests did not use it up
    assert gateway.requests == []
    assert gateway.charges == []
    assert admin.get("/_mock/requests").json()["data"] == []
    assert api.get("/models").status_code == 503  # an API request gets it


def test_admin_requests_do_not_change_the_request_ids_of_the_api() -> None:
    def chat_request_id(gateway: MockGateway, admin_calls: int) -> str:
        token = {"authorization": f"Bearer {gateway.admin_token}"}
        for _ in range(admin_calls):
            gateway.handle(MockRequest("GET", "/_mock/clock", token))
        reply = gateway.handle(MockRequest.build("GET", "/v1/models", api_key=gateway.api_key))
        return reply.headers["x-request-id"]

    assert chat_request_id(MockGateway(seed=3), 0) == chat_request_id(MockGateway(seed=3), 5)


def test_pacing(gateway: MockGateway, admin: httpx.Client) -> None:
    sleep = gateway.stream_pacing.sleep
    assert admin.get("/_mock/pacing").json() == {"time_to_first_token": 0.0, "token_delay": 0.0}
    changed = admin.put("/_mock/pacing", json={"time_to_first_token": 0.2, "token_delay": 0.01})
    assert changed.json() == {"time_to_first_token": 0.2, "token_delay": 0.01}
    assert admin.put("/_mock/pacing", json={"token_delay": 0}).json()["time_to_first_token"] == 0.2
    assert gateway.stream_pacing.time_to_first_token == 0.2
    assert gateway.stream_pacing.token_delay == 0.0
    assert gateway.stream_pacing.sleep is sleep  # the rest of the pacing is kept


def test_clock(gateway: MockGateway, admin: httpx.Client) -> None:
    start = gateway.clock.now()
    assert admin.get("/_mock/clock").json() == {"now": start}
    assert admin.post("/_mock/clock", json={"advance": 60}).json() == {"now": start + 60}
    assert admin.post("/_mock/clock", json={"set": 1_800_000_000}).json() == {"now": 1.8e9}
    assert gateway.clock.now() == 1.8e9


def test_accounts(gateway: MockGateway, admin: httpx.Client, served: str) -> None:
    created = admin.post("/_mock/accounts", json={"credits": 5})
    assert created.status_code == 201
    account = created.json()
    assert account.keys() == {"id", "key", "credits"}
    assert account["credits"] == 5.0
    assert gateway.credits(account["key"]) == 5.0
    listed = admin.get("/_mock/accounts").json()["data"]
    assert [a["key"] for a in listed] == [gateway.api_key, account["key"]]
    assert admin.get(f"/_mock/accounts/{account['key']}").json() == account
    emptied = admin.put(f"/_mock/accounts/{account['key']}/credits", json={"credits": 0})
    assert emptied.json()["credits"] == 0.0
    sdk = openai.OpenAI(base_url=served + "/v1", api_key=account["key"], max_retries=0)
    with sdk, pytest.raises(openai.APIStatusError) as caught:
        sdk.chat.completions.create(model="gpt-4o", messages=HELLO)
    assert caught.value.status_code == 402
    fixed = admin.post("/_mock/accounts", json={"key": "sk-test-fixed"}).json()
    assert fixed["credits"] == 20.0
    assert gateway.ledger.account("sk-test-fixed") is not None
    again = admin.post("/_mock/accounts", json={"key": "sk-test-fixed"})
    assert (again.status_code, again.json()["error"]["code"]) == (409, "key_exists")
    assert admin.get("/_mock/accounts/nobody").status_code == 404
    assert admin.put("/_mock/accounts/nobody/credits", json={"credits": 1}).status_code == 404
    assert admin.put(f"/_mock/accounts/{account['key']}", json={"credits": 1}).status_code == 404


def test_rate_limits(gateway: MockGateway, admin: httpx.Client, api: httpx.Client) -> None:
    other = gateway.create_account()
    changed = admin.put("/_mock/rate-limits", json={"preset": "free_plan", "key": gateway.api_key})
    assert changed.json()["limits"]["requests_per_minute"] == 10
    assert gateway.rate_limits.limits(gateway.api_key) == RATE_LIMIT_PRESETS["free_plan"]
    assert gateway.rate_limits.limits(other.key) == RATE_LIMIT_PRESETS["free"]
    statuses = [api.get("/models").status_code for _ in range(11)]
    assert statuses == [200] * 10 + [429]
    admin.post("/_mock/clock", json={"advance": 60})
    assert api.get("/models").status_code == 200
    assert admin.put("/_mock/rate-limits", json={"preset": "unlimited"}).json()["key"] is None
    assert gateway.rate_limits.limits(other.key) == RATE_LIMIT_PRESETS["unlimited"]
    unknown = admin.put("/_mock/rate-limits", json={"preset": "free", "key": "nobody"})
    assert (unknown.status_code, unknown.json()["error"]["param"]) == (404, "key")


def test_the_request_log(gateway: MockGateway, admin: httpx.Client, api: httpx.Client) -> None:
    ok = api.post("/chat/completions", json={"model": "gpt-4o", "messages": HELLO})
    missing = api.get("/nowhere")
    admin.get("/_mock/clock")
    log = admin.get("/_mock/requests")
    assert log.json()["data"] == [
        {"method": "POST", "path": "/v1/chat/completions", "status": 200,
         "request_id": ok.headers["x-request-id"], "time": gateway.clock.now(),
         "received": gateway.clock.now(), "unknown_fields": []},
        {"method": "GET", "path": "/v1/nowhere", "status": 404,
         "request_id": missing.headers["x-request-id"], "time": gateway.clock.now(),
         "received": gateway.clock.now(), "unknown_fields": []},
    ]  # fmt: skip
    assert gateway.api_key not in log.text
    assert "uthorization" not in log.text
    assert admin.get("/_mock/requests", params={"limit": 1}).json()["data"][0]["status"] == 404
    for bad in ("0", "1001", "x", "-1"):
        refused = admin.get("/_mock/requests", params={"limit": bad})
        assert (refused.status_code, refused.json()["error"]["param"]) == (400, "limit")


def test_a_dropped_request_is_logged_without_a_status() -> None:
    gateway = MockGateway()
    gateway.faults.drop()
    with gateway.client(max_retries=0) as client, pytest.raises(APIConnectionError):
        client.models.list()
    token = {"authorization": f"Bearer {gateway.admin_token}"}
    log = gateway.handle(MockRequest("GET", "/_mock/requests", token)).json()["data"]
    assert [(entry["path"], entry["status"]) for entry in log] == [("/v1/models", None)]


@pytest.mark.parametrize(
    ("method", "path", "body", "param", "says"),
    [
        ("POST", "/_mock/faults", {}, "kind", "fail, drop, drop_mid_stream"),
        ("POST", "/_mock/faults", {"kind": "explode"}, "kind", "unknown kind"),
        ("POST", "/_mock/faults", {"kind": "fail", "status": 200}, "status", "400 to 599"),
        ("POST", "/_mock/faults", {"kind": "fail", "status": "503"}, "status", "integer"),
        ("POST", "/_mock/faults", {"kind": "fail", "times": 0}, "times", "from 1"),
        ("POST", "/_mock/faults", {"kind": "drop", "seconds": 1}, "seconds", "after_processing"),
        ("POST", "/_mock/faults", {"kind": "latency"}, "seconds", "required"),
        ("POST", "/_mock/faults", {"kind": "latency", "seconds": -1}, "seconds", "0 to 3600"),
        ("POST", "/_mock/faults", {"kind": "fail", "path": "chat"}, "path", "relative to /v1"),
        ("PUT", "/_mock/pacing", {"token_delay": -0.1}, "token_delay", "0 to 60"),
        ("PUT", "/_mock/pacing", {"token_delay": True}, "token_delay", "number"),
        ("PUT", "/_mock/pacing", {"speed": 2}, "speed", "time_to_first_token, token_delay"),
        ("POST", "/_mock/clock", {}, "advance", "exactly one"),
        ("POST", "/_mock/clock", {"advance": 1, "set": 2}, "advance", "exactly one"),
        ("POST", "/_mock/clock", {"advance": -5}, "advance", "forward"),
        ("POST", "/_mock/accounts", {"credits": -1}, "credits", ">= 0"),
        ("POST", "/_mock/accounts", {"credits": "5"}, "credits", "number"),
        ("POST", "/_mock/accounts", {"key": "has space"}, "key", "letters, digits"),
        ("PUT", "/_mock/accounts/KEY/credits", {}, "credits", "required"),
        ("PUT", "/_mock/rate-limits", {"preset": "gold"}, "preset", "free, paid, free_plan"),
        ("PUT", "/_mock/rate-limits", {}, "preset", "required"),
        ("POST", "/_mock/replies", {"tool_calls": [{"arguments": {}}]}, "tool_calls", "name"),
        ("POST", "/_mock/replies", {"tool_calls": "f"}, "tool_calls", "list"),
        ("POST", "/_mock/replies", {"content": 5}, "content", "string"),
        ("POST", "/_mock/replies", {"finish_reason": ""}, "finish_reason", "stop"),
    ],
)
def test_a_bad_body_is_a_400_naming_the_field(
    shared: tuple[MockGateway, str],
    method: str,
    path: str,
    body: dict[str, Any],
    param: str,
    says: str,
) -> None:
    gateway, root = shared
    with admin_client(root, gateway.admin_token) as client:
        reply = client.request(method, path.replace("KEY", gateway.api_key), json=body)
    error = reply.json()["error"]
    assert (reply.status_code, error["param"]) == (400, param), error
    assert param in error["message"], error["message"]
    assert says in error["message"], error["message"]
    assert gateway.faults.pending == []


@pytest.mark.parametrize(
    ("content", "code"), [(b"{not json", "invalid_json"), (b"[1, 2]", "invalid_body")]
)
def test_a_body_that_is_not_a_json_object_is_a_400(
    shared: tuple[MockGateway, str], content: bytes, code: str
) -> None:
    gateway, root = shared
    with admin_client(root, gateway.admin_token) as client:
        reply = client.post("/_mock/faults", content=content)
    assert (reply.status_code, reply.json()["error"]["code"]) == (400, code)
