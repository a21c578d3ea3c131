"""Identifiers: ``chatcmpl-…``, ``req_…``, ``call_…``, account ids, API keys and file ids.

An ordinary identifier is a hash of the gateway's seed, its kind and a per-kind counter, so two
gateways with the same seed that receive the same requests hand out the same ids (and the same
replies), while ids of one gateway never repeat.

An identifier that grants access (an API key, a file id: `IdSource.secret`) comes from
`secrets` instead, so nobody can guess it from the seed, unless the source was made with
``fixed_secrets=True`` for tests that compare keys or file ids from run to run.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
from collections import defaultdict

__all__ = ["IdSource"]


class IdSource:
    """Hands out ``<prefix><hex>`` identifiers from a seed and one counter per kind."""

    def __init__(self, seed: int, *, fixed_secrets: bool = False) -> None:
        self._seed = seed
        self._fixed_secrets = fixed_secrets
        self._counters: defaultdict[str, int] = defaultdict(int)
        self._lock = threading.Lock()

    def next(self, kind: str, prefix: str, hex_chars: int = 24) -> str:
        """The next id of ``kind``: ``prefix`` followed by ``hex_chars`` hex digits."""
        with self._lock:
            self._counters[kind] += 1
            count = self._counters[kind]
        digest = hashlib.sha256(f"{self._seed}:{kind}:{count}".encode()).hexdigest()
        return prefix + digest[:hex_chars]

    def secret(self, kind: str, prefix: str, hex_chars: int = 32) -> str:
        """An id that grants access: random, or like `next` when secrets are fixed."""
        if self._fixed_secrets:
            return self.next(kind, prefix, hex_chars)
        return prefix + secrets.token_hex((hex_chars + 1) // 2)[:hex_chars]
