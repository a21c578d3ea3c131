"""What the request path tells an observer of its calls (tracing), and nothing more.

`Pipeline.flow` checks one attribute per call (``pipeline.observer``, None when off); when an
observer is set, it starts a `CallTrace` for the call and reports to it at the points where
the flow logs: each reply's status, each attempt's end, each retry's wait, a stream's first
chunk, the stream's close and the call's end. Nothing is reported per chunk. The flow
imports no tracing library; an observer (``_tracing``) does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import httpx

    from aigateway._pipeline.flow import APICall, Pipeline
    from aigateway._streams.streams import ChunkDecoder

__all__ = ["CallObserver", "CallTrace"]


class CallTrace(Protocol):
    """One call, as an observer follows it."""

    def received(self, response: httpx.Response) -> None:
        """A reply's head arrived (any status)."""

    def attempt_end(self, number: int, error: BaseException | None) -> None:
        """Attempt ``number`` ended, with the error it raised or None."""

    def retrying(self, wait: float) -> None:
        """The last attempt is retried after ``wait`` seconds."""

    def first_chunk(self) -> None:
        """A stream's first chunk (or its end) arrived, inside the attempt."""

    def stream_closer(
        self, on_close: Callable[[], None], decoder: ChunkDecoder[Any]
    ) -> Callable[[], None]:
        """The stream's close callback, wrapped to end the trace when the stream closes."""

    def finished(self, result: object) -> None:
        """The call returned ``result`` (a stream's trace ends when it closes instead)."""

    def failed(self, error: BaseException) -> None:
        """The call raised ``error``."""


class CallObserver(Protocol):
    """Starts a trace for each call of a pipeline (``Client(tracing=...)``)."""

    def start(self, call: APICall[Any], pipeline: Pipeline) -> CallTrace: ...
