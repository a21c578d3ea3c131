"""The install users get, checked in fresh virtual environments beside the development suite.

    python .ci/install_lanes.py                   # every lane
    python .ci/install_lanes.py plain lowest      # only these (the package is always built)

The package is built first (``python -m build``: the wheel is built from the sdist, so a file
missing from the sdist breaks the wheel), checked with ``twine check --strict`` and for its
contents: the files it needs, only what builds, tests and documents the package, no binary
file, the sdist's size. Then each lane makes its own virtual environment with uv, under one temporary
directory, installs the wheel there from the package index and runs, from outside the
checkout:

- ``plain``: the wheel without extras, and pytest: the smoke suite (``tests/smoke``, copied out
  of the checkout: the public API against a stand-in gateway made of the standard library;
  every extra's feature raises an ImportError naming the extra) and examples/quickstart.py.
- ``server``, ``ws``, ``progress``, ``redis``, ``otel``, ``httpx2``: the wheel with that extra
  alone, the smoke suite again (now the extra's feature works: for ``httpx2``, calls over an
  httpx2 client, an httpx2 transport and the client's own pools with
  ``AIGATEWAY_HTTP_STACK=httpx2``); ``server`` also starts
  ``aigateway mock serve`` as the docs say and lists the models through it. ``ray`` has no lane
  of its own: with Ray Data a venv holds some 500 MB (ray, pyarrow, pandas) and a batch of four
  items on a local cluster took about 50 s on two cores, for a feature the development suite
  runs on a real local cluster (tests/helpers/test_batch_ray.py); every other lane checks its
  missing-extra error.
- ``lowest``: the wheel with every extra but ``ray`` at the lowest versions ``pyproject.toml``
  allows (``uv pip install --resolution lowest-direct``), the test tools at whatever versions
  fit them, and the client's tests from the checkout (``.ci/client_tests.txt``, the smoke
  suite among them, and the clients' tests on both HTTP stacks), against the installed wheel.
  Then httpx2 is removed and httpx-aiohttp taken down to the core floor (below the one
  the ``httpx2`` extra needs), and the smoke suite runs again: the floor holds without httpx2.

The agent-framework compatibility suite (``tests/compat``, the ``compat`` extra) runs in the
development suite: ``.ci/run`` installs the extra, and under CI a missing framework fails there.

Lanes run two at a time (``--jobs``), ``lowest`` (the longest) first; each one's output is
printed when it ends.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXTRA_LANES = ["server", "ws", "progress", "redis", "otel", "httpx2"]
LANES = ["plain", *EXTRA_LANES, "lowest"]
TEST_TOOLS = ["pytest", "pytest-timeout", "respx", "hypothesis", "trio", "brotli"]
"""What the client's tests need besides the package (the dev extra without the linters)."""
STACK_TESTS = ["tests/client/test_httpx2_clients.py"]
"""The lowest lane's tests of the clients on both HTTP stacks (httpx and httpx2 alike)."""
HTTPX2_ONLY = ["httpx2", "httpcore2"]
"""What the ``httpx2`` extra installs that nothing else needs (httpx-aiohttp is a dependency)."""
LANE_TIMEOUT = 600

SDIST_NEEDS = [
    "LICENSE",
    "README.md",
    "CHANGELOG.md",
    "pyproject.toml",
    "src/aigateway/py.typed",
    "src/_aigateway_pytest.py",
    "tests/conftest.py",
    "tests/smoke/conftest.py",
    "docs/index.md",
    "examples/quickstart.py",
]
WHEEL_NEEDS = ["aigateway/py.typed", "aigateway/__init__.py", "_aigateway_pytest.py"]
SDIST_HOLDS = {
    *("src", "tests", "docs", "examples", "bench"),
    *("README.md", "CHANGELOG.md", "LICENSE", "mkdocs.yml", "pyproject.toml", "PKG-INFO"),
    ".gitignore",  # hatch always adds it
}
"""The sdist's top-level entries: what builds, tests and documents the package (pyproject's
``[tool.hatch.build.targets.sdist]``), nothing else."""
SDIST_MAX_BYTES = 1_500_000
"""The sdist is about 0.7 MB, all text; a stray folder or a generated file shows up here."""


class Lane:
    """One lane's virtual environment and its log; commands run with the checkout out of reach."""

    def __init__(self, name: str, work: Path) -> None:
        self.name = name
        self.dir = work / name
        self.dir.mkdir()
        self.log: list[str] = []
        self.env = {
            key: value
            for key, value in os.environ.items()
            if key not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"}
            and not key.startswith("AIGATEWAY_")
        }
        self.env["UV_PYTHON_DOWNLOADS"] = "never"  # the interpreter running this script, only
        self.python = self.dir / "venv" / ("Scripts" if os.name == "nt" else "bin") / "python"

    def run(self, *argv: str | Path, cwd: Path | None = None, **env: str) -> str:
        """Run a command, log it with its output, raise when it fails; return its stdout."""
        self.log.append("$ " + " ".join(str(arg) for arg in argv))
        done = subprocess.run(
            [str(arg) for arg in argv],
            cwd=cwd or self.dir,
            env={**self.env, **env},
            capture_output=True,
            text=True,
            timeout=LANE_TIMEOUT,
        )
        self.log.append((done.stdout + done.stderr).rstrip())
        if done.returncode:
            raise RuntimeError(f"exit status {done.returncode}")
        return done.stdout

    def uv(self, *argv: str | Path) -> str:
        return self.run(sys.executable, "-m", "uv", *argv)

    def install(self, *requirements: str | Path, lowest: bool = False) -> None:
        """A fresh venv with ``requirements`` (uv's arguments; ``lowest``: the lowest versions
        they allow)."""
        if not self.python.exists():
            self.uv("venv", "--quiet", "--python", sys.executable, self.dir / "venv")
        resolution = ["--resolution", "lowest-direct"] if lowest else []
        self.uv("pip", "install", "--quiet", "--python", self.python, *resolution, *requirements)

    def check_the_wheel_is_imported(self, cwd: Path) -> None:
        where = self.run(self.python, "-c", "import aigateway; print(aigateway.__file__)", cwd=cwd)
        imported = Path(where.strip())
        assert imported.is_relative_to(self.dir / "venv"), f"imported {imported}, not the wheel"

    def smoke(self, extras: list[str]) -> None:
        """The smoke suite, copied out of the checkout, against this lane's install."""
        suite = self.dir / "suite"
        shutil.copytree(
            ROOT / "tests" / "smoke", suite / "smoke", ignore=shutil.ignore_patterns("__pycache__")
        )
        self.check_the_wheel_is_imported(suite)
        # warnings as errors, as pyproject.toml has them for the development suite
        warnings = ["error::ResourceWarning", "error::pytest.PytestUnraisableExceptionWarning"]
        self.run(
            self.python,
            *PYTEST,
            *[option for warning in warnings for option in ("-W", warning)],
            "smoke",
            cwd=suite,
            AIGATEWAY_SMOKE_EXTRAS=",".join(extras),
        )


PYTEST = ["-m", "pytest", "-q", "-p", "no:cacheprovider"]


def plain(lane: Lane, wheel: Path) -> None:
    lane.install(wheel, "pytest")
    lane.smoke([])
    reply = lane.run(lane.python, ROOT / "examples" / "quickstart.py")
    assert reply.strip(), "examples/quickstart.py printed nothing"


def extra(lane: Lane, wheel: Path) -> None:
    lane.install(f"{wheel}[{lane.name}]", "pytest")
    lane.smoke([lane.name])
    if lane.name == "server":
        serve_and_list_models(lane)


def lowest(lane: Lane, wheel: Path) -> None:
    # The requirements read from pyproject.toml, not the wheel's: uv takes the lowest versions
    # of the requirements it is given, and a wheel's own are not among them.
    extras = [option for name in EXTRA_LANES for option in ("--extra", name)]
    lane.install("-r", ROOT / "pyproject.toml", *extras, wheel, lowest=True)
    # The test tools at versions that fit the package's floors, without moving any of them.
    constraints = lane.dir / "installed.txt"
    constraints.write_text(lane.uv("pip", "freeze", "--python", lane.python))
    lane.uv("pip", "install", "--quiet", "--python", lane.python, "-c", constraints, *TEST_TOOLS)
    lane.check_the_wheel_is_imported(ROOT)
    tests = (ROOT / ".ci" / "client_tests.txt").read_text().split() + STACK_TESTS
    # pyproject.toml's pytest settings apply (warnings as errors, with their exceptions)
    lane.run(lane.python, *PYTEST, *tests, cwd=ROOT, AIGATEWAY_SMOKE_EXTRAS=",".join(EXTRA_LANES))
    # The core floor of httpx-aiohttp, below the httpx2 extra's, without httpx2: httpx-aiohttp
    # alone may move, to the lowest version the core requirements allow.
    lane.uv("pip", "uninstall", "--quiet", "--python", lane.python, *HTTPX2_ONLY)
    lane.install(
        "-r", ROOT / "pyproject.toml", wheel, "--upgrade-package", "httpx-aiohttp", lowest=True
    )
    lane.uv("pip", "show", "--python", lane.python, "httpx-aiohttp")  # its version, in the log
    lane.smoke([name for name in EXTRA_LANES if name != "httpx2"])


def serve_and_list_models(lane: Lane) -> None:
    """`aigateway mock serve` from the installed extra, used by the installed CLI."""
    bin_dir = lane.python.parent
    serve = subprocess.Popen(
        [bin_dir / "aigateway", "mock", "serve", "--port", "0"],
        env=lane.env,
        cwd=lane.dir,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert serve.stdout is not None
        served = {}
        for line in serve.stdout:
            if line.startswith("export "):
                key, _, value = line.removeprefix("export ").strip().partition("=")
                served[key] = value
            if line.startswith("Press Ctrl-C"):
                break
        assert "AIGATEWAY_BASE_URL" in served, "aigateway mock serve printed no export lines"
        models = lane.run(bin_dir / "aigateway", "models", **served)
        assert "gpt-4o-mini" in models.split(), models
        lane.log.append(f"served mock ok: {len(models.split())} models")
    finally:
        serve.terminate()
        serve.wait(timeout=10)
        serve.stdout.close()  # type: ignore[union-attr]


def build(work: Path) -> Path:
    """Build the sdist and the wheel, check them; the wheel's path."""
    dist = work / "dist"
    run(sys.executable, "-m", "build", "--outdir", dist, ROOT, stdout=subprocess.DEVNULL)
    sdist, wheel = sorted(dist.glob("*.tar.gz"))[0], sorted(dist.glob("*.whl"))[0]
    run(sys.executable, "-m", "twine", "check", "--strict", sdist, wheel)
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
        binaries = [
            member.name
            for member in archive.getmembers()
            if member.isfile() and not is_text(archive.extractfile(member).read())  # type: ignore[union-attr]
        ]
    missing = [name for name in SDIST_NEEDS if name not in names]
    assert not missing, f"{sdist.name} lacks {missing}"
    strays = sorted({name.split("/")[0] for name in names} - SDIST_HOLDS)
    assert not strays, f"{sdist.name} holds {strays}: only {sorted(SDIST_HOLDS)} belong there"
    assert not binaries, f"{sdist.name} holds binary files: {binaries}"
    size = sdist.stat().st_size
    assert size <= SDIST_MAX_BYTES, f"{sdist.name} is {size:,} bytes (at most {SDIST_MAX_BYTES:,})"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        binaries = [name for name in names if not is_text(archive.read(name))]
        info = "-".join(wheel.name.split("-")[:2]) + ".dist-info"
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
    assert not binaries, f"{wheel.name} holds binary files: {binaries}"
    missing = [name for name in [*WHEEL_NEEDS, f"{info}/licenses/LICENSE"] if name not in names]
    assert not missing, f"{wheel.name} lacks {missing}"
    assert "aigateway = aigateway.cli:main" in entry_points, entry_points
    assert "aigateway = _aigateway_pytest" in entry_points, entry_points
    print(f"contents ok: {len(names)} files in the wheel, the sdist {size:,} bytes", flush=True)
    return wheel


def is_text(data: bytes) -> bool:
    """Whether a file is text: UTF-8 without NUL bytes (a wheel, an image or a blob is not)."""
    if b"\0" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def run(*argv: str | Path, **options: object) -> subprocess.CompletedProcess[str]:
    print("$", " ".join(str(arg) for arg in argv), flush=True)
    return subprocess.run([str(arg) for arg in argv], check=True, text=True, **options)  # type: ignore[call-overload, no-any-return]


def run_lane(name: str, work: Path, wheel: Path) -> tuple[str, bool, float, str]:
    """Run lane ``name``; its name, whether it passed, its time and its log."""
    started = time.monotonic()
    lane = Lane(name, work)
    steps = {"plain": plain, "lowest": lowest}.get(name, extra)
    try:
        steps(lane, wheel)
        passed = True
    except Exception as exc:  # the lane failed: its log says where
        lane.log.append(f"FAILED: {type(exc).__name__}: {exc}")
        passed = False
    return name, passed, time.monotonic() - started, "\n".join(lane.log)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lanes", nargs="*", metavar="LANE", help=f"any of {', '.join(LANES)}")
    parser.add_argument("--jobs", type=int, default=2, help="lanes run at once (default 2)")
    arguments = parser.parse_args()
    unknown = set(arguments.lanes) - set(LANES)
    if unknown:
        parser.error(f"no lane {', '.join(sorted(unknown))}: the lanes are {', '.join(LANES)}")
    # lowest, by far the longest, starts first: the others run beside it
    names = sorted(arguments.lanes or LANES, key=lambda name: name != "lowest")
    started = time.monotonic()
    times: list[str] = []
    failed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="aigateway-lanes-") as scratch:
        work = Path(scratch)
        wheel = build(work)
        print(f"--- built in {time.monotonic() - started:.0f} s", flush=True)
        with ThreadPoolExecutor(max_workers=arguments.jobs) as pool:
            lanes = [pool.submit(run_lane, name, work, wheel) for name in names]
            for lane in as_completed(lanes):
                name, passed, seconds, log = lane.result()
                print(f"--- lane {name}: {'passed' if passed else 'FAILED'} in {seconds:.0f} s")
                print(log, flush=True)
                times.append(f"{name} {seconds:.0f} s")
                if not passed:
                    failed.append(name)
    print(f"--- install lanes: {', '.join(times)}; {time.monotonic() - started:.0f} s in all")
    if failed:
        sys.exit(f"install lanes failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
