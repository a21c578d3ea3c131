"""`Httpx2MockTransport`: the mock's in-process transport for httpx2's clients.

What the official ``openai`` SDK 3.x and other httpx2-based clients take
(``httpx2.Client(transport=gateway.transport("httpx2"))``). It is `InProcessTransport`, the
core `MockTransport` is too, with httpx2's base classes; a module of its own so that httpx2
(the ``httpx2`` extra) is imported only when asked for.
"""

from __future__ import annotations

import httpx2

from aigateway.testing._serving.inprocess import InProcessTransport

__all__ = ["Httpx2MockTransport"]


class Httpx2MockTransport(InProcessTransport, httpx2.BaseTransport, httpx2.AsyncBaseTransport):
    """Sends httpx2 requests to a mock gateway (``gateway.transport("httpx2")`` makes one);
    works for both `httpx2.Client` and `httpx2.AsyncClient`."""
