"""The house as docs/architecture.md draws it: layers as subpackages (their order is
import-linter's contract in pyproject.toml, run by CI), few private modules at the package root,
no import cycle among the modules as they load, and tests/ in folders that mirror the
subpackages.

import-linter sees every import, at any level; a cycle is about what runs when a module loads,
so the check here reads each module's own top-level imports (not those inside functions, which
run later, nor those under ``TYPE_CHECKING``, which never run)."""

from __future__ import annotations

import ast
from pathlib import Path

from .._paths import ROOT, SRC

PACKAGE = SRC / "aigateway"
MOST_PRIVATE_AT_ROOT = 12
TESTS = ROOT / "tests"
OTHER_TEST_FOLDERS = {
    "package": "the root modules (errors, display, optional extras) and whole-package checks",
    "compat": "agent frameworks driven against the served mock",
    "smoke": "the install lanes' suite, copied out of the checkout",
    "typing_snippets": "code the type checkers check (run by package/test_typing_snippets.py)",
}
"""The folders of tests/ that are no subpackage of aigateway, and what each holds."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_at_load(path: Path, name: str) -> set[str]:
    """The aigateway modules ``path`` imports when it loads: a ``from x import y`` counts as
    importing ``x.y`` when that is a module, else ``x``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, ast.If):
                if "TYPE_CHECKING" not in ast.unparse(node.test):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit([*node.body, *node.orelse, *node.finalbody])
                for handler in node.handlers:
                    visit(handler.body)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join([*parent, base] if base else parent)
                for alias in node.names:
                    found.add(f"{base}.{alias.name}")
                    found.add(base)

    visit(tree.body)
    return {module for module in found if module.startswith("aigateway")}


def load_graph() -> dict[str, set[str]]:
    modules = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    return {
        name: {target for target in imported_at_load(path, name) if target in modules} - {name}
        for name, path in modules.items()
    }


def test_no_import_cycle_at_load() -> None:
    graph = load_graph()
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done

    def walk(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                walk(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            walk(module, [module])
    assert not cycles, "import cycles at load:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_few_private_modules_at_the_package_root() -> None:
    private = sorted(
        path.name
        for path in PACKAGE.glob("_*.py")
        if path.name not in {"__init__.py", "__main__.py"}
    )
    assert len(private) <= MOST_PRIVATE_AT_ROOT, private


def test_the_layers_are_subpackages() -> None:
    """What docs/architecture.md names as layers are folders a newcomer sees first."""
    for layer in ("_client", "_pipeline", "_streams", "_http", "_call", "types", "resources"):
        assert (PACKAGE / layer / "__init__.py").is_file(), layer
    for layer in ("helpers", "integrations", "testing", "cli"):
        assert (PACKAGE / layer / "__init__.py").is_file(), layer


def test_the_tests_mirror_the_layers() -> None:
    """A test file sits in the folder of the subpackage it tests (named without the leading
    underscore: tests/pipeline for aigateway._pipeline), or in one of a few named others;
    none at the root of tests/."""
    at_root = sorted(path.name for path in TESTS.glob("test_*.py"))
    assert not at_root, f"{at_root} at the root of tests/: move each to its subpackage's folder"
    subpackages = {path.parent.name.lstrip("_") for path in PACKAGE.glob("*/__init__.py")}
    folders = {path.name for path in TESTS.iterdir() if path.is_dir() and path.name[0] not in "_."}
    strays = sorted(folders - subpackages - OTHER_TEST_FOLDERS.keys())
    assert not strays, f"folders {strays} in tests/ mirror no subpackage ({sorted(subpackages)})"
    untested = sorted(subpackages - folders)
    assert not untested, f"no folder in tests/ for the subpackages {untested}"
    for path in TESTS.rglob("test_*.py"):  # packages: relative imports, repeated file names
        assert (path.parent / "__init__.py").is_file(), f"{path.parent} has no __init__.py"
