"""Every code example in README.md, docs/ and examples/ runs, against the bundled mock.

Examples written for a real gateway (``Client()`` reading ``AIGATEWAY_API_KEY`` and
``AIGATEWAY_BASE_URL``) get those variables pointing at an in-process `MockGateway`, reached
through respx, so no example can rot and none needs a key or a network.
"""

from __future__ import annotations

import re
import runpy
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import respx

from aigateway.testing import MockGateway

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def doc_blocks() -> list[tuple[str, str]]:
    blocks = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]:
        for index, match in enumerate(FENCE.finditer(path.read_text(encoding="utf-8"))):
            blocks.append((f"{path.relative_to(ROOT)}#{index + 1}", match.group(1)))
    return blocks


def example_files() -> list[Path]:
    return sorted((ROOT / "examples").glob("*.py"))


@pytest.fixture
def mock_gateway_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[MockGateway]:
    """AIGATEWAY_* pointing at an in-process mock gateway."""
    gateway = MockGateway(seed=7)
    transport = gateway.transport()

    def answer(request: httpx.Request) -> httpx.Response:
        response = transport.handle_request(request)
        return httpx.Response(
            response.status_code, headers=response.headers, content=response.read()
        )

    monkeypatch.setenv("AIGATEWAY_API_KEY", gateway.api_key)
    monkeypatch.setenv("AIGATEWAY_BASE_URL", str(gateway.base_url))
    with respx.mock(assert_all_called=False) as router:
        router.route(host=httpx.URL(str(gateway.base_url)).host).mock(side_effect=answer)
        router.route(host="127.0.0.1").pass_through()  # examples serving a mock on a local port
        yield gateway


def test_there_are_examples_to_run() -> None:
    assert len(doc_blocks()) >= 5
    assert example_files()


@pytest.mark.parametrize(("where", "code"), doc_blocks(), ids=[where for where, _ in doc_blocks()])
def test_doc_example_runs(where: str, code: str, mock_gateway_env: MockGateway) -> None:
    # dont_inherit: run as a plain script, not under this module's `from __future__` imports
    exec(compile(code, where, "exec", dont_inherit=True), {"__name__": "__doc_example__"})


@pytest.mark.parametrize("path", example_files(), ids=lambda p: p.name)
def test_example_script_runs(
    path: Path, mock_gateway_env: MockGateway, capsys: pytest.CaptureFixture[str]
) -> None:
    runpy.run_path(str(path), run_name="__main__")
    assert capsys.readouterr().out.strip(), f"{path.name} printed nothing"
