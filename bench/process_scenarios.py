"""The scenarios in fresh processes and of the mock gateway: import and first completion,
peak memory while streaming, the bundled `MockGateway` in-process and served."""

from __future__ import annotations

import json
import resource
import selectors
import subprocess
import sys
import time

from .clients import ANOMALIES, API_KEY, BODY, LIBS, MESSAGES, MODEL
from .measure import (
    Plan,
    Ratio,
    Result,
    Series,
    rotated,
    round_numbers,
    sync_rounds,
    take_anomalies,
)
from .server import ROOT
from .server_process import ServerProcess, child_env

# -- 4. fresh processes -------------------------------------------------------------------


_REPLY_MODEL = """\
from pydantic import BaseModel
class Message(BaseModel):
    role: str
    content: str | None = None
class Choice(BaseModel):
    index: int
    message: Message
    finish_reason: str | None = None
class Completion(BaseModel):
    id: str
    model: str
    choices: list[Choice]
"""
"""The smallest typed reply: what ``httpx+pydantic`` validates the completion into."""


def _first_completion_code(lib: str, base_url: str) -> str:
    """A fresh process's first completion with ``lib``: aigateway, openai, raw httpx (the
    reply decoded by ``json``), or ``httpx+pydantic``, raw httpx with the reply validated
    into three small pydantic models: the floor of any client whose replies are pydantic
    models, since it pays pydantic's import and first validators and nothing else."""
    messages = json.dumps(MESSAGES)
    if lib in ("httpx", "httpx+pydantic"):
        typed = lib == "httpx+pydantic"
        return (
            "import httpx\n"
            + (_REPLY_MODEL if typed else "")
            + f"with httpx.Client(headers={{'Authorization': 'Bearer {API_KEY}'}}) as c:\n"
            f"    r = c.post('{base_url}/chat/completions', json={json.dumps(BODY)})\n"
            "    r.raise_for_status(); "
            + ("Completion.model_validate_json(r.content)\n" if typed else "r.json()\n")
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
        for lib in ("httpx", "httpx+pydantic", "aigateway", "openai")
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
    for number in round_numbers(plan.startup_runs, plan.startup_budget, plan.min_rounds + 1):
        for name in rotated(names, number):
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
    result.ratio(
        "first completion: aigateway / httpx+pydantic (raw httpx, reply in pydantic models)",
        rows["first completion aigateway"]["wall"],
        rows["first completion httpx+pydantic"]["wall"],
    )
    result.ratio(
        "first completion: httpx+pydantic / httpx, the floor of pydantic-typed replies",
        rows["first completion httpx+pydantic"]["wall"],
        rows["first completion httpx"]["wall"],
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
        for lib, length in rotated(jobs, rep):
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
    take_anomalies(result)
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
