"""``python -m bench [--quick]``: run the scenarios, print the tables, write the JSON.

Starts one bench server (`bench.server`, its own process), runs each scenario against it for
aigateway, raw httpx and openai, prints medians and paired ratios with every target's
PASS / MISS, and writes everything to ``bench/results/latest.json``. The server is stopped on
the way out, also on Ctrl-C or SIGTERM; partial results are still printed and written.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import sys
import time
import traceback
from collections.abc import Callable
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from . import process_scenarios, scenarios
from .measure import FULL, QUICK, Plan, Result
from .report import render
from .server import FRAMINGS, KINDS, ROOT
from .server_process import ServerProcess

DEFAULT_JSON = ROOT / "bench" / "results" / "latest.json"
ORDER = ("servers", "sequential", "streaming", "concurrent", "startup", "memory", "mock")
_WITH_SERVER: dict[str, Callable[[ServerProcess, Plan], Result]] = {
    "sequential": scenarios.sequential,
    "streaming": scenarios.streaming,
    "concurrent": scenarios.concurrent,
    "startup": process_scenarios.startup,
    "memory": process_scenarios.memory,
}


def _versions() -> dict[str, str]:
    out = {}
    for name in ("aigateway", "httpx", "httpcore", "openai", "httpx2", "pydantic", "tenacity"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _load() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def _on_sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a short run (well under a minute)")
    parser.add_argument(
        "--only",
        default="",
        help=f"comma-separated scenarios to run, of: {', '.join(ORDER)} (default: all; "
        "'servers' runs in full mode only unless named)",
    )
    parser.add_argument(
        "--server", choices=KINDS, default="threads", help="the bench server (see bench/server.py)"
    )
    parser.add_argument(
        "--sse-framing",
        choices=FRAMINGS,
        default="event",
        help="one HTTP chunk per SSE event (event), or per 100 events (bulk)",
    )
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="where to write JSON")
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    selected = [key for key in ORDER if key != "servers" or not plan.quick]
    if args.only:
        wanted = [key.strip() for key in args.only.split(",") if key.strip()]
        unknown = sorted(set(wanted) - set(ORDER))
        if unknown:
            parser.error(f"unknown scenario(s) {unknown}; choose from {', '.join(ORDER)}")
        selected = [key for key in ORDER if key in wanted]

    signal.signal(signal.SIGTERM, _on_sigterm)
    started = time.perf_counter()
    meta: dict[str, Any] = {
        "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "mode": "quick" if plan.quick else "full",
        "command": " ".join(["python -m bench", *(argv if argv is not None else sys.argv[1:])]),
        "server": args.server,
        "sse_framing": args.sse_framing,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "load_average_at_start": _load(),
        "versions": _versions(),
        "plan": vars(plan),
    }
    results: list[Result] = []
    interrupted = False

    def run(key: str, function: Callable[[], Result]) -> None:
        """Run one scenario; one that fails is reported as such and the others still run."""
        print(f"[bench] {key} ...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        try:
            result = function()
        except Exception as exc:
            traceback.print_exc()
            result = Result(key, f"{key} (failed)", skipped=f"FAILED: {type(exc).__name__}: {exc}")
        result.seconds = time.perf_counter() - start
        results.append(result)
        print(f"[bench] {key} done in {result.seconds:.1f} s", file=sys.stderr, flush=True)

    try:
        if "servers" in selected:
            run("servers", lambda: scenarios.servers(plan, args.sse_framing))
        if any(key in _WITH_SERVER for key in selected):
            with ServerProcess(args.server, args.sse_framing) as server:
                meta["server_pid"] = server.pid
                for key in selected:
                    if key in _WITH_SERVER:
                        run(key, lambda key=key: _WITH_SERVER[key](server, plan))
        if "mock" in selected:
            run("mock", lambda: process_scenarios.mock_gateway(plan))
    except KeyboardInterrupt:
        interrupted = True
        print("[bench] interrupted: the server is stopped, partial results follow", file=sys.stderr)
    meta["seconds"] = round(time.perf_counter() - started, 1)
    meta["load_average_at_end"] = _load()
    meta["interrupted"] = interrupted

    print(render(results))
    print(
        f"\nmode={meta['mode']} server={args.server} framing={args.sse_framing} "
        f"python={meta['python']} cpus={meta['cpus']} load={meta['load_average_at_start']}"
        f"->{meta['load_average_at_end']} took {meta['seconds']} s"
    )
    ratios = [ratio for result in results for ratio in result.ratios]
    payload = {
        "meta": meta,
        "results": [result.to_json() for result in results],
        "targets": [
            {"name": r.name, "median": r.median, "target": r.target, "verdict": r.verdict}
            for r in ratios
            if r.target is not None
        ],
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    print(f"JSON: {args.json}")
    return 130 if interrupted else 0
