"""Packaging check: build the sdist and the wheel, check them, install the wheel in a fresh venv.

    python .ci/package_check.py

1. ``python -m build`` (the wheel is built from the sdist, so a file missing from the sdist
   breaks the wheel) and ``twine check --strict``.
2. The sdist holds what a rebuild and a test run need (LICENSE, README, CHANGELOG, the tests,
   the docs); the wheel holds ``py.typed``, the pytest plugin module, the license and the
   entry points.
3. A fresh venv gets the wheel with the ``server`` extra (dependencies from the package index)
   and, from a directory outside the checkout, runs examples/quickstart.py, then starts
   ``aigateway mock serve`` as the docs say and lists the models through it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SDIST_NEEDS = [
    "LICENSE",
    "README.md",
    "CHANGELOG.md",
    "pyproject.toml",
    "src/aigateway/py.typed",
    "src/_aigateway_pytest.py",
    "tests/conftest.py",
    "docs/index.md",
    "docs/.snippets/run-without-a-key.md",
    "examples/quickstart.py",
]
WHEEL_NEEDS = ["aigateway/py.typed", "aigateway/__init__.py", "_aigateway_pytest.py"]


def run(*argv: str | Path, **options: object) -> subprocess.CompletedProcess[str]:
    print("$", " ".join(str(arg) for arg in argv), flush=True)
    return subprocess.run([str(arg) for arg in argv], check=True, text=True, **options)  # type: ignore[call-overload, no-any-return]


def check_contents(sdist: Path, wheel: Path) -> None:
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    missing = [name for name in SDIST_NEEDS if name not in names]
    assert not missing, f"{sdist.name} lacks {missing}"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + ".dist-info"
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
    missing = [name for name in [*WHEEL_NEEDS, f"{info}/licenses/LICENSE"] if name not in names]
    assert not missing, f"{wheel.name} lacks {missing}"
    assert "aigateway = aigateway.cli:main" in entry_points, entry_points
    assert "aigateway = _aigateway_pytest" in entry_points, entry_points
    print(f"contents ok: {len(names)} files in the wheel")


def serve_and_list_models(venv_bin: Path, env: dict[str, str], cwd: Path) -> None:
    """`aigateway mock serve` from the installed extra, used by the installed CLI."""
    serve = subprocess.Popen(
        [venv_bin / "aigateway", "mock", "serve", "--port", "0"],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert serve.stdout is not None
        served = dict(env)
        for line in serve.stdout:
            if line.startswith("export "):
                key, _, value = line.removeprefix("export ").strip().partition("=")
                served[key] = value
            if line.startswith("Press Ctrl-C"):
                break
        assert "AIGATEWAY_BASE_URL" in served, "aigateway mock serve printed no export lines"
        models = run(venv_bin / "aigateway", "models", env=served, cwd=cwd, capture_output=True)
        assert "gpt-4o-mini" in models.stdout.split(), models.stdout
        print(f"served mock ok: {len(models.stdout.split())} models")
    finally:
        serve.terminate()
        serve.wait(timeout=10)
        if serve.stdout is not None:
            serve.stdout.close()


def main() -> None:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="aigateway-package-") as scratch:
        work = Path(scratch)
        dist = work / "dist"
        run(sys.executable, "-m", "build", "--outdir", dist, ROOT, stdout=subprocess.DEVNULL)
        sdist, wheel = sorted(dist.glob("*.tar.gz"))[0], sorted(dist.glob("*.whl"))[0]
        run(sys.executable, "-m", "twine", "check", "--strict", sdist, wheel)
        check_contents(sdist, wheel)

        # The installed wheel only: no checkout on the path, no gateway variables.
        env = {
            key: value
            for key, value in os.environ.items()
            if key not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"}
            and not key.startswith("AIGATEWAY_")
        }
        run(sys.executable, "-m", "venv", work / "venv")
        bin_dir = work / "venv" / ("Scripts" if os.name == "nt" else "bin")
        python = bin_dir / "python"
        run(python, "-m", "pip", "install", "--quiet", f"{wheel}[server]", env=env)
        outside = work / "elsewhere"
        outside.mkdir()
        where = run(
            python,
            "-c",
            "import aigateway; print(aigateway.__file__)",
            env=env,
            cwd=outside,
            capture_output=True,
        ).stdout.strip()
        assert Path(where).is_relative_to(work / "venv"), f"imported {where}, not the wheel"
        reply = run(
            python, ROOT / "examples" / "quickstart.py", env=env, cwd=outside, capture_output=True
        )
        assert reply.stdout.strip(), "examples/quickstart.py printed nothing"
        print(reply.stdout.strip())
        serve_and_list_models(bin_dir, env, outside)
    print(f"package check passed in {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
