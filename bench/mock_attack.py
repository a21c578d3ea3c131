"""``python -m bench.mock_attack [--quick]``: one key attacks the served mock; is it bounded?

It starts ``aigateway mock serve`` on 127.0.0.1 in a child process (rate limits
``--rate-limits``, ``unlimited`` by default so that every attack is answered, not refused with
a 429; ample credits) and, from ONE account's key, runs each attack in a loop:

* chat bodies near the 32 MiB limit (one long word, and many short ones past the context
  window), and JSON whose values take many times its size once parsed;
* storage puts of 20 MB files until the quota refuses them (403), then deletes;
* a web search with a 4 MB query, and one of 2,000 characters and 20 results;
* SQL: ``printf('%.*c', 1000000000, 'a')``, a megabyte ``instr``, a sort of random blobs,
  a table filled to the database quota, big results under fresh idempotency keys;
* an image ``size`` of 5,000 digits, and four 2048x2048 images;
* 500 idle connections, 100 half-sent request heads and 100 idle WebSockets.

Meanwhile a second key sends small requests one after the other (``GET /models``, a short
chat): their latency while the attacker sends the largest bodies is the fairness figure.
The child's resident memory is sampled throughout (``/proc/<pid>/status``).

It reports the memory at the start (after one warm-up request), its peak during the attack
and at the end (all attack connections closed, a few seconds to settle), each attack's reply
statuses, and the other key's latencies (median, p95, max). Budgets: peak under
``--peak-mb`` (400), end within ``--settle-mb`` (50) of the start, p95 under 100 ms. It is
bounded: ``--seconds`` per attack (8; ``--quick`` 3), and the whole run stops at
``--time-limit`` (300 s). Exit status 1 when a budget is missed, 0 otherwise.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from .server_process import child_env, stop_process

ROOT = Path(__file__).resolve().parent.parent
MIB = 1024 * 1024
BIG = 31 * MIB
"""The size of the attacker's "largest" bodies: just under the mock's 32 MiB limit."""


@dataclass
class Attack:
    """One attack's replies by status (or exception name) and its time."""

    name: str
    statuses: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0


@dataclass
class Report:
    start_mb: float = 0.0
    peak_mb: float = 0.0
    end_mb: float = 0.0
    attacks: list[Attack] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    stopped_early: str = ""

    def p95(self) -> float:
        values = sorted(self.latencies_ms)
        return values[int(0.95 * (len(values) - 1))] if values else 0.0

    def problems(self, peak_mb: float, settle_mb: float) -> list[str]:
        found = []
        if self.peak_mb > peak_mb:
            found.append(f"peak memory {self.peak_mb:.0f} MB > {peak_mb:.0f} MB")
        if self.end_mb - self.start_mb > settle_mb:
            found.append(
                f"memory at the end {self.end_mb:.0f} MB, more than {settle_mb:.0f} MB over "
                f"the start ({self.start_mb:.0f} MB)"
            )
        if self.p95() > 100:
            found.append(f"the other key's p95 latency {self.p95():.0f} ms > 100 ms")
        if self.stopped_early:
            found.append(self.stopped_early)
        return found


# -- the served mock in a child process ---------------------------------------------------


@dataclass
class Served:
    process: subprocess.Popen[str]
    url: str
    attacker: str
    other: str
    admin: str

    @property
    def port(self) -> int:
        return int(self.url.split(":")[2].split("/")[0])


@contextmanager
def served_mock(rate_limits: str) -> Iterator[Served]:
    """``aigateway mock serve`` on a free port of 127.0.0.1, stopped when the block ends."""
    command = [sys.executable, "-m", "aigateway", "mock", "serve", "--port", "0"]
    command += ["--rate-limits", rate_limits, "--credits", "1000000", "--accounts", "1"]
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        lines: dict[str, str] = {}
        assert process.stdout is not None
        for line in process.stdout:
            name, _, value = line.strip().partition("=")
            if line.startswith("API key (extra account): "):
                lines["other"] = line.rsplit(" ", 1)[1].strip()
            elif name.startswith("export "):
                lines[name[len("export ") :]] = value
            if line.startswith("Press Ctrl-C"):
                break
        yield Served(
            process,
            lines["AIGATEWAY_BASE_URL"],
            lines["AIGATEWAY_API_KEY"],
            lines["other"],
            lines["AIGATEWAY_MOCK_ADMIN_TOKEN"],
        )
    finally:
        stop_process(process, 5)


def rss_mb(pid: int, field_name: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field_name + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


class Sampler(threading.Thread):
    """Samples a process's resident memory every 20 ms; ``peak`` is the largest seen."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = 0.0
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.wait(0.02):
            try:
                self.peak = max(self.peak, rss_mb(self.pid))
            except OSError:
                return

    def stop(self) -> float:
        self._done.set()
        self.join()
        return max(self.peak, rss_mb(self.pid, "VmHWM"))


# -- the attacks ---------------------------------------------------------------------------


def _client(served: Served, key: str, timeout: float = 60.0) -> httpx.Client:
    return httpx.Client(
        base_url=served.url,
        headers={"Authorization": f"Bearer {key}"},
        timeout=timeout,
        trust_env=False,
    )


def _chat_bodies() -> list[bytes]:
    word = {"model": "gpt-4o", "messages": [{"role": "user", "content": "x" * BIG}]}
    words = {"model": "gpt-4o", "messages": [{"role": "user", "content": "ab " * (BIG // 3)}]}
    values = b"[" + b"{}," * (BIG // 3 - 1) + b"{}]"
    return [json.dumps(word).encode(), json.dumps(words).encode(), values]


def _run_body(model: str, inputs: Mapping[str, object]) -> dict[str, object]:
    return {"model": model, "inputs": inputs}


def _sql(statement: str, **inputs: object) -> dict[str, object]:
    return _run_body("supabase/sql", {"sql": statement, **inputs})


def attacks(served: Served) -> list[tuple[str, Callable[[httpx.Client, int], httpx.Response]]]:
    """The attacks, each a function sending its request number ``n``."""
    file_20mb = "data:application/octet-stream;base64," + base64.b64encode(
        os.urandom(20 * 1000 * 1000)
    ).decode("ascii")
    chat_bodies = _chat_bodies()
    json_headers = {"Content-Type": "application/json"}

    def big_chat(http: httpx.Client, n: int) -> httpx.Response:
        return http.post("/chat/completions", content=chat_bodies[n % 3], headers=json_headers)

    def storage(http: httpx.Client, n: int) -> httpx.Response:
        put = {"operation": "put", "key": f"blob-{n % 4}", "data": file_20mb}
        if n % 3 == 2:
            return http.post(
                "/run",
                json=_run_body("s3/storage", {"operation": "delete", "key": f"blob-{n % 4}"}),
            )
        return http.post("/run", json=_run_body("s3/storage", put))

    def search(http: httpx.Client, n: int) -> httpx.Response:
        query = "q" * (4 * MIB) if n % 2 else "word " * 400
        return http.post(
            "/run", json=_run_body("tavily/search", {"query": query, "num_results": 20})
        )

    statements = [
        "SELECT printf('%.*c', 1000000000, 'a')",
        "SELECT instr(printf('%.*c', 1000000, 'a'), printf('%.*c', 500000, 'a') || 'b')",
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
        "SELECT count(DISTINCT randomblob(1000)) FROM c",
        "CREATE TABLE IF NOT EXISTS t (b BLOB)",
        "INSERT INTO t SELECT randomblob(1000000) FROM "
        "(WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 4) SELECT x FROM c)",
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 8) "
        "SELECT printf('%.*c', 1000000, 'a') FROM c",
    ]

    def sql(http: httpx.Client, n: int) -> httpx.Response:
        headers = {"Idempotency-Key": f"attack-{n}"}  # each reply remembered, if allowed
        return http.post("/run", json=_sql(statements[n % len(statements)]), headers=headers)

    def images(http: httpx.Client, n: int) -> httpx.Response:
        size = "1" * 5000 + "x1" if n % 2 else "2048x2048"
        return http.post(
            "/run", json=_run_body("flux-schnell", {"prompt": "a fox", "size": size, "n": 4})
        )

    return [("chat, 31 MiB bodies", big_chat), ("storage, 20 MB puts", storage),
            ("search, 4 MB queries", search), ("sql", sql), ("images", images)]  # fmt: skip


def run_attack(
    served: Served, name: str, send: Callable[[httpx.Client, int], httpx.Response], seconds: float
) -> Attack:
    attack = Attack(name)
    started = time.monotonic()
    with _client(served, served.attacker) as http:
        n = 0
        while time.monotonic() - started < seconds:
            try:
                attack.statuses[str(send(http, n).status_code)] += 1
            except httpx.HTTPError as error:
                attack.statuses[type(error).__name__] += 1
            n += 1
    attack.seconds = time.monotonic() - started
    return attack


def idle_connections(served: Served, stack: ExitStack) -> Attack:
    """500 idle sockets, 100 half-sent heads and 100 idle WebSockets, left open."""
    from websockets.sync.client import connect

    attack = Attack("idle connections: 500 idle, 100 half-sent heads, 100 idle WebSockets")
    started = time.monotonic()
    for n in range(600):
        try:
            sock = stack.enter_context(socket.create_connection(("127.0.0.1", served.port), 5))
            if n >= 500:
                sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-")
            attack.statuses["open"] += 1
        except OSError as error:
            attack.statuses[type(error).__name__] += 1
    ws_url = served.url.replace("http://", "ws://") + "/stream"
    for _ in range(100):
        try:
            stack.enter_context(connect(ws_url, subprotocols=["Authorization", served.attacker]))  # type: ignore[list-item]
            attack.statuses["websocket"] += 1
        except Exception as error:
            attack.statuses[type(error).__name__] += 1
    attack.seconds = time.monotonic() - started
    return attack


def fairness(served: Served, seconds: float, report: Report) -> Attack:
    """The attacker sends the largest bodies from 4 connections while the other key sends
    small requests one after the other; the other key's latencies go into ``report``."""
    bodies = _chat_bodies()
    attack = Attack("fairness: largest bodies from 4 connections")
    stop = threading.Event()

    def attacker() -> None:
        with _client(served, served.attacker) as http:
            n = 0
            while not stop.is_set():
                try:
                    reply = http.post("/chat/completions", content=bodies[n % 3])
                    attack.statuses[str(reply.status_code)] += 1
                except httpx.HTTPError as error:
                    attack.statuses[type(error).__name__] += 1
                n += 1

    threads = [threading.Thread(target=attacker, daemon=True) for _ in range(4)]
    for thread in threads:
        thread.start()
    time.sleep(0.5)  # the attack under way
    small = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]}
    started = time.monotonic()
    with _client(served, served.other, timeout=30) as http:
        n = 0
        while time.monotonic() - started < seconds:
            sent = time.perf_counter()
            reply = http.get("/models") if n % 2 else http.post("/chat/completions", json=small)
            report.latencies_ms.append((time.perf_counter() - sent) * 1000)
            attack.statuses[f"other key {reply.status_code}"] += 1
            n += 1
            time.sleep(0.02)
    stop.set()
    for thread in threads:
        thread.join(60)
    attack.seconds = time.monotonic() - started
    return attack


def clean_up(served: Served) -> Attack:
    """The attacker deletes what it stored (its objects, its table): deleting frees."""
    attack = Attack("clean-up: the objects deleted, the table dropped")
    started = time.monotonic()
    with _client(served, served.attacker) as http:
        for n in range(4):
            body = _run_body("s3/storage", {"operation": "delete", "key": f"blob-{n}"})
            attack.statuses[str(http.post("/run", json=body).status_code)] += 1
        attack.statuses[
            str(http.post("/run", json=_sql("DROP TABLE IF EXISTS t")).status_code)
        ] += 1
    attack.seconds = time.monotonic() - started
    return attack


def run(options: argparse.Namespace) -> Report:
    report = Report()
    deadline = time.monotonic() + options.time_limit
    with served_mock(options.rate_limits) as served:
        with _client(served, served.other) as http:
            http.get("/models")  # warm-up: imports done, pools made
        time.sleep(1.0)
        report.start_mb = rss_mb(served.process.pid)
        sampler = Sampler(served.process.pid)
        sampler.start()
        with ExitStack() as held:
            report.attacks.append(idle_connections(served, held))
            for name, send in attacks(served):
                if time.monotonic() > deadline:
                    report.stopped_early = f"stopped at the time limit, before {name!r}"
                    break
                report.attacks.append(run_attack(served, name, send, options.seconds))
            if not report.stopped_early:
                report.attacks.append(fairness(served, options.seconds, report))
        report.attacks.append(clean_up(served))
        report.peak_mb = sampler.stop()
        time.sleep(options.settle)  # connections closed; let the server notice
        report.end_mb = rss_mb(served.process.pid)
    return report


def print_report(report: Report, options: argparse.Namespace) -> None:
    print(
        f"served mock (aigateway mock serve --rate-limits {options.rate_limits}), one key attacking"
    )
    for attack in report.attacks:
        statuses = ", ".join(
            f"{status}: {count}" for status, count in sorted(attack.statuses.items())
        )
        print(f"  {attack.name} ({attack.seconds:.1f} s): {statuses}")
    values = report.latencies_ms
    if values:
        print(
            f"other key, {len(values)} small requests during the largest bodies: median "
            f"{statistics.median(values):.1f} ms, p95 {report.p95():.1f} ms, max {max(values):.1f} ms"
        )
    print(
        f"memory (RSS): start {report.start_mb:.0f} MB, peak {report.peak_mb:.0f} MB, "
        f"end {report.end_mb:.0f} MB ({report.end_mb - report.start_mb:+.0f} MB)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.mock_attack", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--quick", action="store_true", help="3 s per attack instead of 8")
    parser.add_argument("--seconds", type=float, default=None, help="seconds per attack")
    parser.add_argument("--settle", type=float, default=5.0, help="seconds to wait at the end")
    parser.add_argument("--rate-limits", default="unlimited", help="the served mock's preset")
    parser.add_argument("--peak-mb", type=float, default=400.0)
    parser.add_argument("--settle-mb", type=float, default=50.0)
    parser.add_argument("--time-limit", type=float, default=300.0)
    options = parser.parse_args(argv)
    if options.seconds is None:
        options.seconds = 3.0 if options.quick else 8.0
    report = run(options)
    print_report(report, options)
    problems = report.problems(options.peak_mb, options.settle_mb)
    for problem in problems:
        print(f"MISS: {problem}")
    if not problems:
        print("PASS: within every budget")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
