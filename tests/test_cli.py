"""The ``aigateway`` command, run in-process."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import IO

import httpx
import pytest

import aigateway
from aigateway import cli
from aigateway.testing import MockGateway


def test_chat_with_the_mock_prints_the_reply(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["chat", "Hello", "--mock", "--model", "gpt-4o"]) == 0
    with MockGateway().client() as client:
        expected = client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "Hello"}]
        )
    assert capsys.readouterr().out == expected.text + "\n"


def test_chat_streamed_prints_the_same_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["chat", "Hello", "--mock"]) == 0
    whole = capsys.readouterr().out
    assert cli.main(["chat", "Hello", "--mock", "--stream"]) == 0
    assert capsys.readouterr().out == whole


def test_models_with_the_mock(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["models", "--mock"]) == 0
    ids = capsys.readouterr().out.split()
    assert len(ids) == 11
    assert "gpt-4o" in ids


def test_an_error_is_reported_with_status_1(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AIGATEWAY_API_KEY", raising=False)
    assert cli.main(["chat", "Hello"]) == 1
    assert "AIGATEWAY_API_KEY" in capsys.readouterr().err


def test_bad_usage_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        cli.main(["chat"])
    assert caught.value.code == 2


def test_mock_serve_prints_the_url_and_key_and_serves(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    answers: list[int] = []

    def one_request_then_ctrl_c() -> None:
        out = capsys.readouterr().out
        url = out.split("serving at ")[1].split()[0]
        key = out.split("credits): ")[1].split()[0]
        answers.append(
            httpx.get(f"{url}/models", headers={"Authorization": f"Bearer {key}"}).status_code
        )
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "wait_until_interrupted", one_request_then_ctrl_c)
    assert cli.main(["mock", "serve", "--port", "0", "--seed", "3"]) == 0
    assert answers == [200]
    assert "stopped" in capsys.readouterr().out


def serve_command(*options: str) -> subprocess.Popen[str]:
    """``python -m aigateway mock serve`` in its own process, as a user starts it."""
    src = str(Path(aigateway.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.Popen(
        [sys.executable, "-m", "aigateway", "mock", "serve", *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def read_until(stream: IO[str], last: str) -> str:
    lines = []
    while not lines or last not in lines[-1]:
        line = stream.readline()
        assert line, "".join(lines)
        lines.append(line)
    return "".join(lines)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT is POSIX")
def test_mock_serve_in_a_process_serves_then_stops_cleanly_on_ctrl_c() -> None:
    process = serve_command("--port", "0", "--rate-limits", "free_plan", "--accounts", "1")
    try:
        assert process.stdout is not None
        out = read_until(process.stdout, "Ctrl-C")
        exports = dict(
            line.removeprefix("export ").split("=", 1)
            for line in out.splitlines()
            if line.startswith("export ")
        )
        extra_key = out.split("API key (extra account): ")[1].split()[0]
        for key in (exports["AIGATEWAY_API_KEY"], extra_key):
            with aigateway.Client(api_key=key, base_url=exports["AIGATEWAY_BASE_URL"]) as client:
                assert len(client.models.list().ids) == 11
        reply = httpx.get(
            exports["AIGATEWAY_BASE_URL"] + "/models",
            headers={"Authorization": f"Bearer {extra_key}"},
        )
        assert reply.headers["x-ratelimit-limit"] == "10"  # the preset asked for
        root = exports["AIGATEWAY_BASE_URL"].removesuffix("/v1")
        admin = {"Authorization": f"Bearer {exports['AIGATEWAY_MOCK_ADMIN_TOKEN']}"}
        assert httpx.get(f"{root}/_mock/requests", headers=admin).json()["data"]  # drivable
        assert httpx.get(f"{root}/_mock/requests").status_code == 401
        process.send_signal(signal.SIGINT)
        rest, err = process.communicate(timeout=10)
    finally:
        process.kill()
    assert process.returncode in (0, 130)
    assert "stopped" in rest
    assert "Traceback" not in err
    assert err == ""


def test_mock_serve_on_a_busy_port_is_one_line_and_status_2() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        process = serve_command("--port", str(port))
        out, err = process.communicate(timeout=20)
    assert process.returncode == 2
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("aigateway: error: cannot serve on 127.0.0.1:")
    assert str(port) in err


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--port", "99999"], "0 to 65535, got 99999"),
        (["--port", "-1"], "0 to 65535, got -1"),
        (["--port", "eighty"], "0 to 65535, got 'eighty'"),
        (["--rate-limits", "gold"], "unknown rate-limit preset 'gold'; presets: free, paid"),
        (["--token-delay", "-1"], "token_delay"),
        (["--accounts", "-2"], "--accounts"),
    ],
)
def test_mock_serve_bad_options_are_one_line_and_status_2(
    capsys: pytest.CaptureFixture[str], options: list[str], message: str
) -> None:
    assert cli.main(["mock", "serve", *options]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("aigateway: error: ")
    assert message in err


def test_mock_serve_options_and_a_warning_off_loopback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, str] = {}

    def look_then_ctrl_c() -> None:
        out, seen["err"] = capsys.readouterr()
        url = out.split("serving at ")[1].split()[0].replace("0.0.0.0", "127.0.0.1")
        keys = [line.split(": ")[1] for line in out.splitlines() if line.startswith("API key")]
        seen["out"] = out
        seen["limits"] = httpx.get(
            f"{url}/models", headers={"Authorization": f"Bearer {keys[-1]}"}
        ).headers["x-ratelimit-limit"]
        assert len(keys) == 3
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "wait_until_interrupted", look_then_ctrl_c)
    argv = ["mock", "serve", "--host", "0.0.0.0", "--port", "0", "--credits", "5"]
    assert cli.main([*argv, "--accounts", "2", "--rate-limits", "integration"]) == 0
    assert "5 credits" in seen["out"]
    assert seen["limits"] == "100"
    assert "warning: serving on 0.0.0.0" in seen["err"]
    assert "anyone" in seen["err"]
