"""``python -m bench.soak [--quick]``: many calls through one client; does anything leak?

It serves the SDK's `MockGateway` on loopback (unlimited rate limits, ample credits) and
drives ONE `aigateway.AsyncClient` through it:

1. ``--requests`` chat completions (10,000; ``--quick`` 1,000) with ``--concurrency`` in
   flight (200);
2. ``--streams`` streams (1,000; ``--quick`` 100) at the same concurrency, half of them
   abandoned after their first chunk (closed early), half read to the end;
3. with ``--fault-rate R`` (0.05 by default, 0 to skip), ``R x requests / 10`` injected 503s
   among ``requests / 10`` more calls sent without retries: exactly that many must fail.

It reports errors (0 beyond the injected faults), the process's open file descriptors and
its TCP connections to the mock (sockets it owns, from ``/proc``) before the run and after the
client is closed (back to the baseline), RSS before and after (and, with ``--tracemalloc``, its peak), and
the mock's ledger (chat requests it answered, credits it charged) against the client's
(``client.usage``): equal. It is bounded: ``--time-limit`` seconds (300) after which it stops
with a message; it exits 1 when an invariant fails, 0 otherwise. Speed is printed, never judged.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
import tracemalloc
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
MESSAGES = [{"role": "user", "content": "Say something short."}]
MODEL = "gpt-4o-mini"
FULL = (10_000, 1_000)
QUICK = (1_000, 100)
FD_TOLERANCE = 2
"""Descriptors that may differ after the run (a lazily opened file, a logging handle)."""


@dataclass
class Phase:
    """One phase: its calls, the errors by class, its wall time."""

    name: str
    calls: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    expected_errors: int = 0

    def fail(self, error: BaseException) -> None:
        name = type(error).__name__
        self.errors[name] = self.errors.get(name, 0) + 1

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())


@dataclass
class SoakReport:
    """Everything one soak run measured; `problems` lists the invariants that failed."""

    phases: list[Phase] = field(default_factory=list)
    fds_before: int = 0
    fds_after: int = 0
    tcp_before: int = 0
    tcp_during: int = 0
    tcp_after: int = 0
    rss_before_kib: int = 0
    rss_after_kib: int = 0
    tracemalloc_peak_kib: int | None = None
    mock_requests: int = 0
    client_requests: int = 0
    mock_credits: Decimal = Decimal(0)
    client_credits: Decimal = Decimal(0)
    seconds: float = 0.0

    @property
    def problems(self) -> list[str]:
        found = []
        for phase in self.phases:
            if phase.error_count != phase.expected_errors:
                found.append(
                    f"{phase.name}: {phase.error_count} errors {phase.errors}, "
                    f"expected {phase.expected_errors}"
                )
        if abs(self.fds_after - self.fds_before) > FD_TOLERANCE:
            found.append(f"file descriptors: {self.fds_before} before, {self.fds_after} after")
        if self.tcp_after > self.tcp_before:
            found.append(f"TCP connections: {self.tcp_before} before, {self.tcp_after} after")
        if self.mock_requests != self.client_requests:
            found.append(
                f"requests: the mock answered {self.mock_requests}, "
                f"the client counted {self.client_requests}"
            )
        if self.mock_credits != self.client_credits:
            found.append(
                f"credits: the mock charged {self.mock_credits}, "
                f"the client counted {self.client_credits}"
            )
        return found


def open_fds() -> int:
    """This process's open file descriptors."""
    return len(os.listdir("/proc/self/fd"))


def tcp_connections(port: int) -> int:
    """TCP sockets this process owns that are connected to or from ``port`` (not listening).

    Read from ``/proc``: the socket inodes among ``/proc/self/fd`` matched with the rows of
    ``/proc/net/tcp`` and ``tcp6``, so other processes' connections and TIME_WAIT leftovers
    (owned by no one) are not counted.
    """
    inodes = set()
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            local, remote, state, inode = cols[1], cols[2], cols[3], cols[9]
            ports = {int(local.rsplit(":", 1)[1], 16), int(remote.rsplit(":", 1)[1], 16)}
            if inode in inodes and port in ports and state != "0A":  # 0A: LISTEN
                count += 1
    return count


def rss_kib() -> int:
    """This process's resident set size in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def _chat(client: Any, count: int, concurrency: int, phase: Phase) -> None:
    limiter = anyio.CapacityLimiter(concurrency)

    async def one() -> None:
        async with limiter:
            try:
                await client.chat.completions.create(model=MODEL, messages=MESSAGES)
            except Exception as error:  # counted, never raised: the run goes on
                phase.fail(error)
            phase.calls += 1

    async with anyio.create_task_group() as group:
        for _ in range(count):
            group.start_soon(one)


async def _streams(client: Any, count: int, concurrency: int, phase: Phase) -> None:
    limiter = anyio.CapacityLimiter(concurrency)

    async def one(abandon: bool) -> None:
        async with limiter:
            try:
                async with client.chat.completions.stream(model=MODEL, messages=MESSAGES) as s:
                    async for _chunk in s:
                        if abandon:
                            break  # closed early, by leaving the block
            except Exception as error:
                phase.fail(error)
            phase.calls += 1

    async with anyio.create_task_group() as group:
        for index in range(count):
            group.start_soon(one, index % 2 == 0)


async def _run(url: str, gateway: Any, requests: int, streams: int, options: Any) -> SoakReport:
    import httpx

    from aigateway import AsyncClient

    report = SoakReport()
    port = int(url.split(":")[2].split("/")[0])
    concurrency = options.concurrency

    # The server shares this process (and its GIL): on a busy machine accepting a connection
    # can take longer than the default 5 s connect timeout, which is not what is measured here.
    timeout = httpx.Timeout(600.0, connect=options.connect_timeout)

    def new_client() -> AsyncClient:
        return AsyncClient(
            api_key=gateway.api_key, base_url=url, max_concurrency=concurrency, timeout=timeout
        )

    # A first client does the lazy imports and the server's first connection unmeasured.
    async with new_client() as client:
        await client.chat.completions.create(model=MODEL, messages=MESSAGES)
    gc.collect()
    report.fds_before, report.tcp_before = open_fds(), tcp_connections(port)
    report.rss_before_kib = rss_kib()
    if options.tracemalloc:
        tracemalloc.start()
    started = time.perf_counter()
    client = new_client()
    # The client learns the balance from its first reply, whose own cost it cannot know (see
    # the usage docs): both ledgers are compared from there on.
    await client.chat.completions.create(model=MODEL, messages=MESSAGES)
    charges_before, balance_seen = len(gateway.charges), _balance(gateway)
    requests_before = client.usage.as_dict()["total"]["requests"]
    for name, count, body in (
        (f"{requests:,} chat requests", requests, _chat),
        (f"{streams:,} streams, half abandoned", streams, _streams),
    ):
        phase = Phase(name)
        report.phases.append(phase)
        began = time.perf_counter()
        await body(client, count, concurrency, phase)
        phase.seconds = time.perf_counter() - began
        _progress(phase)
    injected = round(requests // 10 * options.fault_rate)
    if injected:
        phase = Phase(f"{requests // 10:,} requests, {injected} injected 503s")
        phase.expected_errors = injected
        report.phases.append(phase)
        gateway.faults.fail(503, times=injected, path="/chat/completions")
        began = time.perf_counter()
        await _chat(client.with_options(max_retries=0), requests // 10, concurrency, phase)
        phase.seconds = time.perf_counter() - began
        _progress(phase)
    # A last call, so the client sees the balance after the abandoned streams' charges.
    await client.chat.completions.create(model=MODEL, messages=MESSAGES)
    report.tcp_during = tcp_connections(port)
    await client.close()
    report.seconds = time.perf_counter() - started
    if options.tracemalloc:
        report.tracemalloc_peak_kib = tracemalloc.get_traced_memory()[1] // 1024
        tracemalloc.stop()
    gc.collect()
    await anyio.sleep(0.2)  # lets the server finish closing its side of the sockets
    report.fds_after, report.tcp_after = open_fds(), tcp_connections(port)
    report.rss_after_kib = rss_kib()
    total = client.usage.as_dict()["total"]
    failures = sum(total["failures"].values())
    report.client_requests = total["requests"] - failures - requests_before
    report.mock_requests = len(gateway.charges) - charges_before
    report.client_credits = Decimal(str(client.usage.credits)).quantize(Decimal("1e-6"))
    report.mock_credits = balance_seen - _balance(gateway)
    return report


def _progress(phase: Phase) -> None:
    print(f"  {phase.name}: done in {phase.seconds:.1f} s", file=sys.stderr, flush=True)


def _balance(gateway: Any) -> Decimal:
    """The default account's balance as replies state it (6 decimals)."""
    return Decimal(str(gateway.credits())).quantize(Decimal("1e-6"))


def soak(requests: int, streams: int, argv: list[str] | None = None) -> SoakReport:
    """Run one soak of ``requests`` calls and ``streams`` streams, with the command line's
    other options (``argv``)."""
    return _soak(requests, streams, _parser().parse_args(argv or []))


def _soak(requests: int, streams: int, options: argparse.Namespace) -> SoakReport:
    from aigateway.testing import MockGateway

    gateway = MockGateway(rate_limits="unlimited", credits=1_000_000)

    async def bounded(url: str) -> SoakReport:
        with anyio.fail_after(options.time_limit):
            return await _run(url, gateway, requests, streams, options)

    with gateway.serve() as url:
        return anyio.run(bounded, url)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="1,000 requests and 100 streams")
    parser.add_argument("--requests", type=int, help="chat requests (10,000; quick: 1,000)")
    parser.add_argument("--streams", type=int, help="streams (1,000; quick: 100)")
    parser.add_argument("--concurrency", type=int, default=200, help="in flight at once (200)")
    parser.add_argument(
        "--fault-rate", type=float, default=0.05, help="injected 503s in phase 3 (0.05; 0: skip)"
    )
    parser.add_argument(
        "--time-limit", type=float, default=300.0, help="stop after this many seconds (300)"
    )
    parser.add_argument(
        "--connect-timeout", type=float, default=30.0, help="seconds to connect (30)"
    )
    parser.add_argument(
        "--tracemalloc", action="store_true", help="also the tracemalloc peak (4x slower)"
    )
    return parser


def render(report: SoakReport) -> str:
    """The report as a table."""
    rows = [("phase", "calls", "errors", "expected", "seconds", "calls/s")]
    for phase in report.phases:
        rate = phase.calls / phase.seconds if phase.seconds else 0.0
        errors = ", ".join(f"{n} {k}" for k, n in phase.errors.items()) or "0"
        rows.append(
            (
                phase.name,
                f"{phase.calls:,}",
                errors,
                str(phase.expected_errors),
                f"{phase.seconds:.1f}",
                f"{rate:,.0f}",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    peak = report.tracemalloc_peak_kib
    lines += [
        "",
        f"wall time                      {report.seconds:.1f} s",
        f"open file descriptors          {report.fds_before} before, {report.fds_after} after",
        f"TCP sockets to/from the mock  {report.tcp_before} before, {report.tcp_during} "
        f"at the end (client open, both ends), {report.tcp_after} after closing it",
        f"RSS                            {report.rss_before_kib / 1024:.1f} MiB before, "
        f"{report.rss_after_kib / 1024:.1f} MiB after "
        f"({(report.rss_after_kib - report.rss_before_kib) / 1024:+.1f} MiB)",
        "tracemalloc peak               "
        + ("not measured" if peak is None else f"{peak / 1024:.1f} MiB"),
        f"chat requests                  mock answered {report.mock_requests:,}, "
        f"client counted {report.client_requests:,}",
        f"credits                        mock charged {report.mock_credits}, "
        f"client counted {report.client_credits}",
        "",
        "invariants: " + ("all hold" if not report.problems else "; ".join(report.problems)),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    options = _parser().parse_args(argv)
    requests, streams = QUICK if options.quick else FULL
    requests = options.requests if options.requests is not None else requests
    streams = options.streams if options.streams is not None else streams
    print(
        f"soak: {requests:,} requests, {streams:,} streams, {options.concurrency} in flight, "
        f"one AsyncClient, served MockGateway on loopback (limit {options.time_limit:.0f} s)",
        flush=True,
    )
    try:
        report = _soak(requests, streams, options)
    except TimeoutError:
        print(f"soak: stopped after the {options.time_limit:.0f} s limit", file=sys.stderr)
        return 1
    print(render(report))
    return 1 if report.problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
