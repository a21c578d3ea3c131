"""A stream's usage, counted in the usage ledger when the stream closes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aigateway._pipeline.ledger import UsageLedger

__all__ = ["StreamUsage"]


class StreamUsage:
    """What a stream used, read when it closes from the last chunks its decoder keeps (the
    usage and credits come at the end of a stream), so nothing is added to the per-chunk
    path: its model, the usage chunk and the last credits seen. It is then counted in the
    ledger like a reply."""

    def __init__(self, ledger: UsageLedger) -> None:
        self._ledger = ledger
        self._tail: Sequence[Any] = ()
        self.model: str | None = None
        self.usage: object = None
        self.remaining_credits: float | None = None

    def watch(self, tail: Sequence[Any]) -> None:
        """Read the stream's outcome from ``tail`` (the decoder's last chunks) at close."""
        self._tail = tail

    def _read_tail(self) -> None:
        for chunk in reversed(list(self._tail)):
            if self.model is None:
                self.model = getattr(chunk, "model", None)
            if self.usage is None:
                self.usage = getattr(chunk, "usage", None)
            if self.remaining_credits is None:
                self.remaining_credits = getattr(chunk, "remaining_credits", None)

    def closer(self, release: Callable[[], object] | None) -> Callable[[], None]:
        """The stream's close callback: give back its slot (``release``), then count it."""

        def close() -> None:
            if release is not None:
                release()
            self._read_tail()
            self._ledger.record_reply(self)

        return close
