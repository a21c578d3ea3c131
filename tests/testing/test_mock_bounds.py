"""Bounded and fair whatever one key sends: each attack against the served mock, on a real
socket, with sizes just over the limits; the served process's memory read in a loop."""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from aigateway import cli
from aigateway.testing import (
    ConnectionLimits,
    MockGateway,
    MockRequest,
    Quota,
    RequestContext,
    ServiceSpec,
)
from aigateway.testing._core.idempotency import IdempotencyStore
from aigateway.testing._core.wire import MAX_ERROR_MESSAGE_CHARS, MockResponse, json_response
from aigateway.testing._serving.connections import BodyBudget, GuardedConnection

from ._helpers import user

CHAT = {"model": "gpt-4o", "messages": user()}
QUICK = ConnectionLimits(
    keep_alive=0.3, request_head=0.3, request_body=0.3, websocket_idle=0.3, per_client=3
)
"""Deadlines short enough for tests."""


@contextmanager
def served(gateway: MockGateway, **options: Any) -> Iterator[httpx.Client]:
    """An httpx client of the served ``gateway``, with its default key."""
    headers = {"Authorization": f"Bearer {gateway.api_key}"}
    with (
        gateway.serve(**options) as url,
        httpx.Client(base_url=url, headers=headers, timeout=10) as http,
    ):
        yield http


def error(response: httpx.Response) -> dict[str, Any]:
    body = response.json()
    assert set(body) == {"error"}, body
    return dict(body["error"])


def run(http: httpx.Client, model: str, **inputs: Any) -> httpx.Response:
    """POST /run with the client's key."""
    return http.post("/run", json={"model": model, "inputs": inputs})


def data_url(size: int, mime: str = "application/octet-stream") -> str:
    return f"data:{mime};base64," + base64.b64encode(b"x" * size).decode()


def address(url: str) -> tuple[str, int]:
    parsed = httpx.URL(url)
    return parsed.host, parsed.port or 80


def closed_within(sock: socket.socket, seconds: float) -> bytes | None:
    """What the server sent before closing ``sock`` within ``seconds`` (None: still open)."""
    sock.settimeout(seconds)
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except TimeoutError:
        return None
    except ConnectionResetError:
        pass
    return received


def first_reply(sock: socket.socket, seconds: float) -> bytes | None:
    """The first bytes the server sends on ``sock`` within ``seconds`` (None: nothing)."""
    sock.settimeout(seconds)
    try:
        return sock.recv(65536)
    except TimeoutError:
        return None


# -- the request log -----------------------------------------------------------------------


def test_the_log_keeps_a_cut_body_and_only_for_requests_that_reached_their_route() -> None:
    gateway = MockGateway(rate_limits="free_plan", max_logged_body_bytes=64)
    long_chat = {"model": "gpt-4o", "messages": user("x" * 500)}
    with served(gateway) as http:
        assert http.post("/chat/completions", json=long_chat).status_code == 200
        stranger = {"Authorization": "Bearer sk-not-an-account"}
        assert http.post("/chat/completions", json=long_chat, headers=stranger).status_code == 401
        for _ in range(9):
            http.get("/models")
        limited = http.post("/chat/completions", json=long_chat)
        assert limited.status_code == 429
    first, unknown, *_, refused = gateway.requests
    assert len(first.body) == 64
    assert first.body_cut
    assert first.body_size == len(json.dumps(long_chat, separators=(",", ":")))
    with pytest.raises(ValueError, match="only the first 64 of the body's"):
        first.json()
    assert (unknown.body, unknown.body_cut) == (b"", True)
    assert "authorization" not in unknown.headers
    assert (refused.body, refused.body_cut) == (b"", True)  # over its rate limit: no body
    assert refused.headers["authorization"] == f"Bearer {gateway.api_key}"
    whole = MockRequest.build("GET", "/v1/models")
    assert not whole.body_cut
    assert whole.body_size == 0


def test_the_log_keeps_the_body_of_a_faulted_or_replayed_request() -> None:
    """Neither was refused: a test reads what its client sent before a fault it injected,
    and what a retry sent again under the same idempotency key."""
    gateway = MockGateway(rate_limits="unlimited")
    gateway.faults.drop(times=1)
    gateway.faults.fail(429, times=1)
    request = MockRequest.build(
        "POST",
        "/v1/chat/completions",
        json_body=CHAT,
        api_key=gateway.api_key,
        headers={"idempotency-key": "k1"},
    )
    statuses = [gateway.handle(request).status for _ in range(4)]
    assert statuses == [0, 429, 200, 200]
    assert [request.json() for request in gateway.requests] == [CHAT] * 4
    assert len(gateway.charges) == 1  # the last one was a replay


# -- quotas --------------------------------------------------------------------------------


def test_storage_over_quota_is_a_403_and_deleting_frees_room() -> None:
    gateway = MockGateway(quota=Quota(storage_bytes=1_000), rate_limits="unlimited")
    with served(gateway) as http:
        put = {"operation": "put", "data": data_url(600)}
        assert run(http, "s3/storage", key="a", **put).status_code == 200
        before = gateway.credits()
        over = run(http, "s3/storage", key="b", **put)
        assert over.status_code == 403
        body = error(over)
        assert body["code"] == "quota_exceeded"
        assert "storage_bytes is 1000, 600 used, this call adds 600" in body["message"]
        assert gateway.credits() == before  # refused before it was billed
        assert run(http, "s3/storage", key="a", **put).status_code == 200  # written over
        assert gateway.files.usage(gateway.account.id) == (1, 600)
        assert run(http, "s3/storage", operation="delete", key="a").json()["output"]["deleted"]
        assert gateway.files.usage(gateway.account.id) == (0, 0)
        assert run(http, "s3/storage", key="b", **put).status_code == 200


def test_service_files_count_towards_the_quota_and_delete_frees_them() -> None:
    gateway = MockGateway(quota=Quota(files=2), rate_limits="unlimited")
    with served(gateway) as http:
        made = http.post("/image/generate", json={"model": "flux-schnell", "prompt": "a fox"})
        assert made.status_code == 200
        before = gateway.credits()
        over = run(http, "flux-schnell", prompt="foxes", n=2)
        assert error(over)["code"] == "quota_exceeded"
        assert "files is 2, 1 used, this call adds 2" in error(over)["message"]
        assert gateway.credits() == before
        assert gateway.files.usage(gateway.account.id)[0] == 1  # nothing of the refused call
        file_id = made.json()["image_url"].rpartition("/")[2]
        assert http.delete(f"/files/{file_id}").json() == {
            "id": file_id,
            "object": "file",
            "deleted": True,
        }
        assert http.get(f"/files/{file_id}").status_code == 404
        assert error(http.delete(f"/files/{file_id}"))["code"] == "file_not_found"
        assert run(http, "flux-schnell", prompt="foxes", n=2).status_code == 200


def test_databases_are_counted_and_bounded_by_the_quota() -> None:
    gateway = MockGateway(quota=Quota(databases=1, database_bytes=128 * 1024))
    gateway.services.add(ServiceSpec("neon/sql", "database", 0.0005))
    fill = (
        "INSERT INTO t SELECT randomblob(50000) FROM (WITH RECURSIVE c(x) AS "
        "(SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 4) SELECT x FROM c)"
    )
    with served(gateway) as http:
        assert run(http, "supabase/sql", sql="CREATE TABLE t (b BLOB)").status_code == 200
        second = run(http, "neon/sql", sql="SELECT 1")
        assert error(second)["code"] == "quota_exceeded"
        assert "databases is 1" in error(second)["message"]
        full = run(http, "supabase/sql", sql=fill)
        assert full.status_code == 403
        assert error(full)["code"] == "quota_exceeded"
        assert "131072 bytes" in error(full)["message"]
        assert run(http, "supabase/sql", sql="INSERT INTO t VALUES (1)").status_code == 200
        assert run(http, "supabase/sql", sql="DELETE FROM t").status_code == 200
        fill_half = fill.replace("LIMIT 4", "LIMIT 1")
        assert run(http, "supabase/sql", sql=fill_half).status_code == 200  # deleting freed


def test_quotas_are_set_per_account_and_by_the_admin_api() -> None:
    gateway = MockGateway()
    other = gateway.create_account()
    gateway.quotas.set(Quota(files=7), other)
    assert gateway.quotas.of(other.key).files == 7
    assert gateway.quotas.of(gateway.account).files == Quota().files
    admin = {"Authorization": f"Bearer {gateway.admin_token}"}
    with (
        gateway.serve() as url,
        httpx.Client(base_url=url.removesuffix("/v1"), headers=admin) as http,
    ):
        changed = http.put(f"/_mock/accounts/{gateway.api_key}/quota", json={"files": 3})
        assert changed.status_code == 200, changed.text
        view = changed.json()
        assert view["quota"]["files"] == 3
        assert view["own"] is True
        assert view["usage"] == {"files": 0, "storage_bytes": 0, "databases": 0}
        assert http.get(f"/_mock/accounts/{gateway.api_key}/quota").json() == view
        default = http.put("/_mock/quota", json={"storage_bytes": 2048}).json()
        assert default["storage_bytes"] == 2048
        assert default["files"] == Quota().files
        assert gateway.quotas.of(gateway.create_account()).storage_bytes == 2048
        bad = http.put("/_mock/quota", json={"files": -1, "mystery": 1})
        assert bad.status_code == 400
        assert "files" in error(bad)["message"]
        assert http.get("/_mock/accounts/nobody/quota").status_code == 404
    with pytest.raises(ValueError, match="files is an integer >= 0"):
        Quota(files=-1)


def test_idempotency_keys_of_an_account_are_bounded() -> None:
    gateway = MockGateway()
    store = IdempotencyStore(gateway.clock, max_keys=2, max_bytes=100)
    request = MockRequest.build("POST", "/v1/x", json_body={})
    for key in ("a", "b", "c"):
        assert store.begin("acct", key, request) is None
        store.finish("acct", key, json_response(200, {"key": key}))
    assert len(store) == 2
    assert store.begin("acct", "a", request) is None  # forgotten: performed again
    store.finish("acct", "a", json_response(200, {"big": "x" * 200}))
    assert store.begin("acct", "a", request) is None  # too large to be remembered
    replayed = store.begin("acct", "c", request)
    assert replayed is not None
    assert replayed.headers["idempotent-replayed"] == "true"


# -- bounded replies and inputs ------------------------------------------------------------


def test_search_refuses_a_long_query_and_never_repeats_it_whole() -> None:
    gateway = MockGateway(rate_limits="unlimited")
    with served(gateway) as http:
        long = run(http, "tavily/search", query="q" * 2_001)
        assert long.status_code == 400
        assert error(long) == {
            "message": "inputs.query: at most 2000 characters, got 2001",
            "type": "invalid_request_error",
            "code": "input_too_long",
            "param": "inputs.query",
        }
        longest = run(http, "tavily/search", query="word " * 400, num_results=20)
        assert longest.status_code == 200
        assert len(longest.content) < 2_000 + 20 * 400  # the query once, each result a bit
        titles = [result["title"] for result in longest.json()["output"]["results"]]
        assert all(len(title) < 150 for title in titles)


@pytest.mark.parametrize(
    ("model", "inputs", "code", "says"),
    [
        ("firecrawl/scrape", {"url": "https://x.example/" + "a" * 2_048}, "input_too_long", "2048"),
        ("resend/email", {"to": "a@b.co", "subject": "s" * 1_001}, "input_too_long", "1000"),
        (
            "stripe/payments",
            {"amount": 10**12 + 1, "currency": "usd"},
            "invalid_parameter",
            "at most",
        ),
        ("socialdata/profile", {"handle": "h" * 101}, "input_too_long", "100"),
        (
            "llamaparse/parse",
            {"file": data_url(1024 * 1024 + 1, "text/plain")},
            "file_too_large",
            "1048576",
        ),
    ],
)
def test_inputs_over_what_a_service_takes_are_400s_naming_the_limit(
    model: str, inputs: dict[str, Any], code: str, says: str
) -> None:
    gateway = MockGateway(rate_limits="unlimited")
    with served(gateway) as http:
        reply = run(http, model, **inputs)
    assert reply.status_code == 400, reply.text
    assert error(reply)["code"] == code
    assert says in error(reply)["message"]
    assert not gateway.charges


def test_an_error_message_quoting_a_long_value_is_cut() -> None:
    gateway = MockGateway()
    with served(gateway) as http:
        reply = http.post("/chat/completions", json={**CHAT, "model": "m" * 100_000})
        service = run(http, "s" * 100_000, prompt="x")
    assert reply.status_code == 404
    assert len(error(reply)["message"]) <= MAX_ERROR_MESSAGE_CHARS
    assert len(error(service)["message"]) < 300


def test_a_prompt_far_over_the_context_window_is_refused_without_counting_it() -> None:
    gateway = MockGateway()
    one_word = {"model": "gpt-4o", "messages": user("x" * (128_000 * 32 + 1))}
    with served(gateway) as http:
        started = time.monotonic()
        reply = http.post("/chat/completions", json=one_word)
    assert time.monotonic() - started < 2
    assert error(reply)["code"] == "context_length_exceeded"
    assert "more than 128000 tokens" in error(reply)["message"]


# -- numbers and JSON ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b'{"model": "gpt-4o", "max_tokens": ' + b"9" * 101 + b"}", "more than 100 characters"),
        (b'{"model": "gpt-4o", "temperature": 1e999}', "beyond a float's range"),
        (b'{"model": "gpt-4o", "temperature": NaN}', "NaN is not JSON"),
        (b"[" + b"0," * 100_000 + b"0]", "more than 100000 values"),
    ],
)
def test_numbers_and_values_are_bounded_before_they_are_converted(body: bytes, says: str) -> None:
    gateway = MockGateway()
    with served(gateway) as http:
        reply = http.post(
            "/chat/completions", content=body, headers={"Content-Type": "application/json"}
        )
    assert reply.status_code == 400
    assert error(reply)["code"] == "invalid_json"
    assert says in error(reply)["message"]


def test_an_image_size_of_5000_digits_is_a_400() -> None:
    gateway = MockGateway()
    with served(gateway) as http:
        reply = http.post(
            "/image/generate",
            json={"model": "flux-schnell", "prompt": "a fox", "size": "1" * 5_000 + "x1"},
        )
    assert reply.status_code == 400
    assert error(reply)["code"] == "size_too_large"
    assert "2048x2048" in error(reply)["message"]


def test_a_500_is_logged_with_its_traceback_and_request_id_on_stderr(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(ctx: RequestContext) -> MockResponse:
        raise RuntimeError("the handler broke")

    monkeypatch.setattr("aigateway.testing._gateway.list_models", broken)
    seen: dict[str, str] = {}

    def one_request_then_ctrl_c() -> None:
        out = capsys.readouterr().out
        url = out.split("serving at ")[1].split()[0]
        key = out.split("credits): ")[1].split()[0]
        reply = httpx.get(f"{url}/models", headers={"Authorization": f"Bearer {key}"})
        seen["request id"] = reply.headers["x-request-id"]
        seen["status"] = str(reply.status_code)
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "wait_until_interrupted", one_request_then_ctrl_c)
    assert cli.main(["mock", "serve", "--port", "0"]) == 0
    err = capsys.readouterr().err
    assert seen["status"] == "500"
    assert f"failed to answer request {seen['request id']}" in err
    assert "Traceback" in err
    assert "RuntimeError: the handler broke" in err


# -- the SQL sandbox -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("statement", "code"),
    [
        ("SELECT printf('%.*c', 1000000000, 'a')", "value_too_large"),
        ("SELECT format('%1000000000d', 1)", "value_too_large"),
        ("SELECT replace(printf('%.*c', 600000, 'a'), 'a', 'aa')", "value_too_large"),
        ("SELECT 'a' LIKE '" + "%" * 101 + "'", "sql_error"),
        ("SELECT " + "(" * 101 + "1" + ")" * 101, "sql_error"),
        ("SELECT zeroblob(1048577)", "sql_error"),
    ],
)
def test_the_sql_sandbox_refuses_what_would_pass_its_limits(statement: str, code: str) -> None:
    gateway = MockGateway(rate_limits="unlimited")
    with served(gateway) as http:
        started = time.monotonic()
        reply = run(http, "supabase/sql", sql=statement)
        assert time.monotonic() - started < 2
    assert reply.status_code == 400, reply.text
    assert error(reply)["code"] == code


def test_quadratic_functions_are_linear_in_the_sandbox() -> None:
    gateway = MockGateway(rate_limits="unlimited")
    haystack = "printf('%.*c', 1000000, 'a')"
    needle = "printf('%.*c', 500000, 'a') || 'b'"
    with served(gateway) as http:
        started = time.monotonic()
        found = run(http, "supabase/sql", sql=f"SELECT instr({haystack}, {needle})")
        replaced = run(
            http, "supabase/sql", sql=f"SELECT length(replace({haystack}, {needle}, ''))"
        )
        trimmed = run(
            http, "supabase/sql", sql=f"SELECT length(ltrim({haystack}, 'b' || {haystack}))"
        )
        elapsed = time.monotonic() - started
        small = run(
            http,
            "supabase/sql",
            sql="SELECT instr('hello', 'll'), printf('%5.1f|%s', 2.25, 'x'), trim('xxhixx', 'x')",
        )
    assert found.json()["output"]["rows"] == [[0]]
    assert replaced.json()["output"]["rows"] == [[1_000_000]]
    assert trimmed.json()["output"]["rows"] == [[0]]
    assert elapsed < 3
    assert small.json()["output"]["rows"] == [[3, "  2.3|x", "hi"]]


def test_a_sort_past_the_time_limit_is_stopped() -> None:
    gateway = MockGateway(rate_limits="unlimited")
    gateway.stores.statement_timeout = 0.3
    bomb = (
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
        "SELECT count(DISTINCT randomblob(1000)) FROM c"
    )
    with served(gateway) as http:
        started = time.monotonic()
        reply = run(http, "supabase/sql", sql=bomb)
    assert time.monotonic() - started < 3
    assert error(reply)["code"] == "statement_timeout"


# -- fairness: bodies in flight ------------------------------------------------------------


@pytest.mark.anyio
async def test_the_body_budget_makes_one_key_wait_for_itself_not_others() -> None:
    import anyio

    budget = BodyBudget(total=100, free=10)
    first, second, other = (budget.reservation(key) for key in ("a", "a", "b"))
    await first.cover(50)
    took: list[str] = []

    async def take(name: str, reservation: Any) -> None:
        await reservation.cover(50)
        took.append(name)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(take, "a again", second)
        tasks.start_soon(take, "b", other)
        await anyio.wait_all_tasks_blocked()
        assert took == ["b"]  # key a's second body waits for its first, b does not
        first.release()
    assert took == ["b", "a again"]
    await budget.reservation("c").cover(5)  # a small body goes free


def test_a_key_reading_a_large_body_does_not_hold_up_another_key() -> None:
    limits = ConnectionLimits(body_bytes_in_flight=2 * 1024 * 1024, free_body_bytes=1024)
    gateway = MockGateway(rate_limits="unlimited")
    other = gateway.create_account().key
    big = json.dumps({"model": "gpt-4o", "messages": user("x" * 1_000_000)}).encode()
    head = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Authorization: Bearer " + gateway.api_key.encode() + b"\r\n"
        b"Content-Length: " + str(len(big)).encode() + b"\r\n\r\n"
    )
    with gateway.serve(connection_limits=limits) as url, ExitStack() as stack:
        slow = stack.enter_context(socket.create_connection(address(url)))
        slow.sendall(head + big[:1000])  # holds its key's share of the budget
        waiting = stack.enter_context(socket.create_connection(address(url)))
        waiting.sendall(head + big)  # the same key: waits for the first
        started = time.monotonic()
        reply = httpx.post(
            f"{url}/chat/completions", json=CHAT, headers={"Authorization": f"Bearer {other}"}
        )
        assert reply.status_code == 200
        assert time.monotonic() - started < 1
        assert first_reply(waiting, 0.3) is None  # not answered yet
        slow.sendall(big[1000:])
        assert (first_reply(slow, 5) or b"").startswith(b"HTTP/1.1 200 ")
        assert (first_reply(waiting, 5) or b"").startswith(b"HTTP/1.1 200 ")


# -- connections ---------------------------------------------------------------------------


def test_silent_half_sent_and_idle_connections_are_closed() -> None:
    gateway = MockGateway()
    with gateway.serve(connection_limits=QUICK) as url, ExitStack() as stack:
        silent = stack.enter_context(socket.create_connection(address(url)))
        half = stack.enter_context(socket.create_connection(address(url)))
        half.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n")
        kept = stack.enter_context(socket.create_connection(address(url)))
        kept.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
        received = [closed_within(sock, 3) for sock in (silent, half, kept)]
    assert received[:2] == [b"", b""]  # closed without a word
    assert (received[2] or b"").startswith(b"HTTP/1.1 401 ")  # answered, closed when idle


def test_a_body_that_does_not_arrive_in_time_is_a_408() -> None:
    gateway = MockGateway()
    with gateway.serve(connection_limits=QUICK) as url, ExitStack() as stack:
        sock = stack.enter_context(socket.create_connection(address(url)))
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"
        )
        received = closed_within(sock, 3)
    assert received is not None
    assert received.startswith(b"HTTP/1.1 408 ")
    body = json.loads(received.split(b"\r\n\r\n", 1)[1])
    assert body["error"]["code"] == "request_timeout"
    assert "0.3 s" in body["error"]["message"]


def test_a_client_that_stops_reading_a_large_reply_is_cut_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gateway = MockGateway(rate_limits="unlimited")
    limits = ConnectionLimits(response_stall=0.3)
    cut = threading.Event()  # set when the server cuts a connection off, in its thread
    cut_off = GuardedConnection._cut_off

    def cut_off_and_tell(connection: GuardedConnection) -> None:
        cut_off(connection)
        cut.set()

    monkeypatch.setattr(GuardedConnection, "_cut_off", cut_off_and_tell)
    with served(gateway, connection_limits=limits) as http, ExitStack() as stack:
        put = {"operation": "put", "key": "big", "data": data_url(12_000_000)}
        url = run(http, "s3/storage", **put).json()["output"]["url"]
        sock = stack.enter_context(socket.create_connection(address(str(http.base_url))))
        path = httpx.URL(url).path.encode()
        sock.sendall(
            b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n"
            b"Authorization: Bearer " + gateway.api_key.encode() + b"\r\n\r\n"
        )
        # reading nothing: the server's buffers fill, its writes pause, it cuts the client off
        assert cut.wait(10)
        received = closed_within(sock, 5)
        assert http.get("/models").status_code == 200  # the server goes on
    assert received is not None  # the server closed it
    assert 0 < len(received) < 12_000_000


def test_an_idle_websocket_is_closed() -> None:
    ws_client = pytest.importorskip("websockets.sync.client")
    exceptions = pytest.importorskip("websockets.exceptions")
    gateway = MockGateway()
    with gateway.serve(connection_limits=QUICK) as url:
        address_ = url.replace("http://", "ws://") + "/stream"
        offered = ["Authorization", gateway.api_key]
        with (
            ws_client.connect(address_, subprotocols=offered) as ws,
            pytest.raises(exceptions.ConnectionClosed) as closed,
        ):
            ws.recv(timeout=3)
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1008
    assert "no message within 0.3 s" in closed.value.rcvd.reason


def test_connections_per_client_are_capped_oldest_idle_first() -> None:
    gateway = MockGateway()
    limits = ConnectionLimits(per_client=3)
    busy_head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n"
    with gateway.serve(connection_limits=limits) as url, ExitStack() as stack:
        idle = [stack.enter_context(socket.create_connection(address(url))) for _ in range(3)]
        time.sleep(0.1)
        assert httpx.get(f"{url}/models").status_code == 401  # served: the oldest idle made room
        assert closed_within(idle[0], 2) == b""
        busy = [stack.enter_context(socket.create_connection(address(url))) for _ in range(3)]
        for sock in busy:
            sock.sendall(busy_head)
        time.sleep(0.2)
        refused = stack.enter_context(socket.create_connection(address(url)))
        received = closed_within(refused, 2)
    assert received is not None
    assert received.startswith(b"HTTP/1.1 503 ")
    assert b'"too_many_connections"' in received


def test_500_idle_connections_do_not_delay_a_new_clients_request() -> None:
    gateway = MockGateway()
    with gateway.serve() as url, ExitStack() as stack:
        for _ in range(500):
            stack.enter_context(socket.create_connection(address(url)))
        started = time.monotonic()
        reply = httpx.get(f"{url}/models", headers={"Authorization": f"Bearer {gateway.api_key}"})
        took = time.monotonic() - started
    assert reply.status_code == 200
    assert took < 1


def test_the_websocket_settings_reach_uvicorn() -> None:
    pytest.importorskip("uvicorn")
    from aigateway.testing._serving.server import server_config

    limits = ConnectionLimits(websocket_ping_interval=3, websocket_ping_timeout=4, keep_alive=2)
    state = MockGateway()._state  # what the front doors are given
    config = server_config(state, host="127.0.0.1", port=0, limits=limits)
    assert (config.ws_ping_interval, config.ws_ping_timeout) == (3, 4)
    assert config.timeout_keep_alive == 2
    assert config.ws_max_size == limits.websocket_message_bytes


# -- the served process's memory -----------------------------------------------------------


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    """A process's resident memory now (or its peak, ``VmHWM``), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_the_served_process_memory_stays_bounded_under_large_bodies() -> None:
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "aigateway", "mock", "serve", "--port", "0"),
            *("--rate-limits", "unlimited", "--credits", "1000"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    output = process.stdout
    assert output is not None
    try:
        lines = [output.readline() for _ in range(3)]
        url = lines[0].split("serving at ")[1].split()[0]
        key = lines[1].split("credits): ")[1].split()[0]
        headers = {"Authorization": f"Bearer {key}"}
        big_chat = json.dumps({"model": "gpt-4o", "messages": user("x" * 4_200_000)}).encode()
        put = {"operation": "put", "key": "k", "data": data_url(3_000_000)}
        with httpx.Client(base_url=url, headers=headers, timeout=30) as http:
            http.get("/models")
            start = rss_mb(process.pid)
            for n in range(9):
                if n % 3 == 2:
                    http.post("/run", json={"model": "s3/storage", "inputs": put})
                else:
                    reply = http.post(
                        "/chat/completions",
                        content=big_chat,
                        headers={"Content-Type": "application/json"},
                    )
                    assert reply.status_code == 400  # past the context window, never counted
                assert rss_mb(process.pid) - start < 120
            http.post(
                "/run", json={"model": "s3/storage", "inputs": {"operation": "delete", "key": "k"}}
            )
        end, peak = rss_mb(process.pid), rss_mb(process.pid, "VmHWM")
    finally:
        process.terminate()
        process.wait(10)
        output.close()
    print(f"served process RSS: start {start:.0f} MB, peak {peak:.0f} MB, end {end:.0f} MB")
    assert peak - start < 120, (start, peak)
    assert end - start < 50, (start, end)
