"""Minimal local HTTP/1.1 servers with pre-built replies, so that a client's own cost dominates.

Three kinds, all speaking keep-alive HTTP/1.1 on 127.0.0.1 and serving the same bytes:

* ``threads`` (the default): blocking sockets, one thread per connection, no HTTP library: a
  tiny request parser and pre-serialised replies handed to ``sendall``;
* ``asyncio``: the same parser and bytes in one ``asyncio.Protocol`` per connection;
* ``uvicorn``: a bare ASGI app under uvicorn (h11), for comparison with a "real" server.

Scenario 0 of the benchmark (``python -m bench --only servers``) measures what each costs;
on the 2-core reference machine ``threads`` spent ~46 µs of server CPU per sequential request,
``asyncio`` ~65 µs and uvicorn ~270 µs (and ~5 µs per stream chunk against ~0.1 µs), with
the same per-chunk client figures and the same 200-concurrent throughput for the first two.

Routes (the path decides, the request body is read but never parsed):

* ``POST /v1/chat/completions``: a chat completion (JSON, about 600 bytes);
* ``POST /stream/<n>/v1/chat/completions``: an SSE stream of ``n`` chunks and ``data: [DONE]``,
  with ``Transfer-Encoding: chunked`` and one HTTP chunk per event (``--sse-framing event``, what
  a real server streaming tokens sends) or per 100 events (``bulk``);
* ``GET /v1/models``: a small model list;
* ``GET /__bench/cpu``: the server's CPU seconds so far, to measure what a request costs it.

Run as ``python -m bench.server --kind threads``: it prints ``READY <port>`` and serves until its
standard input closes (so it dies with its parent even after a SIGKILL) or it gets SIGTERM.
`ServerProcess` starts and stops one from the benchmark.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import os
import signal
import socket
import socketserver
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("threads", "asyncio", "uvicorn")
FRAMINGS = ("event", "bulk")
MAX_STREAM_CHUNKS = 10_000_000

_WORDS = [
    *("Pattern", "again", "message", "checks", "counts.", "Reply", "about", "each", "clear"),
    *("well", "with", "now", "gateway", "the.", "Another", "counts", "today", "system"),
    *("model", "credit", "checks."),
]
_COMPLETION = {
    "id": "chatcmpl-6d7236af757804af3f602396",
    "object": "chat.completion",
    "created": 1700000000,
    "model": "gpt-4o",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "Pattern again message checks counts. Reply about each clear well with "
                "now gateway the. Another counts today system model credit checks. Now number "
                "credit that the the now model writes. System token with returns. Answer every "
                "answer after about shows here, credit answer.",
            },
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 5, "completion_tokens": 50, "total_tokens": 55},
    "_remaining_credits": 19.999225,
    "_balance_warning": False,
}
_MODELS = {
    "object": "list",
    "data": [
        {"id": name, "object": "model", "created": 1715367049, "owned_by": "openai"}
        for name in ("gpt-4o", "gpt-4o-mini", "claude-3-5-sonnet", "llama-3.1-70b")
    ],
}
_BLOCK = 1000  # events in one pre-built block of a stream
_SLICE = 256 * 1024  # a large pre-built body is written in slices of this size


def _dumps(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def _chunk_event(index: int, n: int) -> bytes:
    """The ``data:`` event of chunk ``index`` of an ``n``-chunk stream."""
    delta: dict[str, str] = {}
    if index == 0:
        delta["role"] = "assistant"
    if index < n - 1:
        delta["content"] = ("" if index == 0 else " ") + _WORDS[index % len(_WORDS)]
    chunk: dict[str, Any] = {
        "id": "chatcmpl-d3c2a68c780f1f0d0ca6625a",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "gpt-4o",
        "choices": [
            {"index": 0, "delta": delta, "finish_reason": "stop" if index == n - 1 else None}
        ],
    }
    if index == n - 1:
        chunk["_remaining_credits"] = 19.5
        chunk["_balance_warning"] = False
    return b"data: " + _dumps(chunk) + b"\n\n"


def _frame(payload: bytes) -> bytes:
    """One HTTP/1.1 chunk of a chunked body."""
    return b"%x\r\n%s\r\n" % (len(payload), payload)


class Replies:
    """Every reply the servers send, built once; raw servers get serialised HTTP bytes."""

    def __init__(self, framing: str = "event") -> None:
        if framing not in FRAMINGS:
            raise ValueError(f"framing must be one of {FRAMINGS}, not {framing!r}")
        self.per_http_chunk = 1 if framing == "event" else 100
        self.completion = _dumps(_COMPLETION)
        self.models = _dumps(_MODELS)
        self.not_found = _dumps({"error": {"message": "no such route", "type": "not_found"}})
        # The middle of every stream: content events, in pre-built blocks of _BLOCK events.
        self._middle = [_chunk_event(1 + i, 10**9) for i in range(_BLOCK)]
        self._block = self._framed(self._middle)
        self._cache: dict[int, bytes] = {}

    def _groups(self, events: list[bytes]) -> Iterator[bytes]:
        step = self.per_http_chunk
        for start in range(0, len(events), step):
            yield b"".join(events[start : start + step])

    def _framed(self, events: list[bytes]) -> bytes:
        return b"".join(_frame(group) for group in self._groups(events))

    def stream_payloads(self, n: int) -> Iterator[bytes]:
        """The payloads of the HTTP chunks of an ``n``-chunk stream (for the ASGI server)."""
        yield _chunk_event(0, n)
        middle = n - 2
        for _ in range(middle // _BLOCK):
            yield from self._groups(self._middle)
        yield from self._groups(self._middle[: middle % _BLOCK])
        yield _chunk_event(n - 1, n)
        yield b"data: [DONE]\n\n"

    # -- serialised HTTP, for the raw servers ---------------------------------------------

    @staticmethod
    def head(status: str, content_type: str, length: int | None) -> bytes:
        framing = (
            f"content-length: {length}" if length is not None else "transfer-encoding: chunked"
        )
        return (
            f"HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\n{framing}\r\n"
            "x-request-id: req_bench\r\n\r\n"
        ).encode()

    def json_reply(self, body: bytes, status: str = "200 OK") -> bytes:
        return self.head(status, "application/json", len(body)) + body

    def stream_reply(self, n: int) -> Iterator[bytes | memoryview]:
        """An ``n``-chunk SSE reply as byte slices (pre-built when small, else by blocks)."""
        n = max(2, min(n, MAX_STREAM_CHUNKS))
        cached = self._cache.get(n)
        if cached is None and n <= 20_000:
            cached = self._cache[n] = b"".join(self._stream_parts(n))
        if cached is not None:
            view = memoryview(cached)
            return (view[i : i + _SLICE] for i in range(0, len(view), _SLICE))
        return self._stream_parts(n)

    def _stream_parts(self, n: int) -> Iterator[bytes]:
        head = self.head("200 OK", "text/event-stream; charset=utf-8", None)
        yield head + _frame(_chunk_event(0, n))
        middle = n - 2
        for _ in range(middle // _BLOCK):
            yield self._block
        yield (
            self._framed(self._middle[: middle % _BLOCK])
            + _frame(_chunk_event(n - 1, n))
            + _frame(b"data: [DONE]\n\n")
            + b"0\r\n\r\n"
        )

    def respond(self, method: bytes, path: bytes) -> Iterable[bytes | memoryview]:
        """The serialised reply to a request."""
        path = path.split(b"?", 1)[0]
        if path == b"/v1/chat/completions":
            return (self.json_reply(self.completion),)
        if path.startswith(b"/stream/") and path.endswith(b"/v1/chat/completions"):
            count = path[len(b"/stream/") : -len(b"/v1/chat/completions")]
            if count.isdigit():
                return self.stream_reply(int(count))
        if path == b"/v1/models":
            return (self.json_reply(self.models),)
        if path == b"/__bench/cpu":
            return (self.json_reply(_dumps({"cpu": time.process_time()})),)
        return (self.json_reply(self.not_found, "404 Not Found"),)


class RequestParser:
    """Just enough of HTTP/1.1 requests: the request line, Content-Length, Connection: close."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[tuple[bytes, bytes, bool]]:
        """Complete requests as ``(method, path, close)``."""
        buf = self._buf
        buf += data
        requests = []
        while True:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                break
            head = bytes(buf[:end])
            method, path, _ = head[: head.find(b"\r\n")].split(b" ", 2)
            lower = head.lower()
            length = 0
            at = lower.find(b"\r\ncontent-length:")
            if at >= 0:
                stop = lower.find(b"\r\n", at + 2)
                length = int(lower[at + 17 : stop if stop >= 0 else len(lower)])
            elif b"\r\ntransfer-encoding:" in lower:
                raise ValueError("chunked request bodies are not supported")
            total = end + 4 + length
            if len(buf) < total:
                break
            del buf[:total]
            requests.append((method, path, b"\r\nconnection: close" in lower))
        return requests


# -- asyncio ------------------------------------------------------------------------------


class _Connection(asyncio.Protocol):
    """One keep-alive connection, answered in order, with write flow control for streams."""

    def __init__(self, replies: Replies) -> None:
        self._replies = replies
        self._parser = RequestParser()
        self._queue: collections.deque[tuple[bytes, bytes, bool]] = collections.deque()
        self._pending: Iterator[bytes | memoryview] | None = None
        self._close_after = False
        self._paused = False
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        try:
            self._queue.extend(self._parser.feed(data))
        except ValueError:
            assert self._transport is not None
            self._transport.close()
            return
        self._pump()

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._pump()

    def connection_lost(self, exc: Exception | None) -> None:
        self._pending = None
        self._queue.clear()

    def _pump(self) -> None:
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        while not self._paused:
            if self._pending is None:
                if not self._queue:
                    return
                method, path, self._close_after = self._queue.popleft()
                self._pending = iter(self._replies.respond(method, path))
            for part in self._pending:
                transport.write(part)
                if self._paused:
                    return  # resume_writing continues with the rest of this reply
            self._pending = None
            if self._close_after:
                transport.close()
                return


async def _serve_asyncio(host: str, port: int, replies: Replies) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: _Connection(replies), host, port, backlog=4096, reuse_address=True
    )
    _ready(server.sockets[0].getsockname()[1])
    async with server:
        await server.serve_forever()


# -- threads ------------------------------------------------------------------------------


class _ThreadedServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 4096
    replies: Replies

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-reply (a cancelled stream) is no error of ours."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(socketserver.BaseRequestHandler):
    server: _ThreadedServer

    def handle(self) -> None:
        sock: socket.socket = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        parser = RequestParser()
        replies = self.server.replies
        while True:
            data = sock.recv(65536)
            if not data:
                return
            for method, path, close in parser.feed(data):
                for part in replies.respond(method, path):
                    sock.sendall(part)
                if close:
                    return


def _serve_threads(host: str, port: int, replies: Replies) -> None:
    with _ThreadedServer((host, port), _Handler) as server:
        server.replies = replies
        _ready(server.server_address[1])
        server.serve_forever()


# -- uvicorn ------------------------------------------------------------------------------


def _asgi_app(replies: Replies) -> Any:
    json_headers = [(b"content-type", b"application/json"), (b"x-request-id", b"req_bench")]
    sse_headers = [
        (b"content-type", b"text/event-stream; charset=utf-8"),
        (b"x-request-id", b"req_bench"),
    ]

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        more = True
        while more:
            more = (await receive()).get("more_body", False)
        path: str = scope["path"]
        if path.startswith("/stream/") and path.endswith("/v1/chat/completions"):
            n = max(2, min(int(path.split("/")[2]), MAX_STREAM_CHUNKS))
            await send({"type": "http.response.start", "status": 200, "headers": sse_headers})
            for payload in replies.stream_payloads(n):
                await send({"type": "http.response.body", "body": payload, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
            return
        status, body = 200, replies.not_found
        if path == "/v1/chat/completions":
            body = replies.completion
        elif path == "/v1/models":
            body = replies.models
        elif path == "/__bench/cpu":
            body = _dumps({"cpu": time.process_time()})
        else:
            status = 404
        headers = [*json_headers, (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


def _serve_uvicorn(host: str, port: int, replies: Replies) -> None:
    import uvicorn

    # proto=IPPROTO_TCP, or asyncio does not set TCP_NODELAY on accepted sockets (it checks
    # sock.proto), and every small reply then waits ~40 ms for a delayed ACK (Nagle).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(4096)
    config = uvicorn.Config(
        _asgi_app(replies),
        log_level="warning",
        access_log=False,
        lifespan="off",
        http="h11",
        loop="asyncio",
        backlog=4096,
    )
    _ready(sock.getsockname()[1])
    uvicorn.Server(config).run(sockets=[sock])


# -- process ------------------------------------------------------------------------------


def _ready(port: int) -> None:
    print(f"READY {port}", flush=True)


def _exit_when_stdin_closes() -> None:
    """Die with the parent: its end of our stdin closes when it exits, however it exits."""

    def watch() -> None:
        with contextlib.suppress(OSError):
            while os.read(0, 4096):
                pass
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()


def main(argv: list[str] | None = None) -> None:
    """Serve until stdin closes or SIGTERM."""
    parser = argparse.ArgumentParser(prog="python -m bench.server", description=__doc__)
    parser.add_argument("--kind", choices=KINDS, default="threads")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--sse-framing", choices=FRAMINGS, default="event")
    args = parser.parse_args(argv)
    replies = Replies(args.sse_framing)
    _exit_when_stdin_closes()
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    try:
        if args.kind == "asyncio":
            asyncio.run(_serve_asyncio(args.host, args.port, replies))
        elif args.kind == "threads":
            _serve_threads(args.host, args.port, replies)
        else:
            _serve_uvicorn(args.host, args.port, replies)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
