"""The README's two newcomer commands stay true: CI runs the test command exactly as written,
and the quickstart the other command runs exists (tests/package/test_docs_examples.py runs it) and
says what its reply is; the install sections say where aigateway comes from, and where not."""

from __future__ import annotations

import re

import pytest

from .._paths import ROOT


def bash_block_after(heading: str) -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split(heading, 1)[1]
    match = re.search(r"```bash\n(.*?)\n```", section, re.DOTALL)
    assert match, f"no bash block after {heading!r}"
    return match.group(1).strip()


def test_ci_runs_the_readme_test_command_exactly() -> None:
    command = bash_block_after("## Run the tests")
    assert "pytest" in command
    ci = ROOT / ".ci" / "run"
    if not ci.exists():
        pytest.skip("not a checkout (the sdist holds no CI scripts)")
    assert command in ci.read_text(encoding="utf-8").splitlines()


def test_the_try_it_command_runs_an_example_that_exists() -> None:
    command = bash_block_after("## Try it")
    script = re.search(r"python (examples/\S+\.py)", command)
    assert script, command
    assert (ROOT / script.group(1)).is_file()
    assert "pip install" in command


def section(text: str, heading: str) -> str:
    return text.split(heading, 1)[1].split("\n## ", 1)[0]


def test_the_try_it_section_says_the_mocks_reply_is_deterministic_filler() -> None:
    """A newcomer sees shuffled words: the page, and the example's own output, say why."""
    try_it = section((ROOT / "README.md").read_text(encoding="utf-8"), "## Try it")
    assert "filler" in try_it
    assert "deterministic" in try_it
    quickstart = (ROOT / "examples" / "quickstart.py").read_text(encoding="utf-8")
    printed = " ".join(re.findall(r'print\(f?"([^"]*)', quickstart))
    assert "deterministic filler" in printed
    assert "enqueue_reply" in printed


@pytest.mark.parametrize("page", ["README.md", "docs/index.md"])
def test_the_install_section_warns_of_the_packages_with_the_same_import_name(page: str) -> None:
    install = section((ROOT / page).read_text(encoding="utf-8"), "## Install")
    assert "not on the Python Package Index" in " ".join(install.split())
    for name in ("`aigateway-py`", "`aigateway-sdk`"):
        assert name in install
    assert "git+" not in install
