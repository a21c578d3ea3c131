"""The ``aigateway`` command, run in-process."""

from __future__ import annotations

import httpx
import pytest

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
