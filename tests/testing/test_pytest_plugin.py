"""aigateway's pytest plugin, run as users meet it: test files run by pytester with the plugin.

The inner runs load the plugin by its module name and block the entry point's name, so they
load it exactly once whether or not the installed metadata has the entry point yet.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .._paths import ROOT

pytest_plugins = ["pytester"]

PLUGIN = "_aigateway_pytest"
UNRELATED = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")  # a second per session
LOAD = ("-p", "no:aigateway", "-p", PLUGIN, *UNRELATED)

BACKENDS = """
import pytest

@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request):
    return request.param
"""

# Installed before any guard, so the guard wraps it: it records every lookup and connection
# that gets past the guard, and refuses any that would leave the machine (so that a broken
# guard fails these tests instead of reaching the network). example.com "resolves" to a
# TEST-NET address without a DNS query.
RECORDER = """
import socket

ORIGINAL_GETADDRINFO = socket.getaddrinfo
PASSED = []
_real_getaddrinfo = socket.getaddrinfo
_real_connect = socket.socket.connect

def _getaddrinfo(host, port, *args, **kwargs):
    PASSED.append(("getaddrinfo", host))
    if host == "example.com":
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("203.0.113.7", port))]
    if host not in (None, "localhost", "127.0.0.1", "::1"):
        raise AssertionError(f"the guard let a lookup of {host!r} through")
    return _real_getaddrinfo(host, port, *args, **kwargs)

def _connect(self, address):
    PASSED.append(("connect", address[0]))
    if self.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in ("127.0.0.1", "::1"):
        raise ConnectionRefusedError(f"refused by the test's recorder: {address[0]}")
    return _real_connect(self, address)

socket.getaddrinfo = _getaddrinfo
RECORDING_GETADDRINFO = _getaddrinfo
socket.socket.connect = _connect
"""


def run(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_inner=textwrap.dedent(source))
    return pytester.runpytest_inprocess(*LOAD, *args)


def problems(pytester: pytest.Pytester, source: str) -> dict[str, str]:
    """Run ``source``'s tests; the text of each failure or error, by test name."""
    pytester.makepyfile(test_inner=textwrap.dedent(source))
    recorder = pytester.inline_run(*LOAD)
    return {
        report.nodeid.partition("::")[2]: report.longreprtext
        for report in recorder.getreports("pytest_runtest_logreport")
        if report.failed
    }


# -- fixtures --------------------------------------------------------------------------------


def test_fixtures_give_a_fresh_gateway_and_clients_closed_after_each_test(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(BACKENDS)
    result = run(
        pytester,
        """
        import pytest

        MESSAGES = [{"role": "user", "content": "hi"}]
        seen = []

        def test_sync(aigateway_client, aigateway_mock):
            reply = aigateway_client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
            assert reply.text
            assert aigateway_mock.credits() < 20
            assert len(aigateway_mock.requests) == 1
            seen.append((aigateway_client, aigateway_mock))

        @pytest.mark.anyio
        async def test_async(aigateway_async_client, aigateway_mock, anyio_backend):
            reply = await aigateway_async_client.chat.completions.create(
                model="gpt-4o", messages=MESSAGES
            )
            assert reply.text
            assert len(aigateway_mock.requests) == 1  # a fresh gateway for each test
            seen.append((aigateway_async_client, aigateway_mock))

        async def test_async_without_the_anyio_mark(aigateway_async_client):
            assert (await aigateway_async_client.models.list()).data

        def test_clients_were_closed_and_gateways_fresh():
            clients = [client for client, _ in seen]
            assert len(clients) == 3 and all(client.is_closed for client in clients)
            assert len({id(gateway) for _, gateway in seen}) == 3
        """,
        "-v",
    )
    result.stdout.fnmatch_lines(["*test_async*asyncio*PASSED*", "*test_async*trio*PASSED*"])
    result.assert_outcomes(passed=6)


def test_served_fixture_is_the_same_gateway_over_real_http(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
        import httpx

        def test_served(aigateway_served, aigateway_mock):
            assert aigateway_served.startswith("http://127.0.0.1:")
            headers = {"Authorization": f"Bearer {aigateway_mock.api_key}"}
            reply = httpx.post(
                aigateway_served + "/chat/completions",
                headers=headers,
                json={"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
            )
            assert reply.status_code == 200
            assert len(aigateway_mock.charges) == 1
        """,
    )
    result.assert_outcomes(passed=1)


# -- the marker ------------------------------------------------------------------------------


def test_marker_sets_preset_credits_seed_and_faults(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
        import pytest
        from aigateway import ServiceUnavailableError
        from aigateway.testing import RATE_LIMIT_PRESETS

        MESSAGES = [{"role": "user", "content": "hi"}]

        @pytest.mark.aigateway(
            rate_limits="paid", credits=5, seed=3, faults=[("fail", 503, {"times": 2})]
        )
        def test_configured(aigateway_mock):
            assert aigateway_mock.rate_limits.limits(aigateway_mock.api_key) == (
                RATE_LIMIT_PRESETS["paid"]
            )
            assert aigateway_mock.credits() == 5
            assert aigateway_mock.seed == 3
            with aigateway_mock.client(max_retries=0) as client:
                for _ in range(2):
                    with pytest.raises(ServiceUnavailableError):
                        client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
                assert client.chat.completions.create(model="gpt-4o", messages=MESSAGES).text

        @pytest.mark.aigateway(faults=lambda gateway: gateway.enqueue_reply("scripted"))
        def test_callable(aigateway_client):
            reply = aigateway_client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
            assert reply.text == "scripted"

        @pytest.mark.aigateway(credits=1)
        class TestOnAClass:
            def test_uses_the_class_marker(self, aigateway_mock):
                assert aigateway_mock.credits() == 1

            @pytest.mark.aigateway(credits=2)
            def test_closest_marker_wins(self, aigateway_mock):
                assert aigateway_mock.credits() == 2

        def test_unmarked_gets_the_defaults(aigateway_mock):
            assert aigateway_mock.credits() == 20
            assert aigateway_mock.rate_limits.limits(aigateway_mock.api_key) == (
                RATE_LIMIT_PRESETS["free"]
            )
        """,
        "--strict-markers",
    )
    result.assert_outcomes(passed=5)


def test_bad_marker_options_fail_the_test_naming_what_is_allowed(
    pytester: pytest.Pytester,
) -> None:
    failures = problems(
        pytester,
        """
        import pytest

        @pytest.mark.aigateway(presets="paid")
        def test_unknown_option(aigateway_mock): pass

        @pytest.mark.aigateway("paid")
        def test_positional(aigateway_mock): pass

        @pytest.mark.aigateway(rate_limits="platinum")
        def test_unknown_preset(aigateway_mock): pass

        @pytest.mark.aigateway(faults=[("explode", 1)])
        def test_unknown_fault(aigateway_mock): pass

        @pytest.mark.aigateway(faults=[("fail", 503, {"tims": 2})])
        def test_bad_fault_arguments(aigateway_mock): pass

        @pytest.mark.aigateway(allow_hosts="example.com")
        def test_allow_hosts_not_a_list(): pass
        """,
    )
    prefix = "@pytest.mark.aigateway: "
    assert failures["test_unknown_option"] == (
        prefix + "unknown option 'presets'; allowed: allow_hosts, catalogue, clock, credits, "
        "faults, fixed_keys, max_body_bytes, max_logged_body_bytes, max_logged_requests, quota, "
        "rate_limits, seed, services, strict_fields, time_to_first_token, token_delay"
    )
    assert failures["test_positional"].startswith(prefix + "takes keyword options only")
    assert failures["test_unknown_preset"].startswith(prefix + "unknown rate-limit preset")
    assert "'platinum'; presets: free, paid" in failures["test_unknown_preset"]
    assert failures["test_unknown_fault"] == (
        prefix + "unknown fault 'explode'; faults: drop, drop_mid_stream, fail, latency, "
        "malformed, malformed_chunk, truncate"
    )
    assert failures["test_bad_fault_arguments"].startswith(
        prefix + "faults entry ('fail', 503, {'tims': 2}): "
    )
    assert "tims" in failures["test_bad_fault_arguments"]
    assert failures["test_allow_hosts_not_a_list"] == (
        prefix + "allow_hosts must be a list of host names, got 'example.com'"
    )
    assert len(failures) == 6


# -- the network guard -----------------------------------------------------------------------


def test_guard_fails_a_test_reaching_for_the_network_before_any_lookup(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(BACKENDS + RECORDER)
    failures = problems(
        pytester,
        """
        import httpx
        import pytest
        import socket
        from conftest import PASSED

        def test_sync_httpx(aigateway_client):
            httpx.get("https://example.com")

        @pytest.mark.anyio
        async def test_async_httpx(aigateway_async_client):
            async with httpx.AsyncClient() as http:
                await http.get("https://example.com/v1/models")

        def test_an_ip_address(aigateway_mock):
            with socket.socket() as sock:
                sock.connect(("203.0.113.9", 80))

        def test_swallowed(aigateway_mock):
            try:
                httpx.get("http://example.com")
            except BaseException:
                pass

        @pytest.mark.aigateway
        def test_marked_only():
            socket.create_connection(("example.com", 443))

        def test_nothing_got_past_the_guard():
            assert PASSED == []
        """,
    )
    assert sorted(failures) == [
        "test_an_ip_address",
        "test_async_httpx[asyncio]",
        "test_async_httpx[trio]",
        "test_marked_only",
        "test_swallowed",
        "test_sync_httpx",
    ]
    message = (
        "Failed: aigateway's pytest plugin blocked a connection to {host!r} (port {port}): a "
        "test using the mock gateway may reach only the mock and loopback addresses. To allow "
        "it, mark the test @pytest.mark.aigateway(allow_hosts=[{host!r}])."
    )
    for test in ("test_sync_httpx", "test_async_httpx[asyncio]", "test_async_httpx[trio]"):
        assert message.format(host="example.com", port=443) in failures[test], test
    assert message.format(host="203.0.113.9", port=80) in failures["test_an_ip_address"]
    assert failures["test_swallowed"] == message.format(host="example.com", port=80)[8:]
    assert message.format(host="example.com", port=443) in failures["test_marked_only"]


def test_guard_lets_loopback_allowed_hosts_and_plain_tests_through_and_is_removed(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(RECORDER)
    result = run(
        pytester,
        """
        import socket
        import pytest
        import conftest

        def test_loopback(aigateway_mock):
            with socket.create_server(("127.0.0.1", 0)) as server:
                port = server.getsockname()[1]
                for host in ("127.0.0.1", "localhost"):
                    socket.create_connection((host, port)).close()

        @pytest.mark.aigateway(allow_hosts=["Example.com"])
        def test_allowed(aigateway_mock):
            with pytest.raises(ConnectionRefusedError, match="recorder: 203.0.113.7"):
                socket.create_connection(("example.com", 443))  # resolved, then let through

        def test_guard_is_gone_and_plain_tests_are_not_guarded():
            assert socket.getaddrinfo is conftest.RECORDING_GETADDRINFO
            assert socket.socket.connect.__name__ == "_connect"
            assert "connect_ex" not in vars(socket.socket)
            assert ("connect", "203.0.113.7") in conftest.PASSED
        """,
    )
    result.assert_outcomes(passed=3)


# -- loading ---------------------------------------------------------------------------------


def entry_point_in_pyproject() -> str:
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    entry: str = project["entry-points"]["pytest11"]["aigateway"]
    return entry


def test_pytest_loads_the_plugin_through_the_entry_point(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A distribution declaring pyproject's entry point is enough for pytest to load it."""
    dist_info = pytester.path / "site" / "aigateway_entry_point_probe-0.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: aigateway-entry-point-probe\nVersion: 0\n"
    )
    (dist_info / "entry_points.txt").write_text(
        f"[pytest11]\naigateway = {entry_point_in_pyproject()}\n"
    )
    pytester.makepyfile(
        test_inner="""
        def test_fixture(aigateway_mock, request):
            assert request.config.pluginmanager.hasplugin("aigateway")
        """
    )
    spec = importlib.util.find_spec(PLUGIN)
    assert spec is not None
    assert spec.origin is not None
    path = [str(pytester.path / "site"), str(Path(spec.origin).parent)]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, path)))
    result = pytester.runpytest_subprocess("--trace-config", *UNRELATED)
    result.stdout.fnmatch_lines(["*registered third-party plugins:*", "*aigateway*"])
    result.assert_outcomes(passed=1)


def test_installed_metadata_names_the_plugin() -> None:
    entry_points = importlib.metadata.distribution("aigateway").entry_points
    installed = {entry.name: entry.value for entry in entry_points if entry.group == "pytest11"}
    if not installed:
        pytest.skip("the installed aigateway predates the entry point (reinstall to register it)")
    assert installed == {"aigateway": entry_point_in_pyproject()}


def test_loading_the_plugin_imports_neither_aigateway_nor_its_dependencies() -> None:
    """pytest imports the plugin in every run of every project: it must stay cheap."""
    code = (
        f"import sys, pytest, {PLUGIN}; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'aigateway', 'httpx', 'pydantic', 'anyio', 'uvicorn'}))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "[]"


def test_the_docs_example_passes_as_a_test_file(pytester: pytest.Pytester) -> None:
    page = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    section = page.partition("## The pytest plugin")[2]
    code = section.partition("```python\n")[2].partition("```")[0]
    assert "def test_" in code
    pytester.makeconftest(BACKENDS)
    result = run(pytester, code, "--strict-markers")
    result.assert_outcomes(passed=6)  # test_models on asyncio and on trio
