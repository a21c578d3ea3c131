"""Run in a fresh process by ``test_response_limits.py``: replies too large for memory, served by
a small server on 127.0.0.1 in this process, read by one kind of client (``sync``, ``asyncio``
or ``trio``) with the default limits. Prints one JSON line per case, then the process's peak
resident memory (``VmHWM``: ``ru_maxrss`` would carry the parent's peak across fork and exec).

    python tests/http/_response_limits_child.py KIND BOMB_DIR

``BOMB_DIR`` holds ``gzip``, ``deflate`` and ``br``: 1 GiB of zeros, compressed.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
from pathlib import Path
from typing import Any

import anyio

from aigateway import AsyncClient, Client, ResponseTooLargeError

BIG = 200 * 1024 * 1024
"""The size of the plain body too large for memory (and of the file saved)."""
BLOCK = b"x" * 65_536
HELLO = [{"role": "user", "content": "hi"}]


class Server:
    """Serves ``/<case>/...``: a compressed bomb (``gzip``, ``deflate``, ``br``), 200 MB of
    identity body (``big-chunked`` in chunks, ``big-length`` with a Content-Length), an image
    result pointing at ``/file`` and that file (200 MB). Counts the body bytes it could send."""

    def __init__(self, bombs: Path) -> None:
        self.bombs = {name: (bombs / name).read_bytes() for name in ("gzip", "deflate", "br")}
        self.sent: dict[str, int] = {}
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            connection, _ = self.listener.accept()
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        with connection, contextlib.suppress(OSError):  # a client may close at any time
            reader = connection.makefile("rb")
            while True:
                head = reader.readline()
                if not head:
                    return
                case = head.split()[1].decode().split("/")[1]
                length = 0
                while (line := reader.readline()) not in (b"\r\n", b""):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                reader.read(length)
                self._reply(connection, case)

    def _reply(self, connection: socket.socket, case: str) -> None:
        kind = "text/event-stream" if "stream" in case else "application/json"
        if case.split("-")[0] in self.bombs:
            encoding = case.split("-")[0]
            bomb = self.bombs[encoding]
            head = f"Content-Encoding: {encoding}\r\nContent-Length: {len(bomb)}"
            self._send(connection, case, kind, head, [bomb])
        elif case == "image":
            body = json.dumps({"image_url": f"http://127.0.0.1:{self.port}/file/x.bin"})
            self._send(connection, case, kind, f"Content-Length: {len(body)}", [body.encode()])
        elif case in ("big-length", "file"):
            blocks = (BLOCK for _ in range(BIG // len(BLOCK)))
            self._send(connection, case, kind, f"Content-Length: {BIG}", blocks)
        else:  # big-chunked
            chunk = b"%x\r\n%s\r\n" % (len(BLOCK), BLOCK)
            blocks = (chunk for _ in range(BIG // len(BLOCK)))
            self._send(connection, case, kind, "Transfer-Encoding: chunked", blocks, b"0\r\n\r\n")

    def _send(
        self, connection: socket.socket, case: str, kind: str, head: str, body: Any, end=b""
    ) -> None:
        connection.sendall(f"HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\n{head}\r\n\r\n".encode())
        self.sent[case] = 0
        for block in body:
            for start in range(0, len(block), 65_536):
                connection.sendall(block[start : start + 65_536])
                self.sent[case] += len(block[start : start + 65_536])
        connection.sendall(end)


CASES = [
    *(f"{encoding}-plain" for encoding in ("gzip", "deflate", "br")),
    *(f"{encoding}-stream" for encoding in ("gzip", "deflate", "br")),
    "big-chunked",
    "big-length",
    "save",
]


def options(server: Server, case: str) -> dict[str, Any]:
    path = "image" if case == "save" else case
    return {"api_key": "sk-local", "base_url": f"http://127.0.0.1:{server.port}/{path}/v1"}


def outcome(case: str, server: Server, result: Any) -> dict[str, Any]:
    if isinstance(result, ResponseTooLargeError):
        return {
            "case": case,
            "error": type(result).__name__,
            "limit_name": result.limit_name,
            "received": result.received,
            "sent": server.sent.get(case),
        }
    if isinstance(result, BaseException):
        return {"case": case, "error": repr(result)}
    return {"case": case, "result": result}


def run_sync(server: Server, case: str, target: Path) -> Any:
    with Client(**options(server, case), max_retries=0) as client:
        try:
            if case == "save":
                image = client.images.generate(model="m", prompt="p", size="8x8")
                return image.save(target).stat().st_size
            if "stream" in case:
                with client.chat.completions.create(model="m", messages=HELLO, stream=True) as s:
                    return sum(1 for _ in s)
            return len(client.models.list().data)
        except Exception as exc:
            return exc


async def run_async(server: Server, case: str, target: Path) -> Any:
    async with AsyncClient(**options(server, case), max_retries=0) as client:
        try:
            if case == "save":
                image = await client.images.generate(model="m", prompt="p", size="8x8")
                return (await image.asave(target)).stat().st_size
            if "stream" in case:
                stream = await client.chat.completions.create(
                    model="m", messages=HELLO, stream=True
                )
                async with stream:
                    return len([chunk async for chunk in stream])
            return len((await client.models.list()).data)
        except Exception as exc:
            return exc


def peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")  # pragma: no cover


def main() -> None:
    kind, bombs = sys.argv[1], Path(sys.argv[2])
    server = Server(bombs)
    target = bombs / f"saved-{kind}.bin"
    print(json.dumps({"baseline_mb": peak_rss_mb()}), flush=True)
    for case in CASES:
        if kind == "sync":
            result = run_sync(server, case, target)
        else:
            result = anyio.run(run_async, server, case, target, backend=kind)
        print(json.dumps(outcome(case, server, result)), flush=True)
        del result  # before the next case: each is measured alone
    target.unlink(missing_ok=True)
    print(json.dumps({"peak_mb": peak_rss_mb()}), flush=True)


if __name__ == "__main__":
    main()
