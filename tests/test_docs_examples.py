"""Every code example in README.md, docs/ and examples/ runs as a reader pastes it.

Each block runs in a fresh Python process (``python -c``, from a temporary directory) whose
environment has no ``AIGATEWAY_*`` variable, plus only what the page's own setup gives:

- A page carrying the tip "Run these examples without a key" (written once in
  ``docs/.snippets/run-without-a-key.md``, included with pymdownx.snippets; README.md carries
  its own copy) gets a served mock started as the tip says: its ``aigateway mock serve ...``
  command, run as ``python -m aigateway mock serve ... --port 0``. The ``export`` lines it
  prints are the variables of the page's blocks, which run in order against that one mock, as
  a reader would run them in one terminal. The mock is stopped at the end of the page.
- A page without the tip gets no variables: a block that needs them fails.
- An example script is a page of one block; it gets the served mock when its module docstring
  gives the ``aigateway mock serve`` command, else nothing, and must print something.

Bash blocks run under ``bash -eu`` with the page's variables, except those containing a line
that installs (``pip install``), runs until interrupted (``mock serve``, ``mkdocs serve``),
runs the test suite or CI (``pytest``, ``.ci/run``) or the benchmarks (``bench``): those are
skipped. README.md's two newcomer commands are checked by tests/test_readme_commands.py.

Pages run concurrently (one worker per CPU), each page's blocks one after the other.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SETUP_TITLE = "Run these examples without a key"
INCLUDE = re.compile(r'^--8<-- "([^"]+)"$', re.MULTILINE)
FENCE = re.compile(r"^```(python|bash)\n(.*?)^```", re.MULTILINE | re.DOTALL)
SERVE = re.compile(r"^[>\s]*(aigateway mock serve\b.*)$", re.MULTILINE)
NEEDS_GATEWAY = re.compile(r"\b(?:Async)?Client\(\s*\)")
"""A Python block that needs AIGATEWAY_API_KEY and AIGATEWAY_BASE_URL."""
COMMAND_NEEDS_GATEWAY = re.compile(r"^(?!.*--mock)(?!.*mock serve).*\baigateway \w", re.MULTILINE)
"""A shell line running an `aigateway` command that needs them (not `--mock`, not the mock)."""
SKIPPED_BASH = re.compile(r"pip install|mock serve|mkdocs serve|pytest|\.ci/run|\bbench\b")
BLOCK_TIMEOUT = 30


@dataclass(frozen=True)
class Block:
    where: str
    language: str
    code: str


@dataclass(frozen=True)
class Page:
    name: str
    setup: str | None  # the page's `aigateway mock serve ...` command, if it carries the tip
    blocks: tuple[Block, ...]
    is_script: bool = False


def expand_includes(text: str) -> str:
    """The page as mkdocs renders it: snippet includes replaced by the included files."""
    return INCLUDE.sub(lambda m: (ROOT / m.group(1)).read_text(encoding="utf-8"), text)


def setup_command(text: str) -> str | None:
    if SETUP_TITLE not in text:
        return None
    tip = text.split(SETUP_TITLE, 1)[1]
    match = SERVE.search(tip)
    assert match, f"the tip {SETUP_TITLE!r} gives no `aigateway mock serve` command"
    return match.group(1).strip()


def doc_page(path: Path) -> Page:
    text = expand_includes(path.read_text(encoding="utf-8"))
    name = str(path.relative_to(ROOT))
    blocks = tuple(
        Block(f"{name}#{index + 1}", language, code)
        for index, (language, code) in enumerate(match.groups() for match in FENCE.finditer(text))
    )
    return Page(name, setup_command(text), blocks)


def script_page(path: Path) -> Page:
    code = path.read_text(encoding="utf-8")
    match = SERVE.search(code.split('"""')[1]) if code.startswith('"""') else None
    name = str(path.relative_to(ROOT))
    setup = match.group(1).strip() if match else None
    return Page(name, setup, (Block(name, "python", code),), is_script=True)


def pages() -> list[Page]:
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    found = [doc_page(path) for path in docs]
    found += [script_page(path) for path in sorted((ROOT / "examples").glob("*.py"))]
    return [page for page in found if page.blocks]


PAGES = {page.name: page for page in pages()}


def reader_environment(bytecode: str) -> dict[str, str]:
    """The test's environment without any AIGATEWAY_* variable; this checkout's code first.

    Bytecode is cached (in ``bytecode``, outside the checkout) as on a reader's machine, so
    that each fresh process does not compile the package again.
    """
    env = {key: value for key, value in os.environ.items() if not key.startswith("AIGATEWAY_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = bytecode
    return env


def serve_mock(command: str, env: dict[str, str]) -> tuple[subprocess.Popen[str], dict[str, str]]:
    """Start the served mock as the page says (on a free port); its printed exports."""
    argv = [sys.executable, "-m", *command.split(), "--port", "0"]
    with tempfile.TemporaryFile("w+") as errors:  # a file: a pipe nobody reads could fill up
        process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=errors, text=True)
        assert process.stdout is not None
        exports: dict[str, str] = {}
        for line in process.stdout:
            if line.startswith("export "):
                key, _, value = line.removeprefix("export ").strip().partition("=")
                exports[key] = value
            if line.startswith("Press Ctrl-C"):
                return process, exports
        stop(process)
        errors.seek(0)
        raise AssertionError(f"`{command}` did not start: {errors.read()}")


def stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    process.wait(timeout=10)
    if process.stdout is not None:
        process.stdout.close()


def run_block(block: Block, env: dict[str, str], cwd: str, script: bool) -> str | None:
    """None when the block ran (or is skipped by rule), else what went wrong."""
    if block.language == "bash":
        if SKIPPED_BASH.search(block.code):
            return None
        argv = ["bash", "-euc", block.code]
    elif script:
        argv = [sys.executable, str(ROOT / block.where)]
    else:
        argv = [sys.executable, "-c", block.code]
    try:
        done = subprocess.run(
            argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=BLOCK_TIMEOUT
        )
    except subprocess.TimeoutExpired:
        return f"{block.where} did not finish in {BLOCK_TIMEOUT} s"
    if done.returncode != 0:
        return f"{block.where} failed (exit {done.returncode}):\n{done.stderr}"
    if script and not done.stdout.strip():
        return f"{block.where} printed nothing"
    return None


def run_page(page: Page, bytecode: str) -> list[str]:
    """The page's blocks in order, as a reader would run them; the failures."""
    env = reader_environment(bytecode)
    server = None
    if page.setup:
        server, exports = serve_mock(page.setup, env)
        env.update(exports)
    try:
        with tempfile.TemporaryDirectory() as cwd:
            problems = [run_block(block, env, cwd, page.is_script) for block in page.blocks]
    finally:
        if server is not None:
            stop(server)
    return [problem for problem in problems if problem]


@pytest.fixture(scope="module")
def page_results(request: pytest.FixtureRequest) -> Iterator[dict[str, Future[list[str]]]]:
    """The selected pages, started together: pages are independent, a page's blocks are not."""
    wanted = [
        item.callspec.params["name"]
        for item in request.session.items
        if getattr(item, "originalname", None) == "test_page_runs_as_pasted"
    ]
    with (
        tempfile.TemporaryDirectory() as bytecode,
        ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool,
    ):
        yield {name: pool.submit(run_page, PAGES[name], bytecode) for name in wanted}


def test_there_are_examples_to_run() -> None:
    assert sum(len(page.blocks) for page in PAGES.values()) >= 50
    assert any(page.is_script for page in PAGES.values())


@pytest.mark.parametrize("name", [name for name, page in PAGES.items() if not page.is_script])
def test_a_page_needing_a_gateway_carries_the_setup_near_its_top(name: str) -> None:
    page = PAGES[name]
    needing = [
        b.where
        for b in page.blocks
        if (NEEDS_GATEWAY if b.language == "python" else COMMAND_NEEDS_GATEWAY).search(b.code)
    ]
    if needing:
        assert page.setup, f"{needing} need a gateway but {name} has no {SETUP_TITLE!r}"
    if page.setup:
        text = expand_includes((ROOT / name).read_text(encoding="utf-8"))
        before = text.split(SETUP_TITLE, 1)[0]
        assert "```python" not in before, f"{name}: the setup comes after the first example"
        assert needing or "AIGATEWAY_" in "".join(b.code for b in page.blocks), (
            f"{name} carries the setup but no block needs it"
        )


def test_the_docs_setup_is_written_once() -> None:
    setups = {page.setup for page in PAGES.values() if page.setup and not page.is_script}
    assert len(setups) == 1, f"README.md and docs/ give different setups: {setups}"
    for name, page in PAGES.items():
        if name.startswith("docs/") and page.setup:
            raw = (ROOT / name).read_text(encoding="utf-8")
            assert SETUP_TITLE not in raw, f"{name}: include docs/.snippets/run-without-a-key.md"


@pytest.mark.parametrize("name", list(PAGES))
def test_page_runs_as_pasted(name: str, page_results: dict[str, Future[list[str]]]) -> None:
    problems = page_results[name].result()
    assert not problems, "\n\n".join(problems)


def test_a_block_needing_a_gateway_fails_on_a_page_without_the_setup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The test's own promise: no AIGATEWAY_* variable leaks from the test's environment."""
    code = "from aigateway import Client\nClient().models.list()\n"
    page = Page("no-setup.md", None, (Block("no-setup.md#1", "python", code),))
    monkeypatch.setenv("AIGATEWAY_API_KEY", "leaked")
    problems = run_page(page, str(tmp_path))
    assert len(problems) == 1
    assert "no API key" in problems[0]
