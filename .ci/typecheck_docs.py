"""Type-check user code as a user would: pyright and mypy, both strict, over every Python block
of README.md and docs/, every examples/*.py and the snippets of tests/typing_snippets/.

Each block is written to its own file in a temporary folder (blocks are self-contained: the
docs test runs each in a fresh process); the checkers see this checkout's ``src`` first, with
no plugin (a user's mypy has none). One pyright run and one mypy run check all of them.
Exits non-zero, naming the block of each error, when either checker finds one.

    python .ci/typecheck_docs.py [--only pyright|mypy]
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SNIPPETS = ROOT / "tests" / "typing_snippets"
PYTHON_VERSION = "3.10"

sys.path.insert(0, str(ROOT))
from tests.package.test_docs_examples import pages  # noqa: E402  (one block extraction for both checks)


def user_files() -> dict[str, str]:
    """File name -> code, for every block and snippet; names tell where the code comes from."""
    files: dict[str, str] = {}
    for page in pages():
        for index, block in enumerate(b for b in page.blocks if b.language == "python"):
            stem = re.sub(r"\W", "_", page.name.removesuffix(".md").removesuffix(".py"))
            name = f"{stem}.py" if page.is_script else f"{stem}_block{index + 1}.py"
            files[name] = block.code
    for path in sorted(SNIPPETS.glob("*.py")):
        files[f"snippet_{path.name}"] = path.read_text(encoding="utf-8")
    return files


def run(command: list[str], cwd: Path) -> tuple[int, str]:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    return done.returncode, done.stdout + done.stderr


def main(argv: list[str]) -> int:
    only = argv[argv.index("--only") + 1] if "--only" in argv else None
    with tempfile.TemporaryDirectory(prefix="typecheck-docs-") as tmp:
        folder = Path(tmp)
        files = user_files()
        for name, code in files.items():
            (folder / name).write_text(code, encoding="utf-8")
        config = {
            "typeCheckingMode": "strict",
            "pythonVersion": PYTHON_VERSION,
            "extraPaths": [str(ROOT / "src")],
            "include": ["."],
        }
        (folder / "pyrightconfig.json").write_text(json.dumps(config), encoding="utf-8")
        (folder / "mypy.ini").write_text(
            f"[mypy]\nstrict = True\npython_version = {PYTHON_VERSION}\n"
            f"mypy_path = {ROOT / 'src'}\ncache_dir = {ROOT / '.mypy_cache' / 'user-code'}\n"
            # as for an installed package: the checkers report the user's code, not ours
            "[mypy-aigateway.*]\nignore_errors = True\n",
            encoding="utf-8",
        )
        failed = False
        checks = {
            "pyright": [sys.executable, "-m", "pyright", "--project", str(folder)],
            "mypy": [sys.executable, "-m", "mypy", "--config-file", "mypy.ini", *files],
        }
        for checker, command in checks.items():
            if only not in (None, checker):
                continue
            code, output = run(command, folder)
            output = output.replace(str(folder) + "/", "")
            print(f"--- {checker} --strict over {len(files)} files of user code")
            print(output.strip())
            failed = failed or code != 0
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
