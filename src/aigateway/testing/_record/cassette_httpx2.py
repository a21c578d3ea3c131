"""`Httpx2CassetteTransport`: record and replay for httpx2's clients (the official ``openai``
SDK 3.x), the same cassettes as `CassetteTransport`'s; a module of its own so that httpx2 (the
``httpx2`` extra) is imported only when asked for."""

from __future__ import annotations

import httpx2

from aigateway.testing._record.cassette import Cassette

__all__ = ["Httpx2CassetteTransport"]


class Httpx2CassetteTransport(Cassette, httpx2.BaseTransport, httpx2.AsyncBaseTransport):
    """An httpx2 transport (sync and async) that records exchanges to the JSON file ``path``
    or replays them from it, by ``mode``, as `CassetteTransport` does for httpx (same
    arguments, same files: a cassette recorded through either replays through both). The
    inner transport that records is httpx2's own ``HTTPTransport`` unless ``transport`` is
    given (an httpx2 transport, ``gateway.transport("httpx2")`` included)."""
