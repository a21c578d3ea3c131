"""``python -m bench.profiling``: where aigateway's time goes, for the hot paths of the benchmark.

Against the same bench server as ``python -m bench``:

* ``request``: cProfile of N sequential sync ``chat.completions.create`` calls;
* ``stream``: cProfile of one N-chunk sync stream;
* ``concurrent``: cProfile of batches of 200 concurrent async calls;
* ``micro``: the pieces of the hot path timed alone (no profiler overhead), beside what the
  raw httpx baseline does instead: argument checking, request building, reply parsing, SSE;
* ``imports``: ``python -X importtime -c "import aigateway"``, the heaviest imports.

Profiles list the functions of aigateway, httpx, httpcore, h11, pydantic, tenacity and anyio
by cumulative and by own time, in µs per request (or per chunk). cProfile roughly doubles the
cost of small Python functions: read its numbers as shares, and ``micro`` for absolute µs.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import pstats
import re
import subprocess
import sys
import timeit
from collections.abc import Callable
from typing import Any

from .clients import API_KEY, BODY, MESSAGES, MODEL
from .server import Replies
from .server_process import ServerProcess, child_env

PARTS = ("micro", "request", "stream", "concurrent", "imports")
PACKAGES = ("aigateway", "httpx", "httpcore", "h11", "pydantic", "tenacity", "anyio")
_PACKAGE_RE = re.compile(r"[/\\](" + "|".join(PACKAGES) + r")[/\\]")


def _stats_lines(profile: cProfile.Profile, per: int, unit: str, top: int) -> list[str]:
    """The top functions of ``PACKAGES`` by cumulative and by own time, in µs per ``unit``."""
    stats = pstats.Stats(profile, stream=io.StringIO())
    rows = []
    total = 0.0
    for (filename, line, name), (_, ncalls, tottime, cumtime, _) in stats.stats.items():  # type: ignore[attr-defined]
        total += tottime
        match = _PACKAGE_RE.search(filename)
        if not match:
            continue
        short = filename[match.start() + 1 :]
        rows.append((f"{short}:{line}({name})", ncalls / per, tottime / per, cumtime / per))
    out = [f"  profiled total: {total / per * 1e6:,.1f} µs/{unit} (all code, under cProfile)"]
    for title, key in (("cumulative", 3), ("own (tottime)", 2)):
        out.append(f"  top {top} by {title} time, µs per {unit}:")
        out.append(f"    {'cum µs':>9} {'own µs':>9} {'calls':>7}  function")
        for label, calls, own, cum in sorted(rows, key=lambda row: -row[key])[:top]:
            out.append(f"    {cum * 1e6:9.2f} {own * 1e6:9.2f} {calls:7.2f}  {label}")
    return out


def profile_requests(server: ServerProcess, n: int, top: int) -> list[str]:
    import aigateway

    with aigateway.Client(api_key=API_KEY, base_url=server.url(), max_retries=0) as client:
        create = client.chat.completions.create
        for _ in range(100):
            create(model=MODEL, messages=MESSAGES)
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(n):
            create(model=MODEL, messages=MESSAGES)
        profile.disable()
    return [f"sync non-streaming request ({n} calls)", *_stats_lines(profile, n, "request", top)]


def profile_stream(server: ServerProcess, n: int, top: int) -> list[str]:
    import aigateway

    with aigateway.Client(api_key=API_KEY, base_url=server.url(n), max_retries=0) as client:
        create = client.chat.completions.create
        for _ in create(model=MODEL, messages=MESSAGES, stream=True):
            pass
        profile = cProfile.Profile()
        profile.enable()
        count = sum(1 for _ in create(model=MODEL, messages=MESSAGES, stream=True))
        profile.disable()
    return [f"sync stream ({count} chunks)", *_stats_lines(profile, count, "chunk", top)]


def profile_concurrent(server: ServerProcess, batches: int, top: int) -> list[str]:
    import aigateway

    async def run() -> cProfile.Profile:
        async with aigateway.AsyncClient(
            api_key=API_KEY, base_url=server.url(), max_retries=0
        ) as client:
            create = client.chat.completions.create
            await asyncio.gather(*(create(model=MODEL, messages=MESSAGES) for _ in range(200)))
            profile = cProfile.Profile()
            profile.enable()
            for _ in range(batches):
                await asyncio.gather(*(create(model=MODEL, messages=MESSAGES) for _ in range(200)))
            profile.disable()
            return profile

    profile = asyncio.run(run())
    return [
        f"async, 200 concurrent requests ({batches} batches)",
        *_stats_lines(profile, 200 * batches, "request", top),
    ]


def _time(function: Callable[[], object], number: int = 2000) -> float:
    """Best-of-5 µs per call."""
    return min(timeit.repeat(function, number=number, repeat=5)) / number * 1e6


def micro(server: ServerProcess) -> list[str]:
    """The pieces of the hot path alone; each line says what, and its raw httpx counterpart."""
    import httpx

    import aigateway

    out = ["hot-path pieces timed alone (best of 5, µs per call)"]

    def line(label: str, function: Callable[[], object]) -> None:
        try:
            out.append(f"  {_time(function):9.2f}  {label}")
        except Exception as exc:  # the internals move: report, go on
            out.append(f"        n/a  {label}: {type(exc).__name__}: {exc}")

    completion = Replies().completion
    line(
        "json.loads(completion body)  [raw httpx: response.json()]", lambda: json.loads(completion)
    )
    with aigateway.Client(api_key=API_KEY, base_url=server.url(), max_retries=0) as client:
        try:
            from aigateway._pipeline.request import client_headers
            from aigateway.resources.chat import build_create_call
            from aigateway.types import ChatCompletion, ChatCompletionChunk

            params = {"model": MODEL, "messages": MESSAGES}
            call = build_create_call(dict(params))
            pipeline: Any = client._pipeline
            line(
                "ChatCompletion.model_validate_json(body)  [aigateway reply parse]",
                lambda: ChatCompletion.model_validate_json(completion),
            )
            line(
                "build_create_call(params)  [aigateway: check args, validate, dump JSON]",
                lambda: build_create_call(dict(params)),
            )
            line("json.dumps(body).encode()  [raw httpx: json=]", lambda: json.dumps(BODY).encode())
            line(
                "pipeline.build_request(call)  [aigateway: headers, URL join, httpx Request]",
                lambda: pipeline.build_request(call),
            )
            raw = httpx.Client(headers={"Authorization": f"Bearer {API_KEY}"})
            url = server.url() + "/chat/completions"
            line(
                "httpx.Client.build_request('POST', url, json=body)  [raw httpx]",
                lambda: raw.build_request("POST", url, json=BODY),
            )
            raw.close()
            line(
                "config.base_url.join('chat/completions')  [per call in build_request]",
                lambda: pipeline.config.base_url.join("chat/completions"),
            )
            joined = pipeline.config.base_url.join("chat/completions")
            request_headers = client_headers(pipeline.config)
            line(
                "http_client.build_request(POST, joined URL, ...)  [the path for an http client "
                "with cookies or query parameters of its own]",
                lambda: pipeline.http_client.build_request(
                    "POST", joined, headers=request_headers, content=call.body
                ),
            )
            from aigateway.errors import RateLimitInfo

            headers = httpx.Headers({"content-type": "application/json", "x-request-id": "r"})
            line(
                "RateLimitInfo.from_headers(reply headers)  [per reply, in received()]",
                lambda: RateLimitInfo.from_headers(headers),
            )
            line(
                "client.chat.completions.create attribute chain",
                lambda: client.chat.completions.create,
            )
            event = json.dumps(
                {
                    "id": "chatcmpl-d3c2a68c780f1f0d0ca6625a",
                    "object": "chat.completion.chunk",
                    "created": 1700000000,
                    "model": "gpt-4o",
                    "choices": [
                        {"index": 0, "delta": {"content": " again"}, "finish_reason": None}
                    ],
                },
                separators=(",", ":"),
            ).encode()
            framed = b"data: " + event + b"\n\n"
            line("json.loads(chunk)  [raw httpx stream baseline]", lambda: json.loads(event))
            line(
                "ChatCompletionChunk.model_validate_json(chunk)  [aigateway chunk parse]",
                lambda: ChatCompletionChunk.model_validate_json(event),
            )
            from aigateway._streams.sse import SSEDecoder

            decoder = SSEDecoder()
            line("SSEDecoder.feed(one framed event)", lambda: decoder.feed(framed))
            line(
                "SSEDecoder.feed_data_only(one framed event)  [a read of data-only events]",
                lambda: decoder.feed_data_only(framed),
            )
            from aigateway._streams.chunks import ChunkDecoder

            response = httpx.Response(200, request=httpx.Request("POST", url))
            chunks = ChunkDecoder(ChatCompletionChunk.model_validate_json, response)
            line(
                "ChunkDecoder.feed + next_chunk(one framed event)  [SSE + parse]",
                lambda: chunks.feed(framed) and chunks.next_chunk(),
            )
            lines_decoder = httpx._decoders.LineDecoder()
            text = framed.decode()
            line(
                "httpx LineDecoder.decode(event) + json.loads  [raw httpx per chunk]",
                lambda: [
                    json.loads(item[6:])
                    for item in lines_decoder.decode(text)
                    if item.startswith("data: ")
                ],
            )
        except Exception as exc:
            out.append(f"  (stopped: the internals moved: {type(exc).__name__}: {exc})")
    return out


def imports(top: int) -> list[str]:
    """The heaviest imports of ``import aigateway`` (self and cumulative µs)."""
    out = []
    for code in ("import aigateway", "import httpx"):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", code],
            env=child_env(),
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        rows = []
        for raw in done.stderr.splitlines():
            parts = raw.split("|")
            if len(parts) != 3 or not parts[0].split(":")[-1].strip().isdigit():
                continue
            own = int(parts[0].split(":")[-1])
            cumulative = int(parts[1])
            rows.append((cumulative, own, parts[2].rstrip()))
        total = max(row[0] for row in rows) if rows else 0
        out.append(f"python -X importtime -c {code!r}: {total / 1000:.1f} ms of imports")
        out.append(f"    {'cum ms':>8} {'own ms':>8}  module")
        for cumulative, own, name in sorted(rows, key=lambda row: -row[0])[:top]:
            out.append(f"    {cumulative / 1000:8.2f} {own / 1000:8.2f}  {name}")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.profiling", description=__doc__)
    parser.add_argument("what", nargs="*", help=f"any of {', '.join(PARTS)} (default: all)")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--batches", type=int, default=5)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--server", default="threads")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.what) - set(PARTS))
    if unknown:
        parser.error(f"unknown part(s) {unknown}; choose from {', '.join(PARTS)}")
    with ServerProcess(args.server) as server:
        for what in args.what or PARTS:
            if what == "micro":
                lines = micro(server)
            elif what == "request":
                lines = profile_requests(server, args.requests, args.top)
            elif what == "stream":
                lines = profile_stream(server, args.chunks, args.top)
            elif what == "concurrent":
                lines = profile_concurrent(server, args.batches, args.top)
            else:
                lines = imports(args.top)
            print("\n".join(lines), end="\n\n", flush=True)


if __name__ == "__main__":
    main()
