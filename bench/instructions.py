"""``python -m bench.instructions``: the instructions a client process runs per unit of work,
counted by valgrind, a figure the machine's noise cannot move.

On a shared 2-core virtual machine, wall and CPU times move by 15 to 30% between runs, more
than the differences this project tunes for; the number of instructions a process executes
for the same work moves by well under 1%. For each case, a small client script runs under
``valgrind --tool=cachegrind --cache-sim=no`` twice against the bench server (its own process,
not counted): doing the work once, then three times. Half the difference is the work alone,
without start-up and exit. The first completion is counted whole, start-up and exit included,
since they are what it measures, beside its floor: raw httpx with the reply validated into
three small pydantic models (``httpx+pydantic``), what any client with pydantic replies pays.

``--httpx2`` also counts the sync cases on httpx2: aigateway with its own pools on httpx2
against raw httpx2 (about 4 minutes more).

``--python PATH`` counts the first completion alone with another interpreter, a fresh virtual
environment's for instance (``python -m venv /tmp/clean && /tmp/clean/bin/pip install .``):
there ``import httpx`` loads only httpx's own dependencies, where this project's development
environment also has trio, click and rich, which httpx imports when they are installed.

Instructions are not time: a cache miss costs more than an addition, so read the counts beside
``python -m bench``'s times, as the cost of the Python and C code each client runs. Needs
valgrind (Debian's ``valgrind`` package); about 8 minutes.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import textwrap

from .clients import HTTPX2_MISSING, httpx2_variants
from .process_scenarios import _first_completion_code
from .server_process import ServerProcess, child_env

STREAM_CHUNKS = 10_000
CONCURRENT_STREAMS = 100
CONCURRENT_CHUNKS = 500
REQUESTS = 500
FIRST_COMPLETION = ("aigateway", "httpx+pydantic", "httpx")

_WORK = {
    "sync stream": """
        from bench.clients import sync_client
        client = sync_client(LIB, URL)
        for _ in range(TIMES):
            client.stream()
    """,
    "async streams": f"""
        import asyncio
        from bench.clients import async_client
        from bench.scale import _tasks

        async def main():
            client = async_client(LIB, URL)
            for _ in range(TIMES):
                await _tasks({CONCURRENT_STREAMS}, 1, client.stream)
            await client.close()

        asyncio.run(main())
    """,
    "sync requests": f"""
        from bench.clients import sync_client
        client = sync_client(LIB, URL)
        client.request()
        for _ in range(TIMES * {REQUESTS}):
            client.request()
    """,
}
"""Each case's script: ``LIB``, ``URL`` and ``TIMES`` are set before it."""

_CASES = [
    # (case, libraries, units of work, per)
    ("sync stream", ("aigateway", "httpx"), STREAM_CHUNKS, "chunk"),
    (
        "async streams",
        ("aigateway", "httpx+aiohttp"),
        CONCURRENT_STREAMS * CONCURRENT_CHUNKS,
        "chunk",
    ),
    ("sync requests", ("aigateway", "httpx"), REQUESTS, "request"),
]
_HTTPX2_CASES = [
    ("sync stream", ("aigateway(httpx2)", "httpx2"), STREAM_CHUNKS, "chunk"),
    ("sync requests", ("aigateway(httpx2)", "httpx2"), REQUESTS, "request"),
]
"""``--httpx2``: the sync cases on httpx2 (`bench.clients.HTTPX2_TWINS`)."""


def count(code: str, python: str = sys.executable) -> int:
    """Instructions executed by ``python -c code`` under cachegrind."""
    done = subprocess.run(
        [
            "valgrind",
            "--tool=cachegrind",
            "--cache-sim=no",
            "--cachegrind-out-file=/dev/null",
            python,
            "-c",
            code,
        ],
        env=child_env(),
        cwd="/",
        capture_output=True,
        text=True,
        check=True,
        timeout=1200,
    )
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count in valgrind's output: {done.stderr[-500:]}")
    return int(found.group(1).replace(",", ""))


def per_unit(case: str, lib: str, url: str, units: int) -> float:
    """Instructions per unit of ``case`` for ``lib``: (three times - once) / 2 / units."""
    script = textwrap.dedent(_WORK[case])
    runs = {}
    for times in (1, 3):
        code = f"LIB, URL, TIMES = {lib!r}, {url!r}, {times}\n{script}"
        count(code)  # warm: byte code compiled and cached
        runs[times] = count(code)
    return (runs[3] - runs[1]) / 2 / units


def first_completion(url: str, python: str) -> str:
    """The first completion's line: whole-process counts of each library and their ratios."""
    whole = {}
    for lib in FIRST_COMPLETION:
        code = _first_completion_code(lib, url)
        count(code, python)  # warm: byte code compiled and cached
        whole[lib] = count(code, python)
    empty = count("pass", python)
    figures = ", ".join(f"{lib} {n / 1e6:,.0f}M" for lib, n in whole.items())
    ours, floor, raw = (whole[lib] for lib in FIRST_COMPLETION)
    return (
        f"  {'first completion, whole process':<32} {figures}  ({ours / raw:.2f}x httpx, "
        f"{ours / floor:.2f}x httpx+pydantic; python -c pass: {empty / 1e6:,.0f}M)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.instructions", description=__doc__)
    parser.add_argument(
        "--python",
        help="count only the first completion, run by this interpreter (with aigateway installed)",
    )
    parser.add_argument(
        "--httpx2",
        action="store_true",
        help="also count the sync cases on httpx2 (aigateway(httpx2) against raw httpx2)",
    )
    args = parser.parse_args(argv)
    cases = [] if args.python else [*_CASES, *(_HTTPX2_CASES if args.httpx2 else [])]
    if args.httpx2 and not httpx2_variants():
        print(HTTPX2_MISSING, file=sys.stderr)
        cases = cases[: len(_CASES)]
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    lines = ["instructions per unit of work, client process only (valgrind cachegrind)"]
    with ServerProcess("threads") as server:
        for case, libs, units, per in cases:
            chunks = CONCURRENT_CHUNKS if case == "async streams" else STREAM_CHUNKS
            url = server.url(chunks) if "stream" in case else server.url()
            print(f"[instructions] {case} ...", file=sys.stderr, flush=True)
            counts = {lib: per_unit(case, lib, url, units) for lib in libs}
            ours, base = counts[libs[0]], counts[libs[1]]
            figures = ", ".join(f"{lib} {n:,.0f}" for lib, n in counts.items())
            lines.append(f"  {case:<14} per {per:<8} {figures}  ({ours / base:.2f}x)")
        print("[instructions] first completion ...", file=sys.stderr, flush=True)
        lines.append(first_completion(server.url(), args.python or sys.executable))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
