"""Every code example in README.md, docs/ and examples/ runs as a reader pastes it.

Each block runs in a fresh Python process (``python -c``, from a temporary directory) whose
environment has no ``AIGATEWAY_*`` variable, plus only what the page's own setup gives. The
scripts folder of the Python running the tests comes first on ``PATH``, as in a reader's
activated environment, so ``aigateway`` and ``python`` are this installation's whether or
not the environment running the tests is activated.

- A page carrying the tip "Run these examples without a key" (a copy of `TIP` in each page:
  GitHub shows no include) gets a served mock started as the tip says: its
  ``aigateway mock serve ...`` command, run as ``python -m aigateway mock serve ... --port 0``.
  The ``export`` lines it prints are the variables of the page's blocks, which run in order
  against that one mock, as a reader would run them in one terminal. The mock is stopped at
  the end of the page.
- A page whose blocks read ``REDIS_URL`` also gets a real ``redis-server`` on a free port
  (tests/redis_server.py), its URL in ``REDIS_URL``; without ``redis-server`` it is skipped,
  saying how to install it (a failure under CI).
- A page without the tip gets no variables: a block that needs them fails.
- An example script is a page of one block; it gets the served mock when its module docstring
  gives the ``aigateway mock serve`` command, else nothing, and must print something.

Bash blocks run under ``bash -eu -o pipefail`` with the page's variables, except those
containing a line that installs (``pip install``), runs until interrupted (``mock serve``,
``redis-server``, ``mkdocs serve``), runs the test suite or CI (``pytest``, ``.ci/run``) or
the benchmarks (``bench``): those are skipped. What those lines may say is checked instead:
every ``pip install`` line in README.md, docs/, examples/ (and the optional-package errors,
tests/package/test_optional.py) installs from a checkout or a built wheel, naming only extras and
packages that ``pyproject.toml`` lists; every curl fails visibly and sends a JSON body as JSON.
README.md's two newcomer commands are checked by tests/package/test_readme_commands.py.

Pages run concurrently (one worker per CPU), each page's blocks one after the other.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shlex
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from aigateway._optional import extra_requirements

from .._paths import ROOT

SETUP_TITLE = "Run these examples without a key"
TIP = """\
> **Run these examples without a key.** They reach a gateway through two environment variables,
> `AIGATEWAY_BASE_URL` and `AIGATEWAY_API_KEY` (`Client()` and the `aigateway` command read
> them). To use the bundled mock gateway instead of a real one, start it in a second terminal
> (it needs the `server` extra: in a checkout, `python -m pip install -e '.[server]'`):
>
> ```bash
> aigateway mock serve --rate-limits unlimited --credits 1000
> ```
>
> then paste the `export AIGATEWAY_...` lines it prints into the terminal where you run the
> examples. The two options lift the mock's default limits (60 requests a minute, 20 credits)
> so that a page's examples can run in a row. Ctrl-C stops the mock.
"""
"""The tip, as every page that needs a gateway carries it (near its top, before any example)."""
FENCE = re.compile(r"^```(python|bash)\n(.*?)^```", re.MULTILINE | re.DOTALL)
SERVE = re.compile(r"^[>\s]*(aigateway mock serve\b.*)$", re.MULTILINE)
NEEDS_GATEWAY = re.compile(r"\b(?:Async)?Client\(\s*\)")
"""A Python block that needs AIGATEWAY_API_KEY and AIGATEWAY_BASE_URL."""
COMMAND_NEEDS_GATEWAY = re.compile(r"^(?!.*--mock)(?!.*mock serve).*\baigateway \w", re.MULTILINE)
"""A shell line running an `aigateway` command that needs them (not `--mock`, not the mock)."""
SKIPPED_BASH = re.compile(
    r"pip install|mock serve|redis-server|mkdocs serve|pytest|\.ci/run|\bbench\b"
)
RAW_INCLUDE = re.compile(r"^[ \t]*(?:-{1,2}8<-{1,2}|\{%\s*include\b)", re.MULTILINE)
"""A pymdownx.snippets or Jinja include line: GitHub would show it as it is."""
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

    @property
    def needs_redis(self) -> bool:
        return any("REDIS_URL" in block.code for block in self.blocks)


def setup_command(text: str) -> str | None:
    if SETUP_TITLE not in text:
        return None
    tip = text.split(SETUP_TITLE, 1)[1]
    match = SERVE.search(tip)
    assert match, f"the tip {SETUP_TITLE!r} gives no `aigateway mock serve` command"
    return match.group(1).strip()


def doc_page(path: Path) -> Page:
    text = path.read_text(encoding="utf-8")
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


def doc_paths() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def pages() -> list[Page]:
    found = [doc_page(path) for path in doc_paths()]
    found += [script_page(path) for path in sorted((ROOT / "examples").glob("*.py"))]
    return [page for page in found if page.blocks]


PAGES = {page.name: page for page in pages()}


def reader_environment(bytecode: str) -> dict[str, str]:
    """The test's environment without any AIGATEWAY_* variable; this checkout's code first,
    and this installation's scripts (``aigateway``, ``python``) first on PATH.

    Bytecode is cached (in ``bytecode``, outside the checkout) as on a reader's machine, so
    that each fresh process does not compile the package again.
    """
    env = {key: value for key, value in os.environ.items() if not key.startswith("AIGATEWAY_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    env["PATH"] = os.pathsep.join(filter(None, [sysconfig.get_path("scripts"), env.get("PATH")]))
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
        argv = ["bash", "-eu", "-o", "pipefail", "-c", block.code]
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
        return f"{block.where} failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}"
    if script and not done.stdout.strip():
        return f"{block.where} printed nothing"
    return None


def run_page(page: Page, bytecode: str, variables: dict[str, str] | None = None) -> list[str]:
    """The page's blocks in order, as a reader would run them, with the page's ``variables``
    (besides the served mock's); the failures."""
    env = reader_environment(bytecode) | (variables or {})
    server = None
    if page.setup:
        server, exports = serve_mock(page.setup, env)
        env.update(exports)
    try:
        with tempfile.TemporaryDirectory() as cwd:
            env["XDG_STATE_HOME"] = cwd  # the page's chat conversations: its own, not the user's
            problems = [run_block(block, env, cwd, page.is_script) for block in page.blocks]
    finally:
        if server is not None:
            stop(server)
    return [problem for problem in problems if problem]


@dataclass
class PageRuns:
    """The selected pages, started together (pages are independent, a page's blocks are not);
    pages needing Redis run in their own test, once it has the redis-server fixture."""

    bytecode: str
    started: dict[str, Future[list[str]]]


@pytest.fixture(scope="module")
def page_runs(request: pytest.FixtureRequest) -> Iterator[PageRuns]:
    wanted = [
        item.callspec.params["name"]
        for item in request.session.items
        if getattr(item, "originalname", None) == "test_page_runs_as_pasted"
    ]
    with (
        tempfile.TemporaryDirectory() as bytecode,
        ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool,
    ):
        started = {
            name: pool.submit(run_page, PAGES[name], bytecode)
            for name in wanted
            if not PAGES[name].needs_redis
        }
        yield PageRuns(bytecode, started)


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
        text = (ROOT / name).read_text(encoding="utf-8")
        before = text.split(SETUP_TITLE, 1)[0]
        assert "```python" not in before, f"{name}: the setup comes after the first example"
        assert needing or "AIGATEWAY_" in "".join(b.code for b in page.blocks), (
            f"{name} carries the setup but no block needs it"
        )


def tip_copies() -> dict[str, str]:
    """Page name -> its copy of the tip: the quoted lines from its title on."""
    copies = {}
    for path in doc_paths():
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        starts = [n for n, line in enumerate(lines) if line.startswith(f"> **{SETUP_TITLE}")]
        for start in starts:
            end = start
            while end < len(lines) and lines[end].startswith(">"):
                end += 1
            copies[str(path.relative_to(ROOT))] = "".join(lines[start:end])
    return copies


def test_every_copy_of_the_tip_is_the_same() -> None:
    """Each page carries the tip itself (an include would show as a raw line on GitHub); the
    copies cannot drift apart: they are all `TIP`."""
    copies = tip_copies()
    assert "README.md" in copies
    assert "docs/index.md" in copies
    differing = sorted(name for name, text in copies.items() if text != TIP)
    assert not differing, f"{differing}: copy the tip from TIP in {Path(__file__).name}"
    assert {page.setup for page in PAGES.values() if page.setup and not page.is_script} == {
        setup_command(TIP)
    }


def test_no_page_has_a_raw_include_line() -> None:
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        match = RAW_INCLUDE.search(path.read_text(encoding="utf-8"))
        assert match is None, f"{path.relative_to(ROOT)}: {match.group(0)!r} (GitHub shows it)"


@pytest.mark.parametrize("name", list(PAGES))
def test_page_runs_as_pasted(
    name: str, page_runs: PageRuns, request: pytest.FixtureRequest
) -> None:
    page = PAGES[name]
    if page.needs_redis:
        redis_url: str = request.getfixturevalue("redis_url")  # skipped without redis-server
        problems = run_page(page, page_runs.bytecode, {"REDIS_URL": redis_url})
    else:
        problems = page_runs.started[name].result()
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


def test_blocks_find_this_installation_without_an_activated_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``aigateway`` in a bash block is this installation's command even when PATH lacks it."""
    monkeypatch.setenv("PATH", os.pathsep.join(["/usr/bin", "/bin"]))
    page = Page("path.md", None, (Block("path.md#1", "bash", "aigateway --help >/dev/null"),))
    assert run_page(page, str(tmp_path)) == []


# What readers paste without it being run: install lines and curl commands.

INSTALL = re.compile(r"pip install\b([^`\n#&|;)]*)")
"""What follows ``pip install`` on a line or in an inline code span, up to a comment or the
next command."""


def project_extras() -> dict[str, list[str]]:
    """pyproject.toml's extras and their requirements (the installed metadata on Python 3.10,
    which has no tomllib)."""
    try:
        import tomllib
    except ImportError:  # pragma: no cover - Python 3.10
        names = importlib.metadata.metadata("aigateway").get_all("Provides-Extra") or []
        return {extra: extra_requirements(extra) for extra in names}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    optional: dict[str, list[str]] = project["optional-dependencies"]
    return optional


def version() -> str:
    text = (ROOT / "src" / "aigateway" / "_version.py").read_text(encoding="utf-8")
    found = re.search(r"""__version__ = ["']([^"']+)["']""", text)
    assert found
    return found.group(1)


def package_name(requirement: str) -> str:
    """``'ray[data]>=2.9'`` -> ``'ray'``."""
    return re.split(r"[\[<>=!~; ]", requirement.strip(), maxsplit=1)[0].lower()


def install_problems(text: str) -> list[str]:
    """What is wrong with each ``pip install`` line in ``text``: every argument must be a
    checkout (``.``, ``'.[extra,...]'``), this version's wheel in ``dist/``, or a package
    pyproject.toml lists (by name, or with the version bound it gives); never aigateway by
    name (the names on the package index are other projects')."""
    extras = project_extras()
    requirements = {requirement for listed in extras.values() for requirement in listed}
    requirements |= {package_name(requirement) for requirement in requirements}
    wheel = f"dist/aigateway-{version()}-py3-none-any.whl"
    problems = []
    for match in INSTALL.finditer(text):
        line = f"pip install{match.group(1)}".strip()
        try:
            arguments = shlex.split(match.group(1))
        except ValueError as error:
            problems.append(f"{line!r}: {error}")
            continue
        if not arguments:
            continue  # prose naming the command, not a line to paste
        for argument in arguments:
            if argument in ("-e", "--editable", "--upgrade", "-U"):
                continue
            target, _, named = argument.partition("[")
            if target in (".", wheel) and (not named or named.endswith("]")):
                unknown = [e for e in named.rstrip("]").split(",") if e and e not in extras]
                if unknown:
                    problems.append(f"{line!r}: no extra {unknown} in pyproject.toml")
            elif argument not in requirements:
                problems.append(
                    f"{line!r}: {argument!r} is neither a checkout ('.', '.[extra]'), nor "
                    f"{wheel}, nor a package pyproject.toml lists"
                )
    return problems


def reader_texts() -> dict[str, str]:
    """Everything a reader may paste from: README.md, docs/ and examples/ (notebook cells too)."""
    texts = {str(path.relative_to(ROOT)): path.read_text(encoding="utf-8") for path in doc_paths()}
    for path in sorted((ROOT / "docs").rglob("*.md")):
        texts.setdefault(str(path.relative_to(ROOT)), path.read_text(encoding="utf-8"))
    for path in sorted((ROOT / "examples").iterdir()):
        if path.suffix in (".py", ".md"):
            texts[str(path.relative_to(ROOT))] = path.read_text(encoding="utf-8")
        elif path.suffix == ".ipynb":
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
            texts[str(path.relative_to(ROOT))] = "\n".join("".join(c["source"]) for c in cells)
    return texts


def test_install_lines_install_from_a_checkout_or_a_wheel() -> None:
    texts = reader_texts()
    problems = [f"{name}: {p}" for name, text in texts.items() for p in install_problems(text)]
    assert not problems, "\n".join(problems)
    assert any("pip install -e '.[" in text for text in texts.values())


@pytest.mark.parametrize(
    "line",
    [
        "pip install aigateway",
        "pip install 'aigateway[server]'",
        'pip install "aigateway @ git+https://github.com/aigateway-dev/aigateway-python"',
        "pip install aigateway-py",
        "pip install -e '.[no-such-extra]'",
        "pip install 'dist/aigateway-0.0.1-py3-none-any.whl'",
        "pip install 'uvicorn>=0.1'",
    ],
)
def test_an_install_line_of_another_form_is_refused(line: str) -> None:
    assert install_problems(f"`python -m {line}`")


def test_the_extras_table_lists_what_each_extra_installs() -> None:
    """docs/index.md's table of extras: every extra but ``dev``, and each one's packages."""
    text = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    table = text.split("| extra | adds | for |", 1)[1].split("\n\n", 1)[0]
    rows = re.findall(r"^\| `([\w-]+)` \| ([^|]+) \|", table, re.MULTILINE)
    listed = {extra: {package_name(name) for name in names.split(",")} for extra, names in rows}
    expected = {
        extra: {package_name(requirement) for requirement in requirements}
        for extra, requirements in project_extras().items()
        if extra != "dev"
    }
    assert listed == expected


CURL = re.compile(r"^[^#\n]*\bcurl\b(?:[^\n]*\\\n)*[^\n]*", re.MULTILINE)
ASSIGNMENT = re.compile(r"""^(\w+)=["']([^"'$]*)["']$""", re.MULTILINE)


def curl_problems(code: str) -> list[str]:
    """A curl command that exits 0 on an error reply, or sends a body without saying it is
    JSON (the gateway and the mock refuse a form with a 415)."""
    constants = dict(ASSIGNMENT.findall(code))
    problems = []
    for match in CURL.finditer(code):
        command = match.group(0)
        for name, value in constants.items():
            command = command.replace(f"${name}", value)
        words = shlex.split(command.replace("\\\n", " "), comments=True)
        if not {"--fail-with-body", "--fail", "-f"} & set(words):
            problems.append(f"{match.group(0)!r}: add --fail-with-body (an error exits 0)")
        if {"-d", "--data", "--data-raw", "--data-binary"} & set(words) and not any(
            word.lower() == "content-type: application/json" for word in words
        ):
            problems.append(f"{match.group(0)!r}: add -H 'Content-Type: application/json'")
    return problems


def test_curl_commands_fail_visibly_and_send_json_as_json() -> None:
    blocks = [b for page in PAGES.values() for b in page.blocks if b.language == "bash"]
    problems = [f"{b.where}: {p}" for b in blocks for p in curl_problems(b.code)]
    assert not problems, "\n".join(problems)
    assert sum(len(CURL.findall(b.code)) for b in blocks) >= 10
    assert curl_problems("curl -s -X POST http://x/y -d '{}'")  # the check itself


def test_the_changelog_page_links_to_the_repositorys_changelog() -> None:
    """docs/changelog.md is a short page (an include would show raw on GitHub) pointing at
    CHANGELOG.md in the repository the site names."""
    repo_url = re.search(r"^repo_url: (\S+)$", (ROOT / "mkdocs.yml").read_text(), re.MULTILINE)
    assert repo_url
    page = (ROOT / "docs" / "changelog.md").read_text(encoding="utf-8")
    assert f"]({repo_url.group(1)}/blob/main/CHANGELOG.md)" in page
    assert (ROOT / "CHANGELOG.md").is_file()
