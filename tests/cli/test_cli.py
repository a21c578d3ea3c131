"""The ``aigateway`` command, run in-process."""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import IO, Any

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


def test_models_with_the_mock_is_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["models", "--mock"]) == 0
    header, *rows = capsys.readouterr().out.splitlines()
    assert header.split()[:3] == ["ID", "OWNER", "CONTEXT"]
    assert "CAPABILITIES" in header
    assert len(rows) == 11
    gpt4o = next(row.split() for row in rows if row.startswith("gpt-4o "))
    assert gpt4o[:6] == ["gpt-4o", "openai", "128000", "0.005", "/", "0.015"]
    assert "vision" in gpt4o[-1]


def test_models_json_is_the_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--mock", "models", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert len(listed["data"]) == 11
    assert listed["data"][0]["context_window"] > 0


def test_an_error_is_reported_with_status_1(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AIGATEWAY_API_KEY", raising=False)
    assert cli.main(["chat", "Hello"]) == 1
    assert "AIGATEWAY_API_KEY" in capsys.readouterr().err


def test_bad_usage_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        cli.main(["chat", "hi", "--temperature", "warm"])
    assert caught.value.code == 2
    assert "invalid float value: 'warm'" in capsys.readouterr().err


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


def as_from_a_terminal() -> None:
    """Ctrl-C reaches the child even when this test run was started in the background (a
    shell starts background jobs with SIGINT ignored, and children inherit that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


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
        preexec_fn=as_from_a_terminal if sys.platform != "win32" else None,
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


# The complete command line: every command and option, in-process with --mock.


@pytest.fixture(autouse=True)
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Conversations go to a directory of the test's own, never to the user's."""
    state = tmp_path / "state"
    monkeypatch.setenv("AIGATEWAY_STATE_DIR", str(state))
    return state


class Terminal(io.StringIO):
    """A text stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def gateways(monkeypatch: pytest.MonkeyPatch) -> list[MockGateway]:
    """The mock gateways the command creates (one per command), to look at what it sent."""
    made: list[MockGateway] = []
    real = cli._client

    def client(args: object) -> aigateway.Client:
        if not getattr(args, "mock", False):
            return real(args)  # type: ignore[arg-type]
        gateway = MockGateway()
        made.append(gateway)
        return gateway.client()

    monkeypatch.setattr(cli, "_client", client)
    return made


def sent(gateway: MockGateway) -> dict[str, object]:
    last_post = [request for request in gateway.requests if request.method == "POST"][-1]
    body: dict[str, object] = json.loads(last_post.body)
    return body


def test_chat_options_are_sent(
    capsys: pytest.CaptureFixture[str], gateways: list[MockGateway]
) -> None:
    argv = ["chat", "Hi", "--system", "Be brief", "--temperature", "0.5", "--max-tokens", "7"]
    assert cli.main([*argv, "--model", "gpt-4o", "--mock"]) == 0
    body = sent(gateways[0])
    assert body["messages"] == [
        {"role": "system", "content": "Be brief"},
        {"role": "user", "content": "Hi"},
    ]
    assert (body["temperature"], body["max_tokens"], body["model"]) == (0.5, 7, "gpt-4o")
    assert "stream" not in body  # stdout is not a terminal
    assert capsys.readouterr().out.strip()


@pytest.mark.parametrize("argv", [["chat"], ["chat", "-"]])
def test_chat_reads_the_prompt_from_stdin(
    monkeypatch: pytest.MonkeyPatch, gateways: list[MockGateway], argv: list[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("from a pipe\n"))
    assert cli.main([*argv, "--mock"]) == 0
    assert sent(gateways[0])["messages"] == [{"role": "user", "content": "from a pipe"}]


def test_chat_without_a_prompt_on_a_terminal_is_a_conversation(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, gateways: list[MockGateway]
) -> None:
    monkeypatch.setattr(sys, "stdin", Terminal("Hello\n"))  # then the end of input (Ctrl-D)
    assert cli.main(["chat", "--mock"]) == 0
    out, err = capsys.readouterr()
    assert sent(gateways[0])["messages"] == [{"role": "user", "content": "Hello"}]
    assert sent(gateways[0])["stream"] is True  # a conversation streams its replies
    assert out == reply_text("Hello") + "\n"  # stdout holds the replies only
    assert err.startswith("Conversation 2")
    assert "Type exit or quit (or press Ctrl-D) to leave; Ctrl-C stops a reply." in err
    assert err.endswith("> > \n")  # the prompt, on stderr as stdout is no terminal


def test_chat_streams_to_a_terminal_unless_told_not_to(
    monkeypatch: pytest.MonkeyPatch, gateways: list[MockGateway]
) -> None:
    terminal = Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    assert cli.main(["chat", "Hello", "--mock"]) == 0
    assert sent(gateways[0])["stream"] is True
    assert cli.main(["chat", "Hello", "--mock", "--no-stream"]) == 0
    assert "stream" not in sent(gateways[1])
    assert terminal.getvalue().count("\n") == 2


def test_chat_json_prints_the_reply_object(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["chat", "Hello", "--mock", "--json"]) == 0
    reply = json.loads(capsys.readouterr().out)
    assert reply["object"] == "chat.completion"
    assert reply["choices"][0]["message"]["content"]


def test_a_bad_value_is_the_sdk_message_in_one_line(
    capsys: pytest.CaptureFixture[str], gateways: list[MockGateway]
) -> None:
    assert cli.main(["chat", "Hello", "--mock", "--temperature", "5"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("aigateway: error: invalid request, nothing was sent: temperature=5.0")
    assert "0 to 2" in err
    assert gateways[0].requests == []


def test_run_merges_inputs_parsing_json_values(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    gateways: list[MockGateway],
) -> None:
    inputs = tmp_path / "inputs.json"
    inputs.write_text('{"prompt": "from the file", "n": 1, "style": "flat"}')
    argv = ["run", "flux-schnell", "--input-file", str(inputs), "--input", "n=2"]
    assert cli.main([*argv, "--input", "prompt=a cat", "--input", "seed=null", "--mock"]) == 0
    assert sent(gateways[0])["inputs"] == {"prompt": "a cat", "n": 2, "style": "flat", "seed": None}
    result = json.loads(capsys.readouterr().out)
    assert result["model"] == "flux-schnell"
    assert len(result["output"]["images"]) == 2

    monkeypatch.setattr(sys, "stdin", io.StringIO('{"prompt": "piped"}'))
    assert cli.main(["run", "flux-schnell", "--input-file", "-", "--mock"]) == 0
    assert sent(gateways[1])["inputs"] == {"prompt": "piped"}


@pytest.mark.parametrize(
    ("argv", "message", "status"),
    [
        (["--input", "novalue"], "--input takes KEY=VALUE, got 'novalue'", 2),
        (["--input-file", "-"], "--input-file is not valid JSON", 2),
        (["--input-file", "/nonexistent/inputs.json"], "No such file or directory", 1),
    ],
)
def test_run_bad_inputs(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    message: str,
    status: int,
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("[1, 2"))
    assert cli.main(["run", "flux-schnell", *argv, "--mock"]) == status
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith("aigateway: error: ")
    assert message in err


def test_image_is_saved_and_its_path_printed(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    gateways: list[MockGateway],
) -> None:
    target = tmp_path / "cat.png"
    argv = ["image", "a cat", "--model", "dall-e-3", "--size", "256x256", "--output", str(target)]
    assert cli.main([*argv, "--mock"]) == 0
    assert capsys.readouterr().out == f"{target}\n"
    assert sent(gateways[0]) == {"model": "dall-e-3", "prompt": "a cat", "size": "256x256"}
    assert target.read_bytes().startswith(b"\x89PNG")

    monkeypatch.chdir(tmp_path)
    assert cli.main(["image", "a dog", "--mock"]) == 0
    saved = Path(capsys.readouterr().out.strip())
    assert saved.suffix == ".png"
    assert (tmp_path / saved).read_bytes().startswith(b"\x89PNG")


def test_version_before_or_after_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--version"], ["models", "--version"]):
        with pytest.raises(SystemExit) as caught:
            cli.main(argv)
        assert caught.value.code == 0
        assert capsys.readouterr().out == f"aigateway {aigateway.__version__}\n"


def test_global_options_before_or_after_the_command(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AIGATEWAY_API_KEY", raising=False)
    monkeypatch.delenv("AIGATEWAY_BASE_URL", raising=False)
    gateway = MockGateway()
    with gateway.serve(port=0) as url:
        before = ["--api-key", gateway.api_key, "--base-url", url, "models", "--json"]
        after = ["models", "--json", "--api-key", gateway.api_key, "--base-url", url]
        for argv in (before, after):
            assert cli.main(argv) == 0
            assert len(json.loads(capsys.readouterr().out)["data"]) == 11
        assert cli.main(["--mock", "models"]) == cli.main(["models", "--mock"]) == 0


def test_debug_shows_requests_and_never_the_api_key(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    gateway = MockGateway()
    with gateway.serve(port=0) as url:
        monkeypatch.setenv("AIGATEWAY_API_KEY", gateway.api_key)
        assert cli.main(["--debug", "--base-url", url, "chat", "Hi", "--stream"]) == 0
        out, err = capsys.readouterr()
        assert "POST /v1/chat/completions -> 200 (attempt 1), request id req_" in err
        assert "finished in" in err
        wrong = "sk-not-a-real-key-1234567890"
        assert cli.main(["chat", "Hi", "--debug", "--base-url", url, "--api-key", wrong]) == 1
        out2, err2 = capsys.readouterr()
    for text in (out, err, out2, err2):
        assert gateway.api_key not in text
        assert wrong not in text
        assert wrong[-8:] not in text
    assert "AuthenticationError: status 401, request id " in err2
    assert "Traceback (most recent call last)" in err2
    assert err2.splitlines()[-2].startswith("aigateway: error: ")


def test_an_unexpected_error_is_one_line_or_a_traceback_with_debug(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(args: object, out: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setitem(cli.COMMANDS, "models", broken)
    assert cli.main(["models", "--mock"]) == 1
    assert capsys.readouterr().err == "aigateway: error: unexpected RuntimeError: boom\n"
    assert cli.main(["models", "--mock", "--debug"]) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert "aigateway: error: unexpected RuntimeError: boom\n" in err


def test_a_refused_connection_says_it_is_retrying(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # bound, never listening: connections are refused
        waits: list[float] = []
        policy = aigateway.RetryPolicy(sleep=waits.append)

        def client(args: object) -> aigateway.Client:
            url = f"http://127.0.0.1:{port}/v1"
            return aigateway.Client(api_key="sk-test", base_url=url, retry_policy=policy)

        monkeypatch.setattr(cli, "_client", client)
        assert cli.main(["models"]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(waits) == 2  # the default: two retries, waits of about 1 s and 2 s
    assert lines[:2] == [
        f"aigateway: connection refused, retrying in {waits[0]:.1f} s (attempt 2 of 3)",
        f"aigateway: connection refused, retrying in {waits[1]:.1f} s (attempt 3 of 3)",
    ]
    assert lines[2].startswith("aigateway: error: GET /v1/models failed: ConnectError")
    assert len(lines) == 3


def test_ctrl_c_in_process_is_status_130(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(args: object, out: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setitem(cli.COMMANDS, "chat", interrupted)
    assert cli.main(["chat", "Hi", "--mock"]) == 130
    assert "Traceback" not in capsys.readouterr().err


# Conversations: interactive, continued, stored; --usage; run's output.


def reply_text(*prompts: str, model: str = "gpt-4o-mini") -> str:
    """The mock's reply to the last of ``prompts``, after its own replies to the others."""
    messages: list[dict[str, str]] = []
    with MockGateway().client() as client:
        for prompt in prompts:
            messages.append({"role": "user", "content": prompt})
            text = client.chat.completions.create(model=model, messages=messages).text
            messages.append({"role": "assistant", "content": text})
    return messages[-1]["content"]


def stored(state: Path) -> dict[str, Any]:
    """The conversations stored under ``state``, by id."""
    files = sorted((state / "conversations").glob("*.json"))
    return {path.stem: json.loads(path.read_text()) for path in files}


def posts(gateway: MockGateway) -> list[Any]:
    return [json.loads(r.body) for r in gateway.requests if r.method == "POST"]


def test_continue_sends_the_conversation_so_far(
    capsys: pytest.CaptureFixture[str], gateways: list[MockGateway], state_dir: Path
) -> None:
    argv = ["chat", "Hello", "--mock", "--model", "gpt-4o", "--system", "Be brief"]
    assert cli.main([*argv, "--api-key", "sk-never-stored-1234"]) == 0
    first = capsys.readouterr().out.strip()
    assert cli.main(["chat", "-c", "And then?", "--mock"]) == 0
    second = capsys.readouterr().out.strip()
    history = [
        {"role": "system", "content": "Be brief"},
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": first},
        {"role": "user", "content": "And then?"},
    ]
    assert sent(gateways[1])["messages"] == history
    assert sent(gateways[1])["model"] == "gpt-4o"  # the conversation's model
    (conversation_id, saved), *others = stored(state_dir).items()
    assert not others
    assert saved == {
        "model": "gpt-4o",
        "messages": [*history, {"role": "assistant", "content": second}],
    }
    assert (state_dir / "conversations" / "last").read_text() == conversation_id + "\n"
    for path in state_dir.rglob("*"):
        assert "sk-never-stored" not in path.read_text() if path.is_file() else True

    assert (
        cli.main(
            [
                "chat",
                "--conversation",
                conversation_id,
                "Once more",
                "--mock",
                "--model",
                "gpt-4o-mini",
            ]
        )
        == 0
    )
    assert sent(gateways[2])["model"] == "gpt-4o-mini"  # --model switches the conversation's
    assert len(posts(gateways[2])[-1]["messages"]) == 6
    assert stored(state_dir)[conversation_id]["model"] == "gpt-4o-mini"


def test_a_new_chat_becomes_the_last_and_no_save_stores_nothing(
    capsys: pytest.CaptureFixture[str], gateways: list[MockGateway], state_dir: Path
) -> None:
    assert cli.main(["chat", "One", "--mock"]) == 0
    assert cli.main(["chat", "Two", "--mock"]) == 0
    assert cli.main(["chat", "Three", "--mock", "--no-save"]) == 0
    assert len(stored(state_dir)) == 2
    assert cli.main(["chat", "-c", "More", "--mock", "--no-save"]) == 0
    assert [m["content"] for m in posts(gateways[3])[-1]["messages"]][::2] == ["Two", "More"]
    assert all(len(c["messages"]) == 2 for c in stored(state_dir).values())


def test_conversations_lists_the_stored_ones_latest_first(
    capsys: pytest.CaptureFixture[str], state_dir: Path
) -> None:
    assert cli.main(["conversations"]) == 0
    assert capsys.readouterr() == (
        "",
        f"aigateway: no conversations stored in {state_dir / 'conversations'}\n",
    )
    assert cli.main(["chat", "A first question", "--mock"]) == 0
    assert cli.main(["chat", "-c", "A follow-up", "--mock"]) == 0
    assert (
        cli.main(["chat", "  A second\n  conversation  " + "x" * 60, "--mock", "--model", "gpt-4o"])
        == 0
    )
    capsys.readouterr()
    (state_dir / "conversations" / "broken.json").write_text("{")
    os.utime(state_dir / "conversations" / "broken.json", (0, 0))  # the oldest
    assert cli.main(["conversations"]) == 0
    header, second, first, broken = capsys.readouterr().out.splitlines()
    assert header.split() == ["ID", "SAVED", "MODEL", "MESSAGES", "FIRST", "PROMPT"]
    assert second.split()[3:7] == ["gpt-4o", "2", "A", "second"]
    assert second.endswith("  A second conversation " + "x" * 23 + "...")  # 48 characters
    assert first.split()[3:] == ["gpt-4o-mini", "4", "A", "first", "question"]
    assert broken.startswith("broken ")
    assert broken.endswith("(not a stored conversation)")


def test_interactive_reads_lines_until_exit(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    gateways: list[MockGateway],
    state_dir: Path,
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("Hi\n\n  \nAgain\n  Exit \nnever sent\n"))
    assert cli.main(["chat", "-i", "--mock", "--no-stream"]) == 0
    out, err = capsys.readouterr()
    assert out == reply_text("Hi") + "\n" + reply_text("Hi", "Again") + "\n"
    assert err == ""  # from a pipe: no greeting, no prompt
    sent_messages = [body["messages"] for body in posts(gateways[0])]
    assert [len(messages) for messages in sent_messages] == [1, 3]
    assert "stream" not in posts(gateways[0])[0]
    (conversation,) = stored(state_dir).values()
    assert len(conversation["messages"]) == 4


def test_interactive_starts_with_the_prompt_argument_and_continues(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    gateways: list[MockGateway],
    state_dir: Path,
) -> None:
    assert cli.main(["chat", "Hi", "--mock"]) == 0
    monkeypatch.setattr(sys, "stdin", Terminal("Again\nquit\n"))
    assert cli.main(["chat", "-c", "-i", "Next", "--mock"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[1:] == [reply_text("Hi", "Next"), reply_text("Hi", "Next", "Again")]
    conversation_id = next(iter(stored(state_dir)))
    assert err.startswith(
        f"Continuing conversation {conversation_id} (2 messages) with gpt-4o-mini."
    )
    assert [len(body["messages"]) for body in posts(gateways[1])] == [3, 5]


class InterruptedOnce(io.StringIO):
    """stdout, where Ctrl-C arrives while the first reply is being written."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        if self.writes == 3:
            raise KeyboardInterrupt
        return super().write(text)


def test_ctrl_c_during_a_reply_stops_it_and_the_conversation_goes_on(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    gateways: list[MockGateway],
    state_dir: Path,
) -> None:
    out = InterruptedOnce()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stdin", io.StringIO("Tell me a story\nAgain\n"))
    assert cli.main(["chat", "-i", "--mock"]) == 0
    assert capsys.readouterr().err == "aigateway: reply stopped\n"
    partial, whole = out.getvalue().splitlines()
    assert reply_text("Tell me a story").startswith(partial)
    assert len(partial) < len(reply_text("Tell me a story"))
    (conversation,) = stored(state_dir).values()
    messages = conversation["messages"]
    assert messages[1]["content"] in reply_text("Tell me a story")
    assert messages[1]["content"].startswith(partial)
    assert messages[3] == {"role": "assistant", "content": whole}
    assert posts(gateways[0])[1]["messages"][1] == messages[1]


class CtrlCAtThePrompt(io.StringIO):
    def readline(self, size: int | None = -1) -> str:
        line = super().readline()
        if not line:
            raise KeyboardInterrupt
        return line


def test_ctrl_c_at_the_prompt_leaves_with_130_and_keeps_the_conversation(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, state_dir: Path
) -> None:
    monkeypatch.setattr(sys, "stdin", CtrlCAtThePrompt("Hi\n"))
    assert cli.main(["chat", "-i", "--mock"]) == 130
    out, err = capsys.readouterr()
    assert out == reply_text("Hi") + "\n"
    assert err == "\n"
    (conversation,) = stored(state_dir).values()
    assert len(conversation["messages"]) == 2


def test_a_failed_turn_is_reported_and_the_conversation_goes_on(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, state_dir: Path
) -> None:
    gateway = MockGateway()
    gateway.faults.fail(400)
    monkeypatch.setattr(cli, "_client", lambda args: gateway.client())
    monkeypatch.setattr(sys, "stdin", io.StringIO("Refused\nHi\n"))
    assert cli.main(["chat", "-i"]) == 1
    out, err = capsys.readouterr()
    assert err.startswith("aigateway: error: ")
    assert err.count("\n") == 1
    assert out == reply_text("Hi") + "\n"
    (conversation,) = stored(state_dir).values()
    assert conversation["messages"][0]["content"] == "Hi"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-i", "--json"], "--json prints one reply; it cannot be used with --interactive"),
        (["-i", "-"], "'-' reads the prompt from stdin, where --interactive reads its lines"),
        (["-c", "--system", "S", "Hi"], "--system starts a new conversation"),
        (["--conversation", "x", "--system", "S", "Hi"], "--system starts a new conversation"),
    ],
)
def test_chat_options_that_do_not_go_together(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert cli.main(["chat", *argv, "--mock"]) == 2
    assert message in capsys.readouterr().err


def test_continue_and_conversation_are_one_or_the_other(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        cli.main(["chat", "-c", "--conversation", "x", "Hi", "--mock"])
    assert caught.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "argv", "message"),
    [
        (None, ["-c"], "there is no conversation to continue yet: start one without --continue"),
        (
            None,
            ["--conversation", "nope"],
            "no stored conversation 'nope' (see `aigateway conversations`)",
        ),
        (None, ["--conversation", "../secrets"], "'../secrets' is no conversation id"),
        (
            "{not json",
            ["--conversation", "c1"],
            "c1.json is not a stored conversation: not valid JSON",
        ),
        (
            "[]",
            ["--conversation", "c1"],
            "c1.json is not a stored conversation: a JSON object was expected, got list",
        ),
        ('{"messages": []}', ["--conversation", "c1"], "'model' is missing or not a string"),
        ('{"model": "m", "messages": {}}', ["-c"], "'messages' is missing or not a list"),
        (
            '{"model": "m", "messages": [{"role": "robot", "content": "x"}]}',
            ["-c"],
            "messages[0] is not an object with a role (system, user, assistant)",
        ),
        (
            '{"model": "m", "messages": [{"role": "user", "content": 3}]}',
            ["-c"],
            "and a string content",
        ),
        (b"\xff\xfe", ["-c"], "cannot read"),
    ],
)
def test_a_conversation_that_cannot_be_used_is_one_line_and_status_1(
    capsys: pytest.CaptureFixture[str],
    gateways: list[MockGateway],
    state_dir: Path,
    content: str | bytes | None,
    argv: list[str],
    message: str,
) -> None:
    folder = state_dir / "conversations"
    if content is not None:
        folder.mkdir(parents=True)
        path = folder / "c1.json"
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        (folder / "last").write_text("c1\n")
    assert cli.main(["chat", *argv, "Hi", "--mock"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("aigateway: error: ")
    assert message in err
    assert gateways == []  # found before any client was made


def expected_usage(prompt: str) -> str:
    with MockGateway().client() as client:
        messages = [{"role": "user", "content": prompt}]
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages)
        pricing = (client.models.retrieve("gpt-4o-mini").model_extra or {})["pricing"]
    usage = reply.usage
    assert usage is not None
    cost = (
        Decimal(repr(pricing["input_per_1k"])) * usage.prompt_tokens
        + Decimal(repr(pricing["output_per_1k"])) * usage.completion_tokens
    ) / 1000
    return (
        f"aigateway: usage: tokens {usage.prompt_tokens} prompt, {usage.completion_tokens} "
        f"completion, {usage.total_tokens} total; credits {cost.normalize():f} cost, "
        f"{reply.remaining_credits!r} remaining\n"
    )


@pytest.mark.parametrize("stream", ["--stream", "--no-stream"])
def test_usage_shows_tokens_and_credits_on_stderr(
    capsys: pytest.CaptureFixture[str], gateways: list[MockGateway], stream: str
) -> None:
    assert cli.main(["chat", "Hello", "--mock", "--usage", stream]) == 0
    out, err = capsys.readouterr()
    assert out == reply_text("Hello") + "\n"
    assert err == expected_usage("Hello")
    assert "0.000" in err  # the mock's gpt-4o-mini: a fraction of a credit
    if stream == "--stream":
        assert sent(gateways[0])["stream_options"] == {"include_usage": True}
    else:
        assert "stream_options" not in sent(gateways[0])
    assert [r.path for r in gateways[0].requests].count("/v1/models/gpt-4o-mini") == 1


def test_usage_after_each_reply_of_a_conversation_asks_prices_once(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, gateways: list[MockGateway]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("One\nTwo\n"))
    assert cli.main(["chat", "-i", "--mock", "--usage"]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2
    assert all(line.startswith("aigateway: usage: tokens ") for line in lines)
    assert [r.path for r in gateways[0].requests].count("/v1/models/gpt-4o-mini") == 1


def test_usage_says_what_it_does_not_know() -> None:
    from aigateway.cli.format import usage_line
    from aigateway.types.chat import Usage

    usage = Usage(prompt_tokens=1000, completion_tokens=2000)
    assert usage_line(usage, {"input_per_1k": 0.1, "output_per_1k": 0.2}, 5.0) == (
        "aigateway: usage: tokens 1000 prompt, 2000 completion, 3000 total; "
        "credits 0.5 cost, 5 remaining\n"
    )
    assert usage_line(usage, {"per_image": 1}, None).endswith(
        "credits unknown cost, unknown remaining\n"
    )
    assert usage_line(None, None, 1e-05) == (
        "aigateway: usage: tokens unknown; credits unknown cost, 0.00001 remaining\n"
    )


def test_run_prints_each_field_once(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "flux-schnell", "--input", "prompt=a cat", "--mock"]) == 0
    text = capsys.readouterr().out
    result = json.loads(text)
    assert text.count('"image_url"') == 1
    assert set(result) == {
        "remaining_credits",
        "balance_warning",
        "id",
        "object",
        "created",
        "model",
        "category",
        "output",
        "usage",
    }
    assert result["output"]["image_url"].startswith("http")


def test_run_json_keeps_top_level_fields_of_the_gateways_own() -> None:
    from aigateway.cli.format import run_json
    from aigateway.types.services import RunResult

    flat = RunResult.model_validate({"id": "run_1", "text": "hi", "tokens": 3})
    assert json.loads(run_json(flat)) == {
        "remaining_credits": None,
        "balance_warning": None,
        "id": "run_1",
        "object": None,
        "created": None,
        "model": None,
        "category": None,
        "usage": None,
        "output": {"text": "hi", "tokens": 3},
    }
    both = RunResult.model_validate({"output": {"a": 1, "b": 2}, "b": 3})
    data = json.loads(run_json(both))
    assert (data["output"], data["b"], "a" in data) == ({"a": 1, "b": 2}, 3, False)


def test_the_state_directory_follows_the_platform(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from aigateway.cli.conversations import state_dir

    assert state_dir() == tmp_path / "state"  # the override
    monkeypatch.delenv("AIGATEWAY_STATE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("USERPROFILE", str(tmp_path))
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert state_dir() == tmp_path / "xdg" / "aigateway"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/path")  # ignored, as the XDG spec says
    assert state_dir() == tmp_path / ".local" / "state" / "aigateway"
    monkeypatch.setattr(sys, "platform", "darwin")
    assert state_dir() == tmp_path / "Library" / "Application Support" / "aigateway"
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))  # set: it counts on macOS too
    assert state_dir() == tmp_path / "xdg" / "aigateway"
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path / "Local"))
    assert state_dir() == tmp_path / "Local" / "aigateway"


def test_a_save_is_whole_or_not_at_all(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from aigateway.cli.conversations import Conversation, ConversationStore

    store = ConversationStore(tmp_path / "c")
    conversation = Conversation("c1", "m", [{"role": "user", "content": "first"}])
    store.save(conversation)
    if sys.platform != "win32":
        assert (tmp_path / "c").stat().st_mode & 0o777 == 0o700
        assert (tmp_path / "c" / "c1.json").stat().st_mode & 0o777 == 0o600

    def failing_replace(source: str, target: object) -> None:
        raise OSError("disk full")

    conversation.messages.append({"role": "assistant", "content": "second"})
    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        store.save(conversation)
    monkeypatch.undo()
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["c1.json", "last"]  # no leftovers
    assert store.load("c1").messages == [{"role": "user", "content": "first"}]
