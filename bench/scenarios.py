"""The scenarios. Each runs its variants in interleaved rounds and returns a `Result`.

Interleaving: every round runs every variant once, in an order rotated by one each round, so
drift (other load on the machine, CPU frequency, a warming cache) hits all variants alike.
A variant's figure is the median of its per-round samples, and a ratio is the median of the
per-round (paired) ratios, which cancels most of what one round shares.
"""

from __future__ import annotations

import asyncio
import gc
import json
import resource
import selectors
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from .clients import ANOMALIES, API_KEY, BODY, LIBS, MESSAGES, MODEL, async_client, sync_client
from .server import KINDS, ROOT, ServerProcess, child_env

T = TypeVar("T")

# -- data ---------------------------------------------------------------------------------


@dataclass
class Series:
    """One quantity of one variant, one sample per round."""

    unit: str
    samples: list[float] = field(default_factory=list)
    higher_is_better: bool = False

    @property
    def median(self) -> float:
        return statistics.median(self.samples) if self.samples else float("nan")


@dataclass
class Ratio:
    """A paired ratio ``numerator / denominator`` (median of the per-round ratios)."""

    name: str
    samples: list[float]
    target: tuple[str, float] | None = None
    """``("<=", 1.25)``: the ratio must be at most 1.25; ``(">=", 5)``: at least 5."""
    note: str = ""
    unit: str = "x"
    """``x`` for a ratio; another unit (``/s``) for an absolute figure with a target."""

    @property
    def median(self) -> float:
        return statistics.median(self.samples) if self.samples else float("nan")

    @property
    def verdict(self) -> str:
        if self.target is None:
            return ""
        if not self.samples:
            return "N/A"
        op, bound = self.target
        ok = self.median <= bound if op == "<=" else self.median >= bound
        return "PASS" if ok else "MISS"


@dataclass
class Result:
    """What a scenario measured: rows of named series, ratios, notes; or why it was skipped."""

    key: str
    title: str
    rows: dict[str, dict[str, Series]] = field(default_factory=dict)
    ratios: list[Ratio] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: str | None = None
    seconds: float = 0.0

    def series(self, row: str, metric: str, unit: str, *, higher: bool = False) -> Series:
        return self.rows.setdefault(row, {}).setdefault(metric, Series(unit, [], higher))

    def ratio(
        self,
        name: str,
        num: Series,
        den: Series,
        target: tuple[str, float] | None = None,
        note: str = "",
    ) -> Ratio:
        paired = [a / b for a, b in zip(num.samples, den.samples, strict=False) if b]
        ratio = Ratio(name, paired, target, note)
        self.ratios.append(ratio)
        return ratio

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "skipped": self.skipped,
            "seconds": round(self.seconds, 2),
            "notes": self.notes,
            "rows": {
                row: {
                    name: {**asdict(series), "median": series.median}
                    for name, series in metrics.items()
                }
                for row, metrics in self.rows.items()
            },
            "ratios": [
                {**asdict(ratio), "median": ratio.median, "verdict": ratio.verdict}
                for ratio in self.ratios
            ],
        }


@dataclass(frozen=True)
class Plan:
    """How much each scenario runs: counts, and a time budget after which rounds stop."""

    quick: bool
    servers_rounds: int
    servers_requests: int
    seq_rounds: int
    seq_requests: int
    seq_budget: float
    stream_rounds: int
    stream_chunks: int
    stream_budget: float
    concurrent_rounds: int
    concurrent_batches: int
    concurrency: int
    concurrent_budget: float
    startup_runs: int
    startup_budget: float
    rss_reps: int
    rss_lengths: tuple[int, int]
    rss_libs_long: tuple[str, ...]
    mock_rounds: int
    mock_requests: int
    mock_inprocess_requests: int
    mock_streams: int
    mock_budget: float
    min_rounds: int = 2


QUICK = Plan(
    quick=True,
    servers_rounds=1,
    servers_requests=100,
    seq_rounds=5,
    seq_requests=150,
    seq_budget=10,
    stream_rounds=3,
    stream_chunks=10_000,
    stream_budget=10,
    concurrent_rounds=3,
    concurrent_batches=1,
    concurrency=200,
    concurrent_budget=6,
    startup_runs=3,
    startup_budget=10,
    rss_reps=1,
    rss_lengths=(10_000, 100_000),
    rss_libs_long=("aigateway", "httpx"),
    mock_rounds=3,
    mock_requests=500,
    mock_inprocess_requests=2000,
    mock_streams=1,
    mock_budget=15,
)
FULL = Plan(
    quick=False,
    servers_rounds=3,
    servers_requests=300,
    seq_rounds=15,
    seq_requests=300,
    seq_budget=50,
    stream_rounds=9,
    stream_chunks=10_000,
    stream_budget=50,
    concurrent_rounds=8,
    concurrent_batches=3,
    concurrency=200,
    concurrent_budget=40,
    startup_runs=10,
    startup_budget=60,
    rss_reps=3,
    rss_lengths=(10_000, 100_000),
    rss_libs_long=LIBS,
    mock_rounds=7,
    mock_requests=1000,
    mock_inprocess_requests=5000,
    mock_streams=3,
    mock_budget=40,
)


# -- the round loops ----------------------------------------------------------------------


def _rotated(items: Sequence[T], shift: int) -> list[T]:
    """``items`` rotated left by ``shift``: round r runs the variants in this order."""
    shift %= len(items)
    return [*items[shift:], *items[:shift]]


def _rounds(count: int, budget: float, min_rounds: int) -> Iterator[int]:
    """Round numbers: ``count`` of them, fewer once ``budget`` seconds have passed."""
    start = time.perf_counter()
    for number in range(count):
        if number >= min_rounds and time.perf_counter() - start > budget:
            return
        yield number


@dataclass
class _Samples:
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    units: list[int] = field(default_factory=list)


def sync_rounds(
    work: dict[str, Callable[[], int]], rounds: int, budget: float, min_rounds: int = 2
) -> dict[str, _Samples]:
    """Run each variant's ``work`` (returning how many units it did) once per round, rotated;
    record wall seconds, this process's CPU seconds and units."""
    out = {name: _Samples() for name in work}
    for number in _rounds(rounds, budget, min_rounds):
        for name in _rotated(list(work), number):
            gc.collect()
            wall, cpu = time.perf_counter(), time.process_time()
            units = work[name]()
            out[name].cpu.append(time.process_time() - cpu)
            out[name].wall.append(time.perf_counter() - wall)
            out[name].units.append(units)
    return out


async def async_rounds(
    work: dict[str, Callable[[], Awaitable[int]]], rounds: int, budget: float, min_rounds: int = 2
) -> dict[str, _Samples]:
    """`sync_rounds` for coroutines, all in the running event loop."""
    out = {name: _Samples() for name in work}
    for number in _rounds(rounds, budget, min_rounds):
        for name in _rotated(list(work), number):
            gc.collect()
            wall, cpu = time.perf_counter(), time.process_time()
            units = await work[name]()
            out[name].cpu.append(time.process_time() - cpu)
            out[name].wall.append(time.perf_counter() - wall)
            out[name].units.append(units)
    return out


def _per_unit_us(result: Result, row: str, samples: _Samples, unit: str) -> None:
    result.series(row, "wall", f"us/{unit}").samples.extend(
        w / n * 1e6 for w, n in zip(samples.wall, samples.units, strict=True)
    )
    result.series(row, "cpu", f"cpu us/{unit}").samples.extend(
        c / n * 1e6 for c, n in zip(samples.cpu, samples.units, strict=True)
    )


def _take_anomalies(result: Result) -> None:
    for text, count in sorted(ANOMALIES.items()):
        result.notes.append(f"!! {text} ({count} times): a bug in src/, the timing stands")
    ANOMALIES.clear()


# -- 0. which server ----------------------------------------------------------------------


def servers(plan: Plan, framing: str) -> Result:
    """What each bench server costs: raw httpx against each, server CPU from the server."""
    result = Result("servers", "0. bench server calibration (raw httpx sync client)")
    procs = {kind: ServerProcess(kind, framing) for kind in KINDS}
    try:
        for proc in procs.values():
            proc.start()
        clients = {kind: sync_client("httpx", proc.url()) for kind, proc in procs.items()}
        streams = {kind: sync_client("httpx", proc.url(10_000)) for kind, proc in procs.items()}
        for client in clients.values():
            client.request()
        budget_each = 2.0  # seconds per server per round: uvicorn is far slower than the rest
        for number in range(plan.servers_rounds):
            for kind in _rotated(KINDS, number):
                client, proc = clients[kind], procs[kind]
                server_cpu = proc.cpu_seconds()
                wall, cpu = time.perf_counter(), time.process_time()
                count = 0
                while count < plan.servers_requests and time.perf_counter() - wall < budget_each:
                    client.request()
                    count += 1
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                server_cpu = proc.cpu_seconds() - server_cpu
                result.series(kind, "wall", "us/request").samples.append(wall / count * 1e6)
                result.series(kind, "cpu", "client cpu us/req").samples.append(cpu / count * 1e6)
                result.series(kind, "server", "server cpu us/req").samples.append(
                    server_cpu / count * 1e6
                )
                server_cpu = proc.cpu_seconds()
                wall = time.perf_counter()
                chunks = streams[kind].stream()
                wall = time.perf_counter() - wall
                server_cpu = proc.cpu_seconds() - server_cpu
                result.series(kind, "stream", "us/chunk").samples.append(wall / chunks * 1e6)
                result.series(kind, "stream_server", "server cpu us/chunk").samples.append(
                    server_cpu / chunks * 1e6
                )
        for client in [*clients.values(), *streams.values()]:
            client.close()
        asyncio.run(_servers_concurrent(result, procs, plan))
        result.notes.append(
            "sequential requests per round are capped at 2 s per server; server CPU is the "
            "server process's own time.process_time() (GET /__bench/cpu); 'concurrent' = "
            f"{plan.concurrency} requests at once from one httpx.AsyncClient"
        )
    finally:
        for proc in procs.values():
            proc.stop()
    return result


async def _servers_concurrent(result: Result, procs: dict[str, ServerProcess], plan: Plan) -> None:
    clients = {kind: async_client("httpx", proc.url()) for kind, proc in procs.items()}
    try:
        for client in clients.values():
            await asyncio.gather(*(client.request() for _ in range(plan.concurrency)))
        for number in range(plan.servers_rounds):
            for kind in _rotated(KINDS, number):
                request, proc = clients[kind].request, procs[kind]
                server_cpu = proc.cpu_seconds()
                wall = time.perf_counter()
                await asyncio.gather(*(request() for _ in range(plan.concurrency)))
                wall = time.perf_counter() - wall
                server_cpu = proc.cpu_seconds() - server_cpu
                result.series(kind, "concurrent", "concurrent req/s", higher=True).samples.append(
                    plan.concurrency / wall
                )
                result.series(kind, "concurrent_server", "server cpu us/req").samples.append(
                    server_cpu / plan.concurrency * 1e6
                )
    finally:
        for client in clients.values():
            await client.close()


# -- 1. sequential non-streaming ----------------------------------------------------------


def sequential(server: ServerProcess, plan: Plan) -> Result:
    """µs and client CPU µs per request, one connection, one request at a time."""
    result = Result("sequential", "1. sequential non-streaming chat completions, one connection")
    n = plan.seq_requests
    clients = {lib: sync_client(lib, server.url()) for lib in LIBS}

    def repeat(lib: str) -> Callable[[], int]:
        request = clients[lib].request

        def work() -> int:
            for _ in range(n):
                request()
            return n

        return work

    try:
        for client in clients.values():
            for _ in range(max(20, n // 5)):
                client.request()
        samples = sync_rounds(
            {lib: repeat(lib) for lib in LIBS}, plan.seq_rounds, plan.seq_budget / 2
        )
    finally:
        for client in clients.values():
            client.close()
    for lib in LIBS:
        _per_unit_us(result, f"sync {lib}", samples[lib], "request")

    async def run_async() -> dict[str, _Samples]:
        aclients = {lib: async_client(lib, server.url()) for lib in LIBS}

        def arepeat(lib: str) -> Callable[[], Awaitable[int]]:
            request = aclients[lib].request

            async def work() -> int:
                for _ in range(n):
                    await request()
                return n

            return work

        try:
            for client in aclients.values():
                for _ in range(max(20, n // 5)):
                    await client.request()
            return await async_rounds(
                {lib: arepeat(lib) for lib in LIBS}, plan.seq_rounds, plan.seq_budget / 2
            )
        finally:
            for client in aclients.values():
                await client.close()

    asamples = asyncio.run(run_async())
    for lib in LIBS:
        _per_unit_us(result, f"async {lib}", asamples[lib], "request")
    for mode in ("sync", "async"):
        rows = result.rows
        result.ratio(
            f"non-streaming {mode}: aigateway / httpx, wall µs/request",
            rows[f"{mode} aigateway"]["wall"],
            rows[f"{mode} httpx"]["wall"],
            ("<=", 1.10),
        )
        result.ratio(
            f"non-streaming {mode}: aigateway / httpx, client CPU µs/request",
            rows[f"{mode} aigateway"]["cpu"],
            rows[f"{mode} httpx"]["cpu"],
        )
        result.ratio(
            f"non-streaming {mode}: openai / aigateway, wall µs/request",
            rows[f"{mode} openai"]["wall"],
            rows[f"{mode} aigateway"]["wall"],
        )
    result.notes.append(f"{n} requests per variant per round; CPU = time.process_time()")
    return result


# -- 2. one long stream -------------------------------------------------------------------


def streaming(server: ServerProcess, plan: Plan) -> Result:
    """µs per chunk of one ``stream_chunks``-chunk SSE stream, fully typed where the lib types."""
    chunks = plan.stream_chunks
    result = Result("streaming", f"2. one {chunks:,}-chunk SSE stream (µs per chunk)")
    url = server.url(chunks)
    clients = {lib: sync_client(lib, url) for lib in LIBS}
    try:
        for client in clients.values():
            client.stream()
        samples = sync_rounds(
            {lib: clients[lib].stream for lib in LIBS}, plan.stream_rounds, plan.stream_budget / 2
        )
    finally:
        for client in clients.values():
            client.close()
    for lib in LIBS:
        _per_unit_us(result, f"sync {lib}", samples[lib], "chunk")

    async def run_async() -> dict[str, _Samples]:
        aclients = {lib: async_client(lib, url) for lib in LIBS}
        try:
            for client in aclients.values():
                await client.stream()
            return await async_rounds(
                {lib: aclients[lib].stream for lib in LIBS},
                plan.stream_rounds,
                plan.stream_budget / 2,
            )
        finally:
            for client in aclients.values():
                await client.close()

    asamples = asyncio.run(run_async())
    for lib in LIBS:
        _per_unit_us(result, f"async {lib}", asamples[lib], "chunk")
    for lib, lib_samples in [*samples.items(), *asamples.items()]:
        if any(units != chunks for units in lib_samples.units):
            result.notes.append(f"!! {lib} delivered {lib_samples.units} chunks, not {chunks}")
    rows = result.rows
    for mode in ("sync", "async"):
        result.ratio(
            f"streaming {mode}: aigateway / httpx(iter_lines+json.loads), wall µs/chunk",
            rows[f"{mode} aigateway"]["wall"],
            rows[f"{mode} httpx"]["wall"],
            ("<=", 1.20),
        )
        result.ratio(
            f"streaming {mode}: openai / aigateway, wall µs/chunk (how many times faster)",
            rows[f"{mode} openai"]["wall"],
            rows[f"{mode} aigateway"]["wall"],
            (">=", 5.0),
        )
    _take_anomalies(result)
    return result


# -- 3. 200 concurrent --------------------------------------------------------------------


def _has_aiohttp_transport() -> bool:
    """Whether httpx-aiohttp (the default async pool's dependency) is installed."""
    import importlib.util

    return importlib.util.find_spec("httpx_aiohttp") is not None


def concurrent(server: ServerProcess, plan: Plan) -> Result:
    """Requests per second with ``concurrency`` requests in flight at once (async clients)."""
    size = plan.concurrency
    result = Result("concurrent", f"3. {size} concurrent requests (async), requests per second")
    on_aiohttp = ["aigateway+aiohttp", "aigateway+httpx", "httpx+aiohttp", "openai+aiohttp"]
    libs = (*LIBS, *(on_aiohttp if _has_aiohttp_transport() else []))

    async def run() -> dict[str, _Samples]:
        aclients = {lib: async_client(lib, server.url()) for lib in libs}

        def batches(lib: str) -> Callable[[], Awaitable[int]]:
            request = aclients[lib].request

            async def work() -> int:
                for _ in range(plan.concurrent_batches):
                    await asyncio.gather(*(request() for _ in range(size)))
                return size * plan.concurrent_batches

            return work

        try:
            for lib in libs:
                await batches(lib)()  # opens the connections the pool keeps
            return await async_rounds(
                {lib: batches(lib) for lib in libs},
                plan.concurrent_rounds,
                plan.concurrent_budget,
            )
        finally:
            for client in aclients.values():
                await client.close()

    samples = asyncio.run(run())
    for lib in libs:
        result.series(lib, "rps", "requests/s", higher=True).samples.extend(
            n / w for w, n in zip(samples[lib].wall, samples[lib].units, strict=True)
        )
        result.series(lib, "cpu", "cpu us/request").samples.extend(
            c / n * 1e6 for c, n in zip(samples[lib].cpu, samples[lib].units, strict=True)
        )
    result.ratio(
        "200 concurrent: aigateway / openai, requests/s",
        result.rows["aigateway"]["rps"],
        result.rows["openai"]["rps"],
        (">=", 5.0),
    )
    result.ratio(
        "200 concurrent: aigateway / httpx, requests/s",
        result.rows["aigateway"]["rps"],
        result.rows["httpx"]["rps"],
    )
    if "openai+aiohttp" in libs:
        result.ratio(
            "200 concurrent: aigateway / openai+aiohttp, requests/s",
            result.rows["aigateway"]["rps"],
            result.rows["openai+aiohttp"]["rps"],
        )
    result.notes.append(
        f"{plan.concurrent_batches} batch(es) of {size} asyncio.gather'ed requests per variant "
        "per round; one long-lived client each, default connection limits"
    )
    return result


# -- 4. fresh processes -------------------------------------------------------------------


def _first_completion_code(lib: str, base_url: str) -> str:
    messages = json.dumps(MESSAGES)
    if lib == "httpx":
        return (
            "import httpx\n"
            f"with httpx.Client(headers={{'Authorization': 'Bearer {API_KEY}'}}) as c:\n"
            f"    r = c.post('{base_url}/chat/completions', json={json.dumps(BODY)})\n"
            "    r.raise_for_status(); r.json()\n"
        )
    if lib == "aigateway":
        return (
            "import aigateway\n"
            f"with aigateway.Client(api_key='{API_KEY}', base_url='{base_url}', max_retries=0) as c:\n"
            f"    c.chat.completions.create(model='{MODEL}', messages={messages})\n"
        )
    return (
        "import openai\n"
        f"with openai.OpenAI(api_key='{API_KEY}', base_url='{base_url}', max_retries=0) as c:\n"
        f"    c.chat.completions.create(model='{MODEL}', messages={messages})\n"
    )


def startup(server: ServerProcess, plan: Plan) -> Result:
    """Whole-process wall and CPU of ``python -c "import X"`` and of a first completion."""
    result = Result("startup", "4. fresh processes: import, and import + client + one request")
    variants = {"python -c pass": "pass"}
    variants |= {f"import {lib}": f"import {lib}" for lib in ("httpx", "aigateway", "openai")}
    variants |= {
        f"first completion {lib}": _first_completion_code(lib, server.url())
        for lib in ("httpx", "aigateway", "openai")
    }
    env = child_env()

    def run(code: str) -> tuple[float, float]:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", code],
            env=env,
            cwd="/",
            check=True,
            capture_output=True,
            timeout=60,
        )
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        return wall, cpu

    for code in variants.values():
        run(code)  # warm-up: byte-code cache and page cache
    names = list(variants)
    for number in _rounds(plan.startup_runs, plan.startup_budget, plan.min_rounds + 1):
        for name in _rotated(names, number):
            wall, cpu = run(variants[name])
            result.series(name, "wall", "ms/process").samples.append(wall * 1e3)
            result.series(name, "cpu", "cpu ms/process").samples.append(cpu * 1e3)
    rows = result.rows
    result.ratio(
        "import aigateway / import httpx, whole process wall",
        rows["import aigateway"]["wall"],
        rows["import httpx"]["wall"],
        ("<=", 1.3),
    )
    result.ratio(
        "first completion: aigateway / httpx, whole process wall",
        rows["first completion aigateway"]["wall"],
        rows["first completion httpx"]["wall"],
        ("<=", 1.5),
    )
    baseline = rows["python -c pass"]["wall"].samples
    for what in ("import", "first completion"):
        net = {
            lib: [
                t - b for t, b in zip(rows[f"{what} {lib}"]["wall"].samples, baseline, strict=False)
            ]
            for lib in ("aigateway", "httpx")
        }
        result.ratio(
            f"{what}: aigateway / httpx, net of interpreter start-up",
            Series("ms", net["aigateway"]),
            Series("ms", net["httpx"]),
        )
    result.notes.append(
        f"byte code cached in {env.get('PYTHONPYCACHEPREFIX')} (PYTHONPYCACHEPREFIX), as after "
        "an install; one warm-up run each first; CPU from RUSAGE_CHILDREN"
    )
    return result


# -- 5. peak RSS --------------------------------------------------------------------------


def memory(server: ServerProcess, plan: Plan) -> Result:
    """Peak RSS of a fresh process consuming one long stream, at two stream lengths."""
    short, long = plan.rss_lengths
    result = Result("memory", f"5. peak RSS of a process consuming one stream ({long:,} chunks)")
    env = child_env()
    jobs = [(lib, short) for lib in LIBS] + [(lib, long) for lib in plan.rss_libs_long]
    for rep in range(plan.rss_reps):
        for lib, length in _rotated(jobs, rep):
            command = [sys.executable, "-m", "bench.child", "rss", "--lib", lib]
            command += ["--url", server.url(length), "--warmup-url", server.url(10)]
            done = subprocess.run(
                command, env=env, cwd=ROOT, check=True, capture_output=True, timeout=300
            )
            report = json.loads(done.stdout)
            row = f"{lib} {length:,} chunks"
            result.series(row, "peak", "peak MiB").samples.append(report["peak_kib"] / 1024)
            result.series(row, "growth", "MiB over pre-stream peak").samples.append(
                (report["peak_kib"] - report["peak_before_kib"]) / 1024
            )
            result.series(row, "wall", "us/chunk").samples.append(
                report["seconds"] / report["chunks"] * 1e6
            )
            for text, count in report["anomalies"].items():
                ANOMALIES[text] += count
    rows = result.rows
    result.ratio(
        f"peak RSS streaming {long:,} chunks: aigateway / httpx",
        rows[f"aigateway {long:,} chunks"]["peak"],
        rows[f"httpx {long:,} chunks"]["peak"],
        ("<=", 1.3),
    )
    for lib in plan.rss_libs_long:
        result.ratio(
            f"{lib} peak RSS {long:,} / {short:,} chunks (flat: at most 1.05)",
            rows[f"{lib} {long:,} chunks"]["peak"],
            rows[f"{lib} {short:,} chunks"]["peak"],
            ("<=", 1.05) if lib == "aigateway" else None,
        )
    result.notes.append(
        "peak = VmHWM (peak RSS) of a fresh `python -m bench.child rss` process that made one "
        "warm-up stream of 10 chunks, then the measured one; growth = peak minus the peak "
        "before the measured stream"
    )
    if set(plan.rss_libs_long) != set(LIBS):
        result.notes.append(f"--quick: {long:,}-chunk streams only for {plan.rss_libs_long}")
    _take_anomalies(result)
    return result


# -- 6. the SDK's mock gateway: in-process and over HTTP ----------------------------------

MOCK_INPROCESS_TARGET = 5000.0
"""Non-streamed completions per second through ``gateway.client()`` (in-process transport)."""
MOCK_SERVED_TARGET = 1500.0
"""Non-streamed completions per second from ``gateway.serve()``, one raw httpx client."""


def mock_gateway(plan: Plan) -> Result:
    """Throughput of `MockGateway`: in this process through ``gateway.client()``, and served by
    ``MockGateway(...).serve()`` in another process with raw httpx as client; interleaved."""
    result = Result("mock", "6. the SDK's MockGateway: in-process client, and served (raw httpx)")
    from aigateway.testing import MockGateway

    if not hasattr(MockGateway, "serve"):
        result.skipped = "aigateway.testing.MockGateway has no serve() yet"
        return result
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "bench.child", "mock-serve"),
            *("--long-replies", str(plan.mock_streams + 1), "--words", "2000"),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=ROOT,
        env=child_env(),
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(proc.stdout, selectors.EVENT_READ)
            line = proc.stdout.readline().decode().strip() if selector.select(30) else ""
        if not line.startswith("READY "):
            result.skipped = line[5:] if line.startswith("SKIP ") else f"no READY: {line!r}"
            return result
        _, base_url, key = line.split(" ", 2)
        _mock_measure(result, base_url, key, plan)
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        if proc.stdout is not None:
            proc.stdout.close()
    return result


def _mock_measure(result: Result, base_url: str, key: str, plan: Plan) -> None:
    """Streams first (they use the long scripted replies), then rounds of sequential requests,
    in-process and served in rotated order."""
    import httpx

    from aigateway.testing import MockGateway

    body = {"model": "gpt-4o", "messages": MESSAGES, "max_tokens": 4000}
    url = base_url.rstrip("/") + "/chat/completions"

    def stream(client: httpx.Client) -> int:
        with client.stream("POST", url, json={**body, "stream": True}) as response:
            response.raise_for_status()
            lines = response.iter_lines()
            return sum(1 for line in lines if line.startswith("data: ") and line != "data: [DONE]")

    gateway = MockGateway(rate_limits="unlimited", credits=1e12)
    messages = [{"role": "user", "content": "hi"}]
    with (
        httpx.Client(headers={"Authorization": f"Bearer {key}"}, timeout=30) as http,
        gateway.client() as sdk,
    ):
        stream(http)  # warm-up
        chunks = 0
        start = time.perf_counter()
        for _ in range(plan.mock_streams):
            chunks += stream(http)
        seconds = time.perf_counter() - start
        result.series("served streaming", "rate", "per second", higher=True).samples.append(
            chunks / seconds
        )

        def served() -> int:
            for _ in range(plan.mock_requests):
                http.post(url, json=body).raise_for_status()
            return plan.mock_requests

        def in_process() -> int:
            for _ in range(plan.mock_inprocess_requests):
                sdk.chat.completions.create(model="gpt-4o", messages=messages)
            return plan.mock_inprocess_requests

        for _ in range(200):  # warm-up
            http.post(url, json=body).raise_for_status()
            sdk.chat.completions.create(model="gpt-4o", messages=messages)
        work = {"in-process non-streaming": in_process, "served non-streaming": served}
        samples = sync_rounds(work, plan.mock_rounds, plan.mock_budget, plan.min_rounds)
    targets = {
        "in-process non-streaming": MOCK_INPROCESS_TARGET,
        "served non-streaming": MOCK_SERVED_TARGET,
    }
    for name, sample in samples.items():
        rates = [units / wall for units, wall in zip(sample.units, sample.wall, strict=True)]
        result.series(name, "rate", "per second", higher=True).samples.extend(rates)
        result.ratios.append(
            Ratio(f"mock {name}, requests/s", rates, (">=", targets[name]), unit="/s")
        )
    result.notes.append(
        f"served streaming: chunks/s over {plan.mock_streams} streams ({chunks} chunks in all); "
        f"served non-streaming: requests/s over {plan.mock_requests} sequential requests, one "
        f"raw httpx.Client against {base_url}; in-process: requests/s over "
        f"{plan.mock_inprocess_requests} `chat.completions.create` calls of a fresh "
        "MockGateway(rate_limits='unlimited', credits=1e12).client()"
    )
