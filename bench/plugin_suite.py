"""``python -m bench.plugin_suite``: how long 1,000 tests on aigateway's pytest fixtures take.

It writes a test file of ``--tests`` tests (default 1,000), each taking ``aigateway_client``
and making one chat call (so each gets a fresh `MockGateway`, a client and the network guard),
runs pytest on it in a child process, and prints the wall time of the whole run and pytest's
own figure. A baseline run of the same number of empty tests shows pytest's share.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PLUGIN_TEST = """
def test_chat_{index}(aigateway_client):
    reply = aigateway_client.chat.completions.create(
        model="gpt-4o-mini", messages=[{{"role": "user", "content": "hi {index}"}}]
    )
    assert reply.text
"""
EMPTY_TEST = """
def test_empty_{index}():
    pass
"""
ROOT = Path(__file__).resolve().parent.parent
# The plugin by module name (the entry point's name blocked, in case it is installed too);
# plugins unrelated to the measure are left out.
ARGS = [
    "-q",
    "-p",
    "no:aigateway",
    "-p",
    "_aigateway_pytest",
    "-p",
    "no:cacheprovider",
    "-p",
    "no:hypothesispytest",
    "-p",
    "no:randomly",
]


def run(template: str, tests: int) -> tuple[float, str]:
    """Wall time of a pytest run of ``tests`` tests from ``template``, and pytest's summary."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory, "test_generated.py")
        path.write_text("".join(template.format(index=i) for i in range(tests)))
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
        }
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "pytest", *ARGS, str(path)],
            cwd=directory,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        elapsed = time.perf_counter() - started
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr
    if done.returncode != 0:
        raise SystemExit(f"the generated suite failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return elapsed, summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=1000, help="tests in the file (1000)")
    options = parser.parse_args(argv)
    baseline, baseline_summary = run(EMPTY_TEST, options.tests)
    measured, summary = run(PLUGIN_TEST, options.tests)
    pytest_seconds = float(re.search(r"in ([\d.]+)s", summary).group(1))  # type: ignore[union-attr]
    print(
        f"{options.tests} empty tests:                 {baseline:6.2f} s wall ({baseline_summary})"
    )
    print(f"{options.tests} tests on aigateway_client:   {measured:6.2f} s wall ({summary})")
    print(
        f"per test, over an empty one:     {(measured - baseline) / options.tests * 1000:6.2f} ms"
    )
    print(f"pytest's own figure:             {pytest_seconds:6.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
