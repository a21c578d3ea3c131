"""Who follows a client's calls (tracing): the observer the request path asks for each call's
trace.

`Pipeline.flow` checks one attribute per call (``pipeline.observer``, None when off); when an
observer is set, it starts a `CallTrace` (`aigateway._call.trace`: what the flow reports, and
when) for the call and hands it to the flow with the call. The flow imports no tracing
library; an observer (`aigateway.integrations.opentelemetry`) does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from aigateway._call.call import APICall
    from aigateway._call.trace import CallTrace
    from aigateway._pipeline.flow import Pipeline

__all__ = ["CallObserver"]


class CallObserver(Protocol):
    """Starts a trace for each call of a pipeline (``Client(tracing=...)``)."""

    def start(self, call: APICall[Any], pipeline: Pipeline) -> CallTrace: ...
