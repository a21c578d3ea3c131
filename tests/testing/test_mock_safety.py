"""The mock treats every request as hostile: unguessable keys, accounts kept apart, bounded
bodies and log, a sandboxed SQL service, and rate-limit headers on every reply.

Most tests run against the served mock (real HTTP), as strangers meet it."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from aigateway.testing import MockGateway, MockRequest, MockResponse, ModelSpec, RequestContext

from ._helpers import user

CHAT = {"model": "gpt-4o", "messages": user()}


@contextmanager
def served(gateway: MockGateway, key: str | None = None) -> Iterator[httpx.Client]:
    """An httpx client of the served ``gateway`` (with ``key``, the default account's if None)."""
    headers = {"Authorization": f"Bearer {key or gateway.api_key}"}
    with gateway.serve() as url, httpx.Client(base_url=url, headers=headers, timeout=10) as http:
        yield http


def sql(http: httpx.Client, statement: str, key: str, **inputs: Any) -> httpx.Response:
    body = {"model": "supabase/sql", "inputs": {"sql": statement, **inputs}}
    return http.post("/run", json=body, headers={"Authorization": f"Bearer {key}"})


def error(response: httpx.Response) -> dict[str, Any]:
    body = response.json()
    assert set(body) == {"error"}, body
    assert "Traceback" not in response.text
    return dict(body["error"])


def raw_exchange(url: str, head: bytes, body: bytes = b"") -> bytes:
    """Send ``head`` and ``body`` over a plain socket; the reply's bytes (until the server
    closes or 5 s pass)."""
    host, port = httpx.URL(url).host, httpx.URL(url).port
    with socket.create_connection((host, port or 80), timeout=5) as sock:
        sock.sendall(head + body)
        reply = b""
        while b"\r\n\r\n" not in reply or not reply.rstrip().endswith(b"}"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            reply += chunk
    return reply


# -- keys, file ids, accounts ------------------------------------------------------------------


def image_url(gateway: MockGateway) -> str:
    with httpx.Client(
        transport=gateway.transport(),
        base_url=gateway.base_url,
        headers={"Authorization": f"Bearer {gateway.api_key}"},
    ) as http:
        reply = http.post("/image/generate", json={"model": "flux-schnell", "prompt": "a fox"})
    return str(reply.json()["image_url"])


def test_keys_and_file_ids_are_random_unless_fixed_keys_is_asked_for() -> None:
    first, second = MockGateway(seed=1), MockGateway(seed=1)
    assert first.api_key != second.api_key
    assert first.create_account().key != second.create_account().key
    assert image_url(first) != image_url(second)
    assert len(first.api_key) >= len("mock-") + 32

    fixed = [MockGateway(seed=1, fixed_keys=True) for _ in range(2)]
    assert fixed[0].api_key == fixed[1].api_key
    assert image_url(fixed[0]) == image_url(fixed[1])
    assert MockGateway(seed=2, fixed_keys=True).api_key != fixed[0].api_key


def test_a_served_gateway_keeps_accounts_apart() -> None:
    gateway = MockGateway(seed=1, rate_limits="unlimited")
    owner, other = gateway.api_key, gateway.create_account(credits=0.01).key
    with served(gateway) as http:
        made = http.post("/image/generate", json={"model": "flux-schnell", "prompt": "a fox"})
        file_url = made.json()["image_url"]
        assert http.get(file_url).status_code == 200
        stolen = http.get(file_url, headers={"Authorization": f"Bearer {other}"})
        assert stolen.status_code == 404
        assert error(stolen)["code"] == "file_not_found"

        # storage: another account neither sees the object nor can copy the owner's file
        put = {"operation": "put", "key": "secret", "data": "data:text/plain;base64,aGk="}
        assert http.post("/run", json={"model": "s3/storage", "inputs": put}).status_code == 200
        as_other = {"Authorization": f"Bearer {other}"}
        got = http.post(
            "/run",
            json={"model": "s3/storage", "inputs": {"operation": "get", "key": "secret"}},
            headers=as_other,
        )
        assert error(got)["code"] == "object_not_found"
        listed = http.post(
            "/run", json={"model": "s3/storage", "inputs": {"operation": "list"}}, headers=as_other
        )
        assert listed.json()["output"]["objects"] == []
        copy = {"operation": "put", "key": "mine", "data": str(made.json()["image_url"])}
        copied = http.post("/run", json={"model": "s3/storage", "inputs": copy}, headers=as_other)
        assert error(copied)["code"] == "unfetchable_url"

        # databases: one per account
        assert sql(http, "CREATE TABLE secrets (value TEXT)", owner).status_code == 200
        assert sql(http, "INSERT INTO secrets VALUES ('x')", owner).status_code == 200
        peek = sql(http, "SELECT * FROM secrets", other)
        assert "no such table" in error(peek)["message"]

        # credits: an account without any cannot spend the owner's
        gateway.set_credits(other, 0)
        before = gateway.credits()
        poor = http.post("/chat/completions", json=CHAT, headers=as_other)
        assert poor.status_code == 402
        assert gateway.credits() == before


# -- bodies, content types, errors, the request log -------------------------------------------


def test_a_body_over_the_limit_is_a_413_in_process_and_served() -> None:
    gateway = MockGateway(max_body_bytes=4096)
    assert MockGateway().max_body_bytes == 32 * 1024 * 1024
    big = {"model": "gpt-4o", "messages": user("x" * 5000)}
    with httpx.Client(
        transport=gateway.transport(),
        base_url=gateway.base_url,
        headers={"Authorization": f"Bearer {gateway.api_key}"},
    ) as http:
        reply = http.post("/chat/completions", json=big)
    assert reply.status_code == 413
    assert error(reply)["code"] == "request_too_large"
    assert "4096" in error(reply)["message"]
    with served(gateway) as http:
        assert http.post("/chat/completions", json=big).status_code == 413
        assert http.post("/chat/completions", json=CHAT).status_code == 200
    assert gateway.credits() < 20  # only the small one was answered


def test_the_served_mock_answers_a_declared_huge_body_without_reading_it() -> None:
    gateway = MockGateway()
    with gateway.serve() as url:
        head = (
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\n"
            b"Content-Length: " + str(40 * 1024 * 1024).encode() + b"\r\n\r\n"
        )
        started = time.monotonic()
        reply = raw_exchange(url, head)  # the body is never sent
    assert reply.startswith(b"HTTP/1.1 413 "), reply[:200]
    assert b'"request_too_large"' in reply
    assert b"x-ratelimit-limit" in reply.lower()
    assert time.monotonic() - started < 3
    assert gateway.requests[-1].body == b""


def test_the_served_mock_stops_reading_a_chunked_body_past_the_limit() -> None:
    gateway = MockGateway(max_body_bytes=1024)
    with gateway.serve() as url:
        head = (
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
            b"Authorization: Bearer " + gateway.api_key.encode() + b"\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        chunk = b"400\r\n" + b"x" * 1024 + b"\r\n"
        reply = raw_exchange(url, head, chunk * 2)  # never ends: no last chunk
    assert reply.startswith(b"HTTP/1.1 413 "), reply[:200]
    assert gateway.requests[-1].body == b""  # an oversized body is never logged


def test_json_nested_100000_deep_is_a_400_naming_the_depth_when_served() -> None:
    gateway = MockGateway()
    deep = b"[" * 100_000 + b"]" * 100_000
    with served(gateway) as http:
        for path in ("/chat/completions", "/run", "/image/generate"):
            reply = http.post(path, content=deep, headers={"Content-Type": "application/json"})
            assert reply.status_code == 400, reply.text
            assert "nested deeper than 64 levels" in error(reply)["message"]
            assert "Recursion" not in reply.text
        assert http.post("/chat/completions", json=CHAT).status_code == 200


def test_json_nested_100000_deep_over_the_served_websocket_is_an_error_frame() -> None:
    ws_client = pytest.importorskip("websockets.sync.client")
    gateway = MockGateway()
    with gateway.serve() as url:
        address = url.replace("http://", "ws://") + "/stream"
        with ws_client.connect(address, subprotocols=["Authorization", gateway.api_key]) as ws:
            ws.send("[" * 100_000 + "]" * 100_000)
            frames = [json.loads(frame) for frame in ws]
    assert len(frames) == 1
    assert frames[0]["error"]["status"] == 400
    assert "nested deeper than 64 levels" in frames[0]["error"]["message"]


@pytest.mark.parametrize(
    ("content_type", "status"),
    [
        ("application/json", 200),
        ("application/json; charset=utf-8", 200),
        ("Application/JSON;charset=UTF-8", 200),
        ("application/vnd.api+json", 200),
        (None, 200),
        ("text/plain", 415),
        ("application/x-www-form-urlencoded", 415),
        ("multipart/form-data; boundary=x", 415),
        ("application/jsonp", 415),
    ],
)
def test_json_routes_check_the_content_type(content_type: str | None, status: int) -> None:
    gateway = MockGateway()
    headers = {"Authorization": f"Bearer {gateway.api_key}"}
    if content_type is not None:
        headers["Content-Type"] = content_type
    with httpx.Client(transport=gateway.transport(), base_url=gateway.base_url) as http:
        reply = http.post("/chat/completions", content=json.dumps(CHAT), headers=headers)
    assert ("content-type" in reply.request.headers) == (content_type is not None)
    assert reply.status_code == status, reply.text
    if status == 415:
        assert error(reply)["code"] == "unsupported_media_type"
        assert "application/json" in error(reply)["message"]
        assert reply.headers["x-ratelimit-limit"] == "60"


def test_a_served_415_names_what_is_allowed() -> None:
    gateway = MockGateway()
    with served(gateway) as http:
        reply = http.post(
            "/run",
            content=b"model=tts-1",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        assert reply.status_code == 415
        assert "application/json" in error(reply)["message"]


def test_a_500_tells_nothing_of_the_failure_when_served() -> None:
    gateway = MockGateway()

    def broken(ctx: RequestContext) -> MockResponse:
        raise RuntimeError("password=hunter2 in /srv/secret/path.py")

    gateway.add_route("GET", "/v1/broken", broken)
    with served(gateway) as http:
        reply = http.get("/broken")
    assert reply.status_code == 500
    body = error(reply)
    assert body["code"] == "internal_error"
    assert "hunter2" not in reply.text
    assert "RuntimeError" not in reply.text
    assert reply.headers["x-request-id"] in body["message"]
    assert "x-ratelimit-limit" in reply.headers


def test_the_request_log_is_bounded_and_keeps_no_unknown_key_or_its_body() -> None:
    gateway = MockGateway(max_logged_requests=3)
    with served(gateway) as http:
        for n in range(4):
            http.get("/models", headers={"X-Number": str(n)})
        stranger = {"Authorization": "Bearer sk-real-key-sent-by-mistake"}
        http.post("/chat/completions", json=CHAT, headers=stranger)
    logged = gateway.requests
    assert len(logged) == 3
    assert [r.headers.get("x-number") for r in logged] == ["2", "3", None]
    assert logged[0].headers["authorization"] == f"Bearer {gateway.api_key}"
    assert "authorization" not in logged[-1].headers
    assert logged[-1].body == b""
    assert "sk-real-key" not in repr(logged)
    with pytest.raises(ValueError, match="max_body_bytes"):
        MockGateway(max_body_bytes=0)


def test_the_request_log_keeps_the_last_thousand_by_default() -> None:
    gateway = MockGateway()
    for n in range(1_001):
        gateway.handle(MockRequest.build("GET", f"/v1/models?n={n}"))
    logged = gateway.requests
    assert len(logged) == 1_000
    assert (logged[0].query, logged[-1].query) == ("n=1", "n=1000")


# -- the SQL service ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("statement", "code"),
    [
        ("ATTACH '{path}' AS other", "not_allowed"),
        ("VACUUM INTO '{path}'", "sql_error"),
        ("DETACH main", "not_allowed"),
        ("SELECT load_extension('{path}')", "not_allowed"),
        ("SELECT fts3_tokenizer('simple')", "not_allowed"),
        ("CREATE TEMP TABLE t (a)", "not_allowed"),
        ("CREATE TABLE temp.t (a)", "not_allowed"),
        ("PRAGMA temp_store_directory = '{dir}'", "not_allowed"),
        ("PRAGMA query_only = OFF", "not_allowed"),
        ("BEGIN", "not_allowed"),
        ("COMMIT", "not_allowed"),
        ("END", "not_allowed"),
        ("ROLLBACK", "not_allowed"),
        ("SAVEPOINT s", "not_allowed"),
        ("RELEASE s", "not_allowed"),
        ("SELECT randomblob(10000000)", "sql_error"),
        ("SELECT 1; SELECT 2", "sql_error"),
    ],
)
def test_the_sql_service_refuses_what_leaves_its_sandbox(
    statement: str, code: str, tmp_path: Path
) -> None:
    gateway = MockGateway(rate_limits="unlimited")
    target = tmp_path / "stolen.db"
    with served(gateway) as http:
        key = gateway.api_key
        reply = sql(http, statement.format(path=target, dir=tmp_path), key)
        assert reply.status_code == 400, reply.text
        assert error(reply)["code"] == code
        assert error(reply)["param"] == "inputs.sql"
        # the database is still usable, and nothing was billed
        assert sql(http, "SELECT 1", key).json()["output"]["rows"] == [[1]]
    assert list(tmp_path.iterdir()) == []
    assert len(gateway.charges) == 1


def test_schema_pragmas_and_reads_of_settings_are_allowed() -> None:
    gateway = MockGateway()
    with served(gateway) as http:
        key = gateway.api_key
        assert sql(http, "CREATE TABLE t (a INTEGER, b TEXT)", key).status_code == 200
        info = sql(http, "PRAGMA table_info(t)", key).json()["output"]
        assert [row[1] for row in info["rows"]] == ["a", "b"]
        assert sql(http, "PRAGMA page_size", key).status_code == 200


def test_a_runaway_query_is_stopped_and_rows_are_capped() -> None:
    gateway = MockGateway(rate_limits="unlimited")
    gateway.stores.statement_timeout = 0.2
    forever = (
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
    )
    many = (
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 5000) SELECT x FROM c"
    )
    with served(gateway) as http:
        key = gateway.api_key
        started = time.monotonic()
        stopped = sql(http, forever, key)
        assert time.monotonic() - started < 2
        assert stopped.status_code == 400
        assert error(stopped)["code"] == "statement_timeout"
        gateway.stores.statement_timeout = 10.0  # the rest must not race a loaded machine
        capped = sql(http, many, key)
        assert capped.status_code == 400
        assert "1000 rows" in error(capped)["message"]
        fine = sql(http, many.replace("5000", "1000"), key)
        assert fine.json()["output"]["row_count"] == 1000
        huge_int = sql(http, "SELECT ?", key, params=[10**30])
        assert huge_int.status_code == 400
        assert sql(http, "SELECT 2", key).json()["output"]["rows"] == [[2]]
    assert len(gateway.charges) == 2


def test_a_call_waiting_too_long_for_its_database_is_a_409_and_others_go_on() -> None:
    gateway = MockGateway(rate_limits="unlimited")
    gateway.stores.statement_timeout = 0.1
    other = gateway.create_account().key
    held = gateway.stores.database(gateway.account.id, "supabase/sql").run("SELECT 1", ())
    with served(gateway) as http:
        started = time.monotonic()
        busy = sql(http, "SELECT 2", gateway.api_key)
        assert time.monotonic() - started < 2
        assert busy.status_code == 409
        assert error(busy)["code"] == "busy"
        assert sql(http, "SELECT 3", other).status_code == 200
        held.rollback()
        held.rollback()  # only the first counts
        assert sql(http, "SELECT 4", gateway.api_key).json()["output"]["rows"] == [[4]]


@pytest.mark.anyio
async def test_sixty_hostile_sql_calls_leave_the_served_mock_responsive() -> None:
    gateway = MockGateway(rate_limits="unlimited")
    hostile, other = gateway.api_key, gateway.create_account().key
    statements = ["COMMIT", "BEGIN", "ROLLBACK", "END", "SAVEPOINT a", "RELEASE a"]
    statuses: list[int] = []
    with gateway.serve() as url:
        async with httpx.AsyncClient(base_url=url, timeout=10) as http:

            async def attack(statement: str) -> None:
                body = {"model": "supabase/sql", "inputs": {"sql": statement}}
                reply = await http.post(
                    "/run", json=body, headers={"Authorization": f"Bearer {hostile}"}
                )
                statuses.append(reply.status_code)

            async with anyio.create_task_group() as tasks:
                for n in range(60):
                    tasks.start_soon(attack, statements[n % len(statements)])
            started = time.monotonic()
            as_other = {"Authorization": f"Bearer {other}"}
            chat = await http.post("/chat/completions", json=CHAT, headers=as_other)
            query = await http.post(
                "/run",
                json={"model": "supabase/sql", "inputs": {"sql": "SELECT 1"}},
                headers=as_other,
            )
            elapsed = time.monotonic() - started
            again = await http.post(
                "/run",
                json={"model": "supabase/sql", "inputs": {"sql": "SELECT 3"}},
                headers={"Authorization": f"Bearer {hostile}"},
            )
    assert statuses == [400] * 60
    assert (chat.status_code, query.status_code, again.status_code) == (200, 200, 200)
    assert elapsed < 1.0
    assert again.json()["output"]["rows"] == [[3]]


# -- rate-limit headers on every reply ---------------------------------------------------------


def test_every_reply_carries_rate_limit_headers_in_process() -> None:
    gateway = MockGateway()
    gateway.clock.set(120.0)
    with httpx.Client(transport=gateway.transport(), base_url=gateway.base_url) as http:
        anonymous = http.get("/models")
        wrong = http.get("/models", headers={"Authorization": "Bearer nope"})
        as_owner = {"Authorization": f"Bearer {gateway.api_key}"}
        counted = http.get("/models", headers=as_owner)
        gateway.faults.fail(503)
        injected = http.get("/models", headers=as_owner)
        gateway.faults.fail(429, retry_after=7)
        limited = http.get("/models", headers=as_owner)
        gateway.faults.fail(500, rate_limit_headers=False)
        bare = http.get("/models", headers=as_owner)
    for reply in (anonymous, wrong):
        assert reply.status_code == 401
        assert reply.headers["x-ratelimit-limit"] == "60"
        assert reply.headers["x-ratelimit-remaining"] == "60"  # nothing counted for nobody
        assert reply.headers["x-ratelimit-reset"] == "180"
    assert counted.headers["x-ratelimit-remaining"] == "59"
    assert injected.status_code == 503
    assert injected.headers["x-ratelimit-remaining"] == "59"  # a fault counts no request
    assert injected.headers["x-ratelimit-limit-tokens"] == "90000"
    assert limited.headers["x-ratelimit-remaining"] == "0"
    assert limited.headers["x-ratelimit-reset"] == "127"
    assert not any(name.startswith("x-ratelimit") for name in bare.headers)


def test_every_reply_carries_rate_limit_headers_when_served() -> None:
    gateway = MockGateway(rate_limits="starter")
    with gateway.serve() as url, httpx.Client(base_url=url) as http:
        anonymous = http.post("/chat/completions", json=CHAT)
        gateway.faults.fail(502)
        injected = http.post(
            "/chat/completions", json=CHAT, headers={"Authorization": f"Bearer {gateway.api_key}"}
        )
    assert anonymous.status_code == 401
    assert anonymous.headers["x-ratelimit-limit"] == "60"
    assert anonymous.headers["x-ratelimit-remaining"] == "60"
    reset = int(anonymous.headers["x-ratelimit-reset"])
    assert reset % 60 == 0
    assert 0 < reset - gateway.clock.now() <= 60
    assert injected.status_code == 502
    assert injected.headers["x-ratelimit-remaining"] == "60"


# -- catalogue prices ----------------------------------------------------------------------


@pytest.mark.parametrize("price", [-0.001, float("nan"), float("inf"), True, "0.1"])
def test_a_model_with_a_bad_price_is_refused_when_built(price: Any) -> None:
    with pytest.raises(ValueError, match="price"):
        ModelSpec("m", "me", 0, input_price_per_1k=price)
    with pytest.raises(ValueError, match="price"):
        ModelSpec("m", "me", 0, output_price_per_1k=price)
    assert ModelSpec("m", "me", 0, input_price_per_1k=0).input_price_per_1k == 0
