"""The scale curve: throughput as concurrency grows, for every client on every transport.

``python -m bench.scale [--quick]`` starts the bench server (its own process, stopped on exit)
and measures, in interleaved rounds (medians printed, every sample written to
``bench/results/scale.json``):

* async requests per second with 1, 16, 64, 256 and 1,024 requests in flight (that many tasks,
  each sending requests one after the other, sharing one long-lived client);
* async stream chunks per second with 100 streams in flight;
* sync requests per second from 50 threads sharing one client.

Variants: ``aigateway`` (the default: aiohttp's pool on asyncio), ``aigateway+aiohttp`` and
``aigateway+httpx`` (each pool given explicitly, httpx's with httpx's own limits), raw ``httpx``
and ``httpx+aiohttp``, and ``openai`` and ``openai+aiohttp``
(``openai.DefaultAioHttpClient()``). See `bench.clients`. The openai package (3.x) sends
through httpx2, pydantic's fork of httpx, whose pool is not httpx's: on "httpx's pool" the
other client is raw httpx alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .clients import AsyncClient, async_client, sync_client
from .server import ROOT
from .server_process import ServerProcess

ASYNC_LIBS = (
    "aigateway",
    "aigateway+aiohttp",
    "aigateway+httpx",
    "httpx",
    "httpx+aiohttp",
    "openai",
    "openai+aiohttp",
)
SYNC_LIBS = ("aigateway", "httpx", "openai")
LEVELS = (1, 16, 64, 256, 1024)
STREAMS = 100
THREADS = 50
FAILED: dict[str, dict[str, str]] = {}
"""Variants that raised, by measurement (``"1,024 in flight"``, ``"50 threads"``): a client
that cannot keep up is named in the report, not fatal to the run."""


@dataclass(frozen=True)
class Plan:
    rounds: int
    requests: int  # per variant per round, at least one per task
    stream_chunks: int
    sync_requests: int
    budget: float  # seconds per measurement before it stops adding rounds


QUICK = Plan(rounds=3, requests=300, stream_chunks=100, sync_requests=500, budget=10.0)
FULL = Plan(rounds=5, requests=2_000, stream_chunks=500, sync_requests=2_000, budget=90.0)


def _failed(label: str, lib: str, exc: Exception) -> None:
    FAILED.setdefault(label, {})[lib] = f"{type(exc).__name__}: {exc}"[:160]


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


async def _tasks(count: int, per_task: int, call: Callable[[], Any]) -> int:
    """Units done by ``count`` tasks each making ``per_task`` calls in turn: a request is one
    unit; a stream call returns its chunk count."""

    async def task() -> int:
        done = 0
        for _ in range(per_task):
            done += 1 if not isinstance(result := await call(), int) else result
        return done

    return sum(await asyncio.gather(*(task() for _ in range(count))))


async def _async_curve(
    clients: dict[str, AsyncClient],
    calls: dict[str, Callable[[], Any]],
    tasks: int,
    total: int,
    plan: Plan,
    label: str,
) -> dict[str, list[float]]:
    """Units per second of each variant, interleaved rounds (the order rotates)."""
    per_task = max(1, total // tasks)
    for lib in clients:  # warm: open the connections the pools keep
        await _tasks(min(tasks, 100), 1, calls[lib])
    rates: dict[str, list[float]] = {lib: [] for lib in clients}
    started = time.perf_counter()
    for round_ in range(plan.rounds):
        libs = list(clients)
        libs = libs[round_ % len(libs) :] + libs[: round_ % len(libs)]
        for lib in libs:
            if lib in FAILED.get(label, {}):
                continue
            begin = time.perf_counter()
            try:
                units = await _tasks(tasks, per_task, calls[lib])
            except Exception as exc:  # a client that cannot keep up: reported, not fatal
                _failed(label, lib, exc)
                continue
            rates[lib].append(units / (time.perf_counter() - begin))
        if round_ >= 1 and time.perf_counter() - started > plan.budget:
            break
    return rates


async def _requests(url: str, plan: Plan) -> dict[int, dict[str, list[float]]]:
    clients = {lib: async_client(lib, url) for lib in ASYNC_LIBS}
    try:
        calls = {lib: client.request for lib, client in clients.items()}
        curve = {}
        for tasks in LEVELS:
            print(f"[scale] {tasks} concurrent requests ...", file=sys.stderr, flush=True)
            curve[tasks] = await _async_curve(
                clients, calls, tasks, max(plan.requests, tasks), plan, f"{tasks:,} in flight"
            )
        return curve
    finally:
        for client in clients.values():
            await client.close()


async def _streams(url: str, plan: Plan) -> dict[str, list[float]]:
    print(f"[scale] {STREAMS} concurrent streams ...", file=sys.stderr, flush=True)
    clients = {lib: async_client(lib, url) for lib in ASYNC_LIBS}
    try:
        calls = {lib: client.stream for lib, client in clients.items()}
        return await _async_curve(clients, calls, STREAMS, STREAMS, plan, f"{STREAMS} streams")
    finally:
        for client in clients.values():
            await client.close()


def _threads(url: str, plan: Plan) -> dict[str, list[float]]:
    print(f"[scale] sync client shared by {THREADS} threads ...", file=sys.stderr, flush=True)
    clients = {lib: sync_client(lib, url) for lib in SYNC_LIBS}
    rates: dict[str, list[float]] = {lib: [] for lib in SYNC_LIBS}
    per_thread = max(1, plan.sync_requests // THREADS)
    try:
        with ThreadPoolExecutor(THREADS) as pool:

            def run(lib: str, per: int) -> float:
                gate = threading.Barrier(THREADS)
                request = clients[lib].request

                def work() -> None:
                    gate.wait()
                    for _ in range(per):
                        request()

                begin = time.perf_counter()
                for future in [pool.submit(work) for _ in range(THREADS)]:
                    future.result()
                return THREADS * per / (time.perf_counter() - begin)

            label = f"{THREADS} threads"
            for lib in SYNC_LIBS:
                run(lib, 1)  # warm: open the connections
            started = time.perf_counter()
            for round_ in range(plan.rounds):
                for lib in SYNC_LIBS[round_ % 3 :] + SYNC_LIBS[: round_ % 3]:
                    if lib in FAILED.get(label, {}):
                        continue
                    try:
                        rates[lib].append(run(lib, per_thread))
                    except Exception as exc:  # reported, not fatal (see FAILED)
                        _failed(label, lib, exc)
                if round_ >= 1 and time.perf_counter() - started > plan.budget:
                    break
    finally:
        for client in clients.values():
            client.close()
    return rates


def _paired(ours: list[float], others: list[list[float]]) -> float:
    """The median over rounds of ours against the best of the others in the same round (a
    variant that failed stops being measured, so its list is a prefix of the rounds)."""
    ratios = []
    for index, mine in enumerate(ours):
        best = max((rates[index] for rates in others if index < len(rates)), default=0.0)
        if best > 0:
            ratios.append(mine / best)
    return _median(ratios)


def _times(ratio: float) -> str:
    return f"{ratio:.2f}x" if ratio == ratio else "  -  "  # NaN: no pair (the others failed)


def _table(title: str, columns: list[str], rows: dict[str, list[float]]) -> list[str]:
    width = max(len(name) for name in rows)
    lines = [title, "  " + " | ".join([" " * width, *(f"{c:>9}" for c in columns)])]
    for name, values in rows.items():
        cells = [f"{v:>9,.0f}" for v in values]
        lines.append("  " + " | ".join([name.ljust(width), *cells]))
    return lines


def render(data: dict[str, Any]) -> str:
    curve = data["requests"]
    by_lib = {lib: [_median(curve[str(level)][lib]) for level in LEVELS] for lib in ASYNC_LIBS}
    lines = _table(
        "async requests per second, by requests in flight (median)",
        [f"{level:,}" for level in LEVELS],
        by_lib,
    )
    lines.append("")
    streams = {lib: [_median(v)] for lib, v in data["streams"].items()}
    lines += _table(
        f"async stream chunks per second, {STREAMS} streams in flight", ["chunks/s"], streams
    )
    lines.append("")
    threads = {lib: [_median(v)] for lib, v in data["threads"].items()}
    lines += _table(
        f"sync requests per second, one client shared by {THREADS} threads", ["req/s"], threads
    )
    lines.append("")
    for label, failures in FAILED.items():
        for lib, error in failures.items():
            lines.append(f"{lib} failed at {label}: {error}")
    lines.append("")
    lines.append(
        "aigateway against the best other client on the same pool "
        "(median of the per-round ratios; rounds interleave)"
    )
    pools = {
        "aiohttp's pool": ("aigateway", ("httpx+aiohttp", "openai+aiohttp")),
        "httpx's pool": ("aigateway+httpx", ("httpx",)),
        "defaults": ("aigateway", ("httpx", "openai")),
    }
    for pool, (ours, others) in pools.items():
        ratios = [
            _paired(curve[str(level)][ours], [curve[str(level)][lib] for lib in others])
            for level in LEVELS
        ]
        lines.append(f"  {'requests, ' + pool:<28} " + "  ".join(map(_times, ratios)))
    for pool, (ours, others) in pools.items():
        ratio = _paired(data["streams"][ours], [data["streams"][lib] for lib in others])
        lines.append(f"  {f'{STREAMS} streams, ' + pool:<28} {_times(ratio)}")
    threads_data = data["threads"]
    for pool, others in (("httpx's pool", ("httpx",)), ("defaults", ("httpx", "openai"))):
        ratio = _paired(threads_data["aigateway"], [threads_data[lib] for lib in others])
        lines.append(f"  {f'{THREADS} threads, ' + pool:<28} {_times(ratio)}")
    peak = max(by_lib["aigateway"])
    lines.append(f"  at 1,024: {by_lib['aigateway'][-1] / peak:.2f}x aigateway's own best")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds and requests")
    parser.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "scale.json")
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    started = time.perf_counter()
    with ServerProcess("threads") as server:
        data: dict[str, Any] = {
            "requests": {str(k): v for k, v in asyncio.run(_requests(server.url(), plan)).items()},
            "streams": asyncio.run(_streams(server.url(plan.stream_chunks), plan)),
            "threads": _threads(server.url(), plan),
            "failed": FAILED,
        }
    data["meta"] = {
        "mode": "quick" if args.quick else "full",
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "load": os.getloadavg(),
        "seconds": time.perf_counter() - started,
        "stream_chunks": plan.stream_chunks,
    }
    print(render(data))
    print(
        f"\nmode={data['meta']['mode']} cpus={os.cpu_count()} load={data['meta']['load']} "
        f"took {data['meta']['seconds']:.0f} s"
    )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(data, indent=1))
    print(f"JSON: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
