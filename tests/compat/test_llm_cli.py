"""The ``llm`` command-line tool against the served mock: an OpenAI-compatible model set up in
``extra-openai-models.yaml`` (under a temporary ``LLM_USER_PATH``), run as a user runs it:
streamed and not, with a schema, with a tool. In that process too, sockets reach loopback
only (``_loopback_only`` as its ``sitecustomize``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from .._integrations import import_integration
from . import _loopback_only
from .conftest import OFFLINE, Served

import_integration("llm", "compat")


MODEL_ID = "aigateway-mock"
Run = Callable[..., str]


def llm_command() -> str:
    """The ``llm`` script installed beside this Python (or on the PATH)."""
    beside = Path(sys.executable).parent / "llm"
    found = str(beside) if beside.exists() else shutil.which("llm")
    if found is None:
        pytest.skip("the llm command is not installed")
    return found


def loopback_only_start(folder: Path, refused: Path) -> None:
    """Make ``folder`` hold a ``sitecustomize`` that, in a Python process with ``folder`` on
    its path, refuses everything beyond loopback from the start and writes what it refused
    to ``refused`` at exit."""
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(
        Path(_loopback_only.__file__).read_text(encoding="utf-8")
        + "\n\ninstall()\nimport atexit\n\n"
        + f"atexit.register(lambda: REFUSED and open({str(refused)!r}, 'w').write(repr(REFUSED)))\n",
        encoding="utf-8",
    )


@pytest.fixture
def llm(served: Served, tmp_path: Path) -> Run:
    """Run ``llm ARGS...`` against the mock; its stdout (a failure shows its stderr)."""
    home = tmp_path / "llm"
    home.mkdir()
    (home / "extra-openai-models.yaml").write_text(
        f"- model_id: {MODEL_ID}\n"
        "  model_name: gpt-4o-mini\n"
        f"  api_base: {served.url}\n"
        "  api_key_name: mock\n"
        "  supports_schema: true\n"
        "  supports_tools: true\n"
    )
    (home / "keys.json").write_text(json.dumps({"mock": served.api_key}))
    refused = tmp_path / "refused.txt"
    loopback_only_start(tmp_path / "site", refused)
    env = {key: value for key, value in os.environ.items() if not key.startswith("OPENAI_")}
    env.update(OFFLINE, LLM_USER_PATH=str(home), PYTHONPATH=str(tmp_path / "site"))
    command = llm_command()

    def run(*args: str) -> str:
        done = subprocess.run([command, *args], env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert not refused.exists(), f"llm tried to reach beyond loopback: {refused.read_text()}"
        return done.stdout

    return run


def test_prompt_streamed_and_not(served: Served, llm: Run) -> None:
    streamed = llm("-m", MODEL_ID, "--no-log", "Hi")
    whole = llm("-m", MODEL_ID, "--no-log", "--no-stream", "Hi")
    assert streamed.strip()
    assert streamed == whole
    bodies = served.chat_bodies()
    assert [body["stream"] for body in bodies] == [True, False]


def test_schema(served: Served, llm: Run) -> None:
    out = llm("-m", MODEL_ID, "--no-log", "--schema", "name, age int", "Invent a person")
    person = json.loads(out)
    assert isinstance(person["name"], str)
    assert isinstance(person["age"], int)
    (body,) = served.chat_bodies()
    assert body["response_format"]["type"] == "json_schema"


TEMPERATURE = (
    'def temperature(city: str) -> float:\n    """The temperature in a city."""\n    return 12.5\n'
)


def test_tool_chain_ends(served: Served, llm: Run) -> None:
    out = llm("-m", MODEL_ID, "--no-log", "--functions", TEMPERATURE, "Weather in Oslo?")
    assert "12.5" in out  # the answer after the tool round quotes its result
    first, second = served.chat_bodies()
    assert [tool["function"]["name"] for tool in first["tools"]] == ["temperature"]
    assert second["messages"][-1]["role"] == "tool"


def test_tool_without_a_docstring(llm: Run) -> None:
    undocumented = "def temperature(city: str) -> float:\n    return 12.5\n"
    assert "12.5" in llm("-m", MODEL_ID, "--no-log", "--functions", undocumented, "Oslo?")
