"""Tiny servers on 127.0.0.1 for tests on a real socket: `running` serves one in a thread."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def running(server: Any) -> Iterator[None]:
    """Run ``server.serve_forever()`` in a daemon thread; shut it down on leaving (an
    ``http.server`` or a ``websockets.sync.server`` server)."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        thread.join(5)
