"""The ``aigateway`` command in its own process: Ctrl-C during a stream, a closed stdout, the
lazy public names (the in-process tests are in test_cli.py)."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import aigateway
from aigateway.testing import MockGateway

from .test_cli import as_from_a_terminal, read_until, serve_command


@pytest.fixture(autouse=True)
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The commands keep their conversations in the test's own directory (they inherit it)."""
    state = tmp_path / "state"
    monkeypatch.setenv("AIGATEWAY_STATE_DIR", str(state))
    return state


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


# Conversations, --usage and run, as a user runs them: against a served mock.


@pytest.fixture
def served(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[MockGateway]:
    """A mock served on a local port, which the commands reach through the environment
    (parametrized indirectly: the delay between a stream's tokens, default none)."""
    gateway = MockGateway(token_delay=getattr(request, "param", 0.0))
    with gateway.serve(port=0) as url:
        monkeypatch.setenv("AIGATEWAY_BASE_URL", url)
        monkeypatch.setenv("AIGATEWAY_API_KEY", gateway.api_key)
        yield gateway


def run_command(*argv: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aigateway", *argv],
        input=stdin,
        capture_output=True,
        text=True,
        env=command_env(),
        timeout=30,
    )


def sent_messages(gateway: MockGateway) -> list[list[dict[str, str]]]:
    return [json.loads(r.body)["messages"] for r in gateway.requests if r.method == "POST"]


def test_interactive_fed_from_stdin(served: MockGateway) -> None:
    done = run_command("chat", "-i", "--max-tokens", "5", stdin="Hi\n\nAgain\nexit\nNever\n")
    assert (done.returncode, done.stderr) == (0, "")
    first, second = done.stdout.splitlines()
    assert sent_messages(served) == [
        [{"role": "user", "content": "Hi"}],
        [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": first},
            {"role": "user", "content": "Again"},
        ],
    ]
    assert second


def test_continue_across_two_commands_with_usage(served: MockGateway, state_dir: Path) -> None:
    first = run_command("chat", "Hello", "--max-tokens", "5")
    assert (first.returncode, first.stderr) == (0, "")
    second = run_command("chat", "-c", "And then?", "--max-tokens", "5", "--usage")
    assert second.returncode == 0
    assert second.stdout.count("\n") == 1  # the reply only
    assert sent_messages(served)[-1] == [
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": first.stdout.strip()},
        {"role": "user", "content": "And then?"},
    ]
    usage = second.stderr
    assert usage.startswith("aigateway: usage: tokens ")
    assert usage.count("\n") == 1
    assert f"{round(served.credits(), 6)!r} remaining" in usage  # as the reply said
    (stored,) = (state_dir / "conversations").glob("*.json")
    assert len(json.loads(stored.read_text())["messages"]) == 4


def test_run_prints_each_field_once_in_a_process() -> None:
    done = run_command("--mock", "run", "tts-1", "--input", "text=Hello there")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count('"audio_url"') == 1
    assert "audio_url" in json.loads(done.stdout)["output"]


class Terminal:
    """The far side of a pseudo-terminal: what a command on it shows, read as it comes."""

    def __init__(self, master: int) -> None:
        self.master = master
        self.shown = ""

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def until(self, text: str, after: int = 0, timeout: float = 20.0) -> int:
        """Wait until ``text`` shows (after position ``after``); where it ends."""
        deadline = time.monotonic() + timeout
        while (found := self.shown.find(text, after)) < 0:
            assert time.monotonic() < deadline, f"{text!r} never showed: {self.shown!r}"
            ready, _, _ = select.select([self.master], [], [], 0.1)
            if ready:
                with contextlib.suppress(OSError):  # OSError: the command ended, closing it
                    self.shown += os.read(self.master, 4096).decode(errors="replace")
        return found + len(text)


def leave_with_ctrl_c(command: subprocess.Popen[str]) -> int:
    """Ctrl-C at the prompt; a second one if the first came as the prompt showed, before
    input() waited (CPython then sees it only with the next key), as a user would press it."""
    for wait in (2, 10):
        command.send_signal(signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            return command.wait(timeout=wait)
    raise AssertionError("Ctrl-C at the prompt did not end the command")


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals and SIGINT are POSIX")
@pytest.mark.parametrize("served", [0.05], indirect=True)
def test_on_a_terminal_ctrl_c_stops_a_reply_then_leaves_at_the_prompt(
    served: MockGateway, state_dir: Path
) -> None:
    import pty

    master, child_side = pty.openpty()
    try:
        chat = aigateway_command(
            "chat", "--max-tokens", "20", stdin=child_side, stdout=child_side, stderr=child_side
        )
        os.close(child_side)
        screen = Terminal(master)
        try:
            # no prompt on a terminal: a conversation
            at = screen.until("Ctrl-C stops a reply.\r\n> ")
            screen.type("Tell me a story\r")
            at = screen.until("Tell me a story\r\n", at)
            screen.until(" ", at)  # the reply is streaming (a token each 50 ms)
            chat.send_signal(signal.SIGINT)
            at = screen.until("\r\naigateway: reply stopped\r\n> ", at)
            screen.type("Again\r")
            at = screen.until("Again\r\n", at)
            screen.until("\r\n> ", at)  # a whole reply, then the prompt
            assert leave_with_ctrl_c(chat) == 130  # at the prompt: leave
        finally:
            chat.kill()
            chat.wait()
    finally:
        os.close(master)
    assert "Traceback" not in screen.shown
    history = sent_messages(served)[-1]
    assert [message["role"] for message in history] == ["user", "assistant", "user"]
    assert history[1]["content"] in screen.shown  # the stopped reply, as far as it got
    (stored,) = (state_dir / "conversations").glob("*.json")
    assert len(json.loads(stored.read_text())["messages"]) == 4
