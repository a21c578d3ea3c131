"""The scenarios over one connection or many: which server, sequential requests, one long
stream, 200 concurrent requests. Each runs its variants in interleaved rounds (see
`bench.measure`) and returns a `Result`."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from .clients import HTTPX2_MISSING, LIBS, async_client, httpx2_variants, sync_client
from .measure import (
    Plan,
    Result,
    Samples,
    async_rounds,
    per_unit_us,
    rotated,
    sync_rounds,
    take_anomalies,
)
from .server import KINDS
from .server_process import ServerProcess

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
            for kind in rotated(KINDS, number):
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
            for kind in rotated(KINDS, number):
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
    libs = (*LIBS, *httpx2_variants())
    clients = {lib: sync_client(lib, server.url()) for lib in libs}

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
            {lib: repeat(lib) for lib in libs}, plan.seq_rounds, plan.seq_budget / 2
        )
    finally:
        for client in clients.values():
            client.close()
    for lib in libs:
        per_unit_us(result, f"sync {lib}", samples[lib], "request")

    async def run_async() -> dict[str, Samples]:
        aclients = {lib: async_client(lib, server.url()) for lib in libs}

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
                {lib: arepeat(lib) for lib in libs}, plan.seq_rounds, plan.seq_budget / 2
            )
        finally:
            for client in aclients.values():
                await client.close()

    asamples = asyncio.run(run_async())
    for lib in libs:
        per_unit_us(result, f"async {lib}", asamples[lib], "request")
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
    _httpx2_ratios(result, "non-streaming", "request", 1.10)
    result.notes.append(f"{n} requests per variant per round; CPU = time.process_time()")
    return result


def _httpx2_ratios(result: Result, scenario: str, per: str, bound: float) -> None:
    """aigateway on httpx2 against raw httpx2 (sync: with the target ``bound``, as aigateway
    against raw httpx), and against itself on httpx; or why the httpx2 rows are missing."""
    rows = result.rows
    if "sync httpx2" not in rows:
        result.notes.append(HTTPX2_MISSING)
        return
    for mode in ("sync", "async"):
        result.ratio(
            f"{scenario} {mode}: aigateway(httpx2) / httpx2, wall µs/{per}",
            rows[f"{mode} aigateway(httpx2)"]["wall"],
            rows[f"{mode} httpx2"]["wall"],
            ("<=", bound) if mode == "sync" else None,
        )
        result.ratio(
            f"{scenario} {mode}: aigateway(httpx2) / httpx2, client CPU µs/{per}",
            rows[f"{mode} aigateway(httpx2)"]["cpu"],
            rows[f"{mode} httpx2"]["cpu"],
        )
        result.ratio(
            f"{scenario} {mode}: aigateway(httpx2) / aigateway, wall µs/{per}",
            rows[f"{mode} aigateway(httpx2)"]["wall"],
            rows[f"{mode} aigateway"]["wall"],
        )
    result.notes.append(
        "aigateway(httpx2): aigateway with its own pools on httpx2; on the httpx2 rows "
        "'vs httpx' is against raw httpx2 (raw httpx2's own: against raw httpx)"
    )


# -- 2. one long stream -------------------------------------------------------------------


def streaming(server: ServerProcess, plan: Plan) -> Result:
    """µs per chunk of one ``stream_chunks``-chunk SSE stream, fully typed where the lib types."""
    chunks = plan.stream_chunks
    result = Result("streaming", f"2. one {chunks:,}-chunk SSE stream (µs per chunk)")
    url = server.url(chunks)
    libs = (*LIBS, *httpx2_variants())
    clients = {lib: sync_client(lib, url) for lib in libs}
    try:
        for client in clients.values():
            client.stream()
        samples = sync_rounds(
            {lib: clients[lib].stream for lib in libs}, plan.stream_rounds, plan.stream_budget / 2
        )
    finally:
        for client in clients.values():
            client.close()
    for lib in libs:
        per_unit_us(result, f"sync {lib}", samples[lib], "chunk")

    async def run_async() -> dict[str, Samples]:
        aclients = {lib: async_client(lib, url) for lib in libs}
        try:
            for client in aclients.values():
                await client.stream()
            return await async_rounds(
                {lib: aclients[lib].stream for lib in libs},
                plan.stream_rounds,
                plan.stream_budget / 2,
            )
        finally:
            for client in aclients.values():
                await client.close()

    asamples = asyncio.run(run_async())
    for lib in libs:
        per_unit_us(result, f"async {lib}", asamples[lib], "chunk")
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
    _httpx2_ratios(result, "streaming", "chunk", 1.20)
    take_anomalies(result)
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
    on_httpx2 = [*httpx2_variants()]
    if on_httpx2 and _has_aiohttp_transport():
        on_httpx2.append("httpx2+aiohttp")
    libs = (*LIBS, *(on_aiohttp if _has_aiohttp_transport() else []), *on_httpx2)

    async def run() -> dict[str, Samples]:
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
    if on_httpx2:
        for base in on_httpx2[1:]:
            result.ratio(
                f"200 concurrent: aigateway(httpx2) / {base}, requests/s",
                result.rows["aigateway(httpx2)"]["rps"],
                result.rows[base]["rps"],
            )
    else:
        result.notes.append(HTTPX2_MISSING)
    result.notes.append(
        f"{plan.concurrent_batches} batch(es) of {size} asyncio.gather'ed requests per variant "
        "per round; one long-lived client each, default connection limits"
    )
    return result
