"""Deterministic identifiers: ``chatcmpl-…``, ``req_…``, ``call_…``, account ids and keys.

An identifier is a hash of the gateway's seed, its kind and a per-kind counter, so two
gateways with the same seed that receive the same requests hand out the same ids, while ids of
one gateway never repeat.
"""

from __future__ import annotations

import hashlib
import threading
from collections import defaultdict

__all__ = ["IdSource"]


class IdSource:
    """Hands out ``<prefix><hex>`` identifiers from a seed and one counter per kind."""

    def __init__(self, seed: int) -> None:
        self._seed = seed
        self._counters: defaultdict[str, int] = defaultdict(int)
        self._lock = threading.Lock()

    def next(self, kind: str, prefix: str, hex_chars: int = 24) -> str:
        """The next id of ``kind``: ``prefix`` followed by ``hex_chars`` hex digits."""
        with self._lock:
            self._counters[kind] += 1
            count = self._counters[kind]
        digest = hashlib.sha256(f"{self._seed}:{kind}:{count}".encode()).hexdigest()
        return prefix + digest[:hex_chars]
