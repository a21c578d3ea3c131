"""``python -m bench.cli``: how long ``aigateway --help`` takes in a fresh process.

It runs ``python -m aigateway --help`` ``--runs`` times (default 20), each in a new
interpreter, and ``python -c pass`` as many times in between (the interpreter's own start-up),
and prints the median wall time of each and their difference: what the command line costs
before it does anything. The target is at most 150 ms for ``--help``; it holds because
``import aigateway`` and ``aigateway.cli`` load neither httpx nor pydantic.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_MS = 150.0


def wall_ms(argv: list[str], env: dict[str, str]) -> float:
    """Wall milliseconds of one run of ``argv`` in a fresh process."""
    started = time.perf_counter()
    subprocess.run(argv, env=env, capture_output=True, check=True, timeout=60)
    return (time.perf_counter() - started) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="runs of each (20)")
    options = parser.parse_args(argv)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    help_runs: list[float] = []
    bare_runs: list[float] = []
    for _ in range(options.runs):  # interleaved, so a busy moment weighs on both alike
        bare_runs.append(wall_ms([sys.executable, "-c", "pass"], env))
        help_runs.append(wall_ms([sys.executable, "-m", "aigateway", "--help"], env))
    help_ms, bare_ms = statistics.median(help_runs), statistics.median(bare_runs)
    verdict = "PASS" if help_ms <= TARGET_MS else "MISS"
    print(f"python -c pass:             {bare_ms:6.1f} ms median of {options.runs}")
    print(f"python -m aigateway --help: {help_ms:6.1f} ms median of {options.runs}")
    print(f"the command line's own cost: {help_ms - bare_ms:6.1f} ms")
    print(f"target --help <= {TARGET_MS:.0f} ms: {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
