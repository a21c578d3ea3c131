"""The parent's handle on a bench server: `ServerProcess` starts ``python -m bench.server`` in
a child process and stops it on exit, on error and on Ctrl-C; `child_env` is the environment
of every child the bench starts."""

from __future__ import annotations

import atexit
import contextlib
import http.client
import json
import os
import selectors
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .server import ROOT

PYCACHE = Path(tempfile.gettempdir()) / "aigateway-bench-pycache"


def child_env() -> dict[str, str]:
    """The environment of child processes: the repository root importable, no proxies, and
    byte code cached (under /tmp, so nothing is written into src/) as it is after an install:
    with PYTHONDONTWRITEBYTECODE an editable package would be compiled afresh by every process,
    which would weigh on its import time and peak RSS alone."""
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.setdefault("PYTHONPYCACHEPREFIX", str(PYCACHE))
    return env


def stop_process(proc: subprocess.Popen[Any], grace: float = 3.0) -> None:
    """Stop a child: SIGTERM, SIGKILL if it still runs ``grace`` seconds later; its standard
    output closed."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(grace)
    if proc.stdout is not None:
        proc.stdout.close()


class ServerProcess:
    """A bench server in a child process; stopped on exit, on error and on Ctrl-C."""

    def __init__(self, kind: str = "threads", sse_framing: str = "event") -> None:
        self.kind = kind
        self.sse_framing = sse_framing
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self._proc is not None
        return self._proc.pid

    def url(self, stream_chunks: int | None = None) -> str:
        """The base URL (ends in ``/v1``); with ``stream_chunks``, the streaming route's."""
        prefix = f"/stream/{stream_chunks}" if stream_chunks is not None else ""
        return f"http://127.0.0.1:{self.port}{prefix}/v1"

    def start(self, timeout: float = 20.0) -> ServerProcess:
        command = [sys.executable, "-m", "bench.server", "--kind", self.kind]
        command += ["--sse-framing", self.sse_framing]
        self._proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=ROOT,
            env=child_env(),
            start_new_session=True,  # Ctrl-C reaches us, not it: we stop it ourselves
        )
        atexit.register(self.stop)
        assert self._proc.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self._proc.stdout, selectors.EVENT_READ)
            if not selector.select(timeout):
                self.stop()
                raise RuntimeError(f"the {self.kind} server did not start within {timeout} s")
        line = self._proc.stdout.readline().decode().split()
        if len(line) != 2 or line[0] != "READY":
            self.stop()
            raise RuntimeError(f"the {self.kind} server failed to start: {line!r}")
        self.port = int(line[1])
        return self

    def cpu_seconds(self) -> float:
        """The server's CPU time so far (user + system), from the server itself."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request("GET", "/__bench/cpu")
            return float(json.loads(conn.getresponse().read())["cpu"])
        finally:
            conn.close()

    def stop(self) -> None:
        """Stop the server (idempotent): close its stdin, SIGTERM, then SIGKILL."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            if proc.stdin is not None:
                proc.stdin.close()
        stop_process(proc)

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
