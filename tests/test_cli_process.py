"""The ``aigateway`` command in its own process: Ctrl-C during a stream, a closed stdout, the
lazy public names (the in-process tests are in test_cli.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import aigateway

from .test_cli import as_from_a_terminal, read_until, serve_command


def test_every_public_name_imports_and_the_cli_loads_no_sdk() -> None:
    script = (
        "import sys, json\n"
        "import aigateway.cli\n"
        "cli_loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('httpx', 'pydantic'))\n"
        "import aigateway\n"
        "names = aigateway.__all__\n"
        "exec('from aigateway import ' + ', '.join(names))\n"
        "missing = sorted(set(names) - set(dir(aigateway)))\n"
        "print(json.dumps([cli_loaded, missing, len(names)]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        env=command_env(),
    )
    cli_loaded, missing, count = json.loads(out.stdout)
    assert cli_loaded == []
    assert missing == []
    assert count == len(set(aigateway.__all__)) > 60


def command_env() -> dict[str, str]:
    src = str(Path(aigateway.__file__).resolve().parents[1])
    return {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}


def aigateway_command(*argv: str, **options: object) -> subprocess.Popen[str]:
    return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-m", "aigateway", *argv],
        text=True,
        env=command_env(),
        preexec_fn=as_from_a_terminal if sys.platform != "win32" else None,
        **options,
    )


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT is POSIX")
def test_ctrl_c_during_a_stream_exits_130_without_a_traceback() -> None:
    server = serve_command("--port", "0", "--token-delay", "0.2", "--rate-limits", "unlimited")
    try:
        assert server.stdout is not None
        exports = dict(
            line.removeprefix("export ").split("=", 1)
            for line in read_until(server.stdout, "Ctrl-C").splitlines()
            if line.startswith("export ")
        )
        chat = aigateway_command(
            "chat",
            "Tell me a long story",
            "--stream",
            "--max-tokens",
            "500",
            "--base-url",
            exports["AIGATEWAY_BASE_URL"],
            "--api-key",
            exports["AIGATEWAY_API_KEY"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            assert chat.stdout is not None
            first = chat.stdout.read(1)  # the stream has started
            assert first
            chat.send_signal(signal.SIGINT)
            _, err = chat.communicate(timeout=10)
        finally:
            chat.kill()
    finally:
        server.send_signal(signal.SIGINT)
        server.communicate(timeout=10)
    assert chat.returncode == 130
    assert "Traceback" not in err


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX pipes")
def test_a_closed_stdout_exits_quietly() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # like `| head -1` having exited: every write fails with EPIPE
    try:
        process = aigateway_command("models", "--mock", stdout=write_end, stderr=subprocess.PIPE)
    finally:
        os.close(write_end)
    _, err = process.communicate(timeout=20)
    assert err == ""
    assert process.returncode == 141


def test_help_is_quick_to_start() -> None:
    """Not timed here (``python -m bench.cli`` measures it): it works in a fresh process."""
    process = aigateway_command("--help", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
    for command in ("chat", "models", "run", "image", "mock"):
        assert f"    {command} " in out
