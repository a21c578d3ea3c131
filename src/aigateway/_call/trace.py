"""What the request path tells an observer about one call (tracing), and nothing more.

`aigateway._pipeline.flow.Pipeline.flow` asks the client's observer (`CallObserver`, None when
off: one check per call) for a `CallTrace` and reports to it at the points where the flow
logs: each reply's status, each attempt's end, each retry's wait, a stream's first chunk, the
stream's close and the call's end. Nothing is reported per chunk. The path imports no tracing
library; an observer (`aigateway.integrations.opentelemetry`) does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from aigateway._stacks import Response

__all__ = ["CallTrace", "StreamProgress"]


class StreamProgress(Protocol):
    """What a stream's decoder says of it when it closes."""

    @property
    def received(self) -> int:
        """Chunks received."""

    @property
    def done(self) -> bool:
        """Whether the stream's end (``[DONE]``) arrived."""

    @property
    def tail(self) -> Sequence[Any]:
        """The last chunks (the usage and credits come at the end of a stream)."""


class CallTrace(Protocol):
    """One call, as an observer follows it."""

    def received(self, response: Response) -> None:
        """A reply's head arrived (any status)."""

    def attempt_end(self, number: int, error: BaseException | None) -> None:
        """Attempt ``number`` ended, with the error it raised or None."""

    def retrying(self, wait: float) -> None:
        """The last attempt is retried after ``wait`` seconds."""

    def first_chunk(self) -> None:
        """A stream's first chunk (or its end) arrived, inside the attempt."""

    def stream_closer(
        self, on_close: Callable[[], None], stream: StreamProgress
    ) -> Callable[[], None]:
        """The stream's close callback, wrapped to end the trace when the stream closes."""

    def finished(self, result: object) -> None:
        """The call returned ``result`` (a stream's trace ends when it closes instead)."""

    def failed(self, error: BaseException) -> None:
        """The call raised ``error``."""
