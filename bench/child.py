"""What the benchmark runs in fresh child processes, where a measurement needs a clean process.

``python -m bench.child rss --lib aigateway --url URL --warmup-url URL`` consumes one stream
with one library and prints, as JSON, the process's peak RSS before and after it. Peak RSS is a
high-water mark for the whole process, so each measurement needs a process of its own.

``python -m bench.child mock-serve`` serves the SDK's own `MockGateway` over real HTTP (if it can
yet) and prints ``READY <base_url> <api_key>``; it stops when its stdin closes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import threading
import time


def _status_kib(field: str) -> int | None:
    """A ``/proc/self/status`` memory field in KiB (None where there is no /proc)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def peak_rss_kib() -> int:
    """This process's peak RSS in KiB.

    Linux: ``VmHWM``, the high-water mark of this process's own memory map. Not ``ru_maxrss``:
    across fork + exec Linux carries the parent's peak into the child's ``ru_maxrss``, so a
    child of a big parent would report the parent's size.
    """
    hwm = _status_kib("VmHWM")
    if hwm is not None:
        return hwm
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak // 1024 if sys.platform == "darwin" else peak  # macOS counts bytes


def rss(lib: str, url: str, warmup_url: str) -> dict[str, object]:
    """Peak RSS around one stream; the warm-up stream loads everything a stream needs first."""
    from .clients import ANOMALIES, sync_client

    warm = sync_client(lib, warmup_url)
    warm.stream()
    warm.close()
    client = sync_client(lib, url)
    before = peak_rss_kib()
    start = time.perf_counter()
    chunks = client.stream()
    seconds = time.perf_counter() - start
    peak = peak_rss_kib()
    client.close()
    return {
        "lib": lib,
        "chunks": chunks,
        "seconds": seconds,
        "peak_before_kib": before,
        "peak_kib": peak,
        "rss_after_kib": _status_kib("VmRSS"),
        "anomalies": dict(ANOMALIES),
    }


def mock_serve(long_replies: int = 0, words: int = 2000) -> None:
    """Serve `MockGateway` over HTTP; print ``READY <base_url> <api_key>`` or ``SKIP <reason>``.

    The first ``long_replies`` completions are scripted to ``words`` words, so that streams
    are long enough to measure chunks per second (a generated reply has a few dozen).
    """
    from aigateway.testing import MockGateway

    serve = getattr(MockGateway, "serve", None)
    if serve is None:
        print("SKIP aigateway.testing.MockGateway has no serve() yet", flush=True)
        return
    try:  # no rate limit: the benchmark would measure 429s
        gateway = MockGateway(seed=0, credits=1e12, rate_limits="unlimited")
    except TypeError:
        gateway = MockGateway(seed=0, credits=1e12)
    if long_replies and hasattr(gateway, "enqueue_reply"):
        text = " ".join(f"word{i % 97}" for i in range(words))
        for _ in range(long_replies):
            gateway.enqueue_reply(text)
    try:
        served = gateway.serve()
    except TypeError as exc:
        print(f"SKIP MockGateway.serve() could not be called without arguments: {exc}", flush=True)
        return
    enter = getattr(served, "__enter__", None)
    handle = enter() if enter is not None else served
    url = handle if isinstance(handle, str) else None
    for name in ("base_url", "url"):
        url = url or getattr(handle, name, None) or getattr(served, name, None)
    if not url:
        print(f"SKIP cannot tell the URL of what serve() returned: {served!r}", flush=True)
        return
    print(f"READY {str(url).rstrip('/')} {gateway.api_key}", flush=True)
    done = threading.Event()

    def watch() -> None:
        while os.read(0, 4096):
            pass
        done.set()

    threading.Thread(target=watch, daemon=True).start()
    done.wait()
    exit_ = getattr(served, "__exit__", None)
    if exit_ is not None:
        exit_(None, None, None)
    else:
        for name in ("close", "stop", "shutdown"):
            if callable(getattr(served, name, None)):
                getattr(served, name)()
                break


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.child")
    sub = parser.add_subparsers(dest="command", required=True)
    rss_parser = sub.add_parser("rss")
    rss_parser.add_argument("--lib", required=True)
    rss_parser.add_argument("--url", required=True)
    rss_parser.add_argument("--warmup-url", required=True)
    mock_parser = sub.add_parser("mock-serve")
    mock_parser.add_argument("--long-replies", type=int, default=0)
    mock_parser.add_argument("--words", type=int, default=2000)
    args = parser.parse_args(argv)
    if args.command == "rss":
        json.dump(rss(args.lib, args.url, args.warmup_url), sys.stdout)
        print()
    else:
        mock_serve(args.long_replies, args.words)


if __name__ == "__main__":
    main()
