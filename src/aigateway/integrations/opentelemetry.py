"""OpenTelemetry tracing of calls (``Client(tracing=True)`` or ``tracing=tracer_provider``).

A span per call, named ``"{operation} {model}"`` (``chat gpt-4o-mini``), of kind CLIENT, with
the attributes of the OpenTelemetry GenAI semantic conventions (``gen_ai.*``, ``server.*``,
``http.response.status_code``, ``error.type``) and the gateway's own (``aigateway.*``: credits,
request id, attempts, the fallback model that served). Each attempt is an event
(``aigateway.attempt``: its number, its status or error class, the wait before the next one).
A stream's span ends when the stream ends or is closed, with its time to first chunk and its
chunk count. Message contents, headers and the API key are never recorded.

This module is imported only when tracing is on, and imports ``opentelemetry`` (the ``otel``
extra) through `aigateway._optional.require`; the request path knows only `CallObserver` and
`CallTrace`, and each call's model and payload come from its `APICall` (no body is parsed).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from aigateway._optional import require
from aigateway._pipeline.response import RawResponse
from aigateway._version import __version__
from aigateway.errors import ConfigurationError

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

    from aigateway._call.call import APICall
    from aigateway._call.trace import StreamProgress
    from aigateway._pipeline.flow import Pipeline
    from aigateway._stacks import Response

__all__ = ["PROVIDER_NAME", "SpanTrace", "TracingObserver", "observer_for"]

PROVIDER_NAME = "aigateway"
"""``gen_ai.provider.name``: the gateway serves many providers' models behind one API."""

_OPERATIONS = {
    "chat/completions": "chat",
    "stream": "chat",  # the WebSocket endpoint
    "image/generate": "generate_content",
    "run": "run",
}
"""``gen_ai.operation.name`` by path: the convention's names where one fits, else the path's."""

_REQUEST_ATTRIBUTES = {
    "temperature": "gen_ai.request.temperature",
    "top_p": "gen_ai.request.top_p",
    "max_tokens": "gen_ai.request.max_tokens",
    "max_completion_tokens": "gen_ai.request.max_tokens",
    "seed": "gen_ai.request.seed",
}


def observer_for(tracing: object) -> TracingObserver | None:
    """The observer for ``Client(tracing=...)``: None for False, the global tracer provider's
    tracer for True, or the tracer of the `TracerProvider` given."""
    if tracing is False or tracing is None:
        return None
    if tracing is not True and not callable(getattr(tracing, "get_tracer", None)):
        raise ConfigurationError(
            "tracing must be True (the global OpenTelemetry tracer provider), False, or an "
            f"opentelemetry.trace.TracerProvider, got {type(tracing).__name__}"
        )
    trace_api = require("opentelemetry.trace", "otel", "tracing")
    provider: Any = trace_api.get_tracer_provider() if tracing is True else tracing
    return TracingObserver(provider.get_tracer("aigateway", __version__))


class TracingObserver:
    """Starts a span for each call of a client (and its ``with_options`` copies)."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer

    def start(self, call: APICall[Any], pipeline: Pipeline) -> SpanTrace:
        from opentelemetry.trace import SpanKind

        payload = call.payload or {}
        absolute = call.path.startswith(("http://", "https://"))
        url = pipeline.config.base_url
        model = call.model
        if absolute:
            operation, url = "download", url.join(call.path)
        else:
            operation = _OPERATIONS.get(call.path) or call.path.split("/", 1)[0]
            if model is None and call.path.startswith("models/"):
                model = call.path[len("models/") :]
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": operation,
            "gen_ai.provider.name": PROVIDER_NAME,
            "server.address": url.host,
            "server.port": url.port or (443 if url.scheme == "https" else 80),
        }
        if model is not None:
            attributes["gen_ai.request.model"] = model
        for key, name in _REQUEST_ATTRIBUTES.items():
            value = payload.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                attributes[name] = value
        if operation == "generate_content":
            attributes["gen_ai.output.type"] = "image"
        if call.stream:
            attributes["gen_ai.request.stream"] = True
        name = f"{operation} {model}" if model else operation
        span = self.tracer.start_span(name, kind=SpanKind.CLIENT, attributes=attributes)
        return SpanTrace(span, pipeline, describe_reply=operation != "models")


class SpanTrace:
    """One call's span: attempts become events; the end of the call (or of its stream) ends it."""

    def __init__(self, span: Span, pipeline: Pipeline, *, describe_reply: bool) -> None:
        self._span = span
        self._clock = pipeline.retry.monotonic
        self._started = self._clock()
        self._credits_before = pipeline.state.remaining_credits
        self._describe_reply = describe_reply
        self._status: int | None = None
        self._pending: dict[str, Any] | None = None
        """The last attempt's event, added once the wait before the next one is known."""
        self._attempts = 0
        self._streaming = False

    def received(self, response: Response) -> None:
        self._status = response.status_code
        self._span.set_attribute("http.response.status_code", response.status_code)
        request_id = response.headers.get("x-request-id")
        if request_id:
            self._span.set_attribute("aigateway.request_id", request_id)

    def attempt_end(self, number: int, error: BaseException | None) -> None:
        self._add_attempt(None)
        self._attempts += 1
        event: dict[str, Any] = {"aigateway.attempt.number": number}
        status = self._status if error is None else getattr(error, "status_code", None)
        if isinstance(status, int):
            event["http.response.status_code"] = status
        if error is not None:
            event["error.type"] = type(error).__name__
        self._status = None
        self._pending = event

    def retrying(self, wait: float) -> None:
        self._add_attempt(wait)

    def _add_attempt(self, wait: float | None) -> None:
        event, self._pending = self._pending, None
        if event is not None:
            if wait is not None:
                event["aigateway.attempt.wait"] = wait
            self._span.add_event("aigateway.attempt", event)

    def first_chunk(self) -> None:
        elapsed = max(0.0, self._clock() - self._started)
        self._span.set_attribute("gen_ai.response.time_to_first_chunk", elapsed)

    def stream_closer(
        self, on_close: Callable[[], None], stream: StreamProgress
    ) -> Callable[[], None]:
        self._streaming = True

        def close() -> None:
            try:
                on_close()
            finally:
                span = self._span
                span.set_attribute("aigateway.stream.chunks", stream.received)
                span.set_attribute("aigateway.stream.completed", stream.done)
                self._describe(_StreamSummary(stream.tail))
                span.end()

        return close

    def finished(self, result: object) -> None:
        self._add_attempt(None)
        target = result.parse() if isinstance(result, RawResponse) else result
        self._span.set_attribute("aigateway.attempts", self._attempts)
        fallback = getattr(target, "fallback", None)
        if fallback is not None and fallback.served_by is not None:
            self._span.set_attribute("aigateway.fallback.model", fallback.served_by)
        if self._streaming:
            return  # the stream's close ends the span
        self._describe(target)
        self._span.end()

    def failed(self, error: BaseException) -> None:
        from opentelemetry.trace import Status, StatusCode

        self._add_attempt(None)
        span = self._span
        span.set_attribute("aigateway.attempts", self._attempts)
        span.set_attribute("error.type", type(error).__name__)
        status = getattr(error, "status_code", None)
        if isinstance(status, int):
            span.set_attribute("http.response.status_code", status)
        request_id = getattr(error, "request_id", None)
        if isinstance(request_id, str):
            span.set_attribute("aigateway.request_id", request_id)
        span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))
        span.end()

    def _describe(self, reply: object) -> None:
        """The reply's ``gen_ai.response.*`` and usage attributes, and its credits."""
        if not self._describe_reply:
            return
        attributes: dict[str, Any] = {}
        for name, key in (("gen_ai.response.id", "id"), ("gen_ai.response.model", "model")):
            value = getattr(reply, key, None)
            if isinstance(value, str):
                attributes[name] = value
        reasons = _finish_reasons(getattr(reply, "choices", None) or ())
        if reasons:
            attributes["gen_ai.response.finish_reasons"] = reasons
        usage = getattr(reply, "usage", None)
        for name, key in (
            ("gen_ai.usage.input_tokens", "prompt_tokens"),
            ("gen_ai.usage.output_tokens", "completion_tokens"),
        ):
            value = getattr(usage, key, None)
            if isinstance(value, int):
                attributes[name] = value
        remaining = getattr(reply, "remaining_credits", None)
        cost = getattr(usage, "credits", None)
        if isinstance(remaining, int | float):
            attributes["aigateway.credits.remaining"] = float(remaining)
            before = self._credits_before
            if cost is None and before is not None and before >= remaining:
                # a chat reply states no cost: the balance's drop (exact, as the ledger counts)
                cost = float(Decimal(str(before)) - Decimal(str(remaining)))
        if isinstance(cost, int | float):
            attributes["aigateway.credits.cost"] = float(cost)
        self._span.set_attributes(attributes)


class _StreamSummary:
    """What a stream's last chunks say of the whole reply (id, model, finish, usage, credits)."""

    def __init__(self, tail: Iterable[Any]) -> None:
        chunks = list(tail)
        self.choices: list[Any] = []
        for chunk in reversed(chunks):
            self.choices.extend(getattr(chunk, "choices", None) or ())
        for key in ("id", "model", "usage", "remaining_credits"):
            found = (getattr(chunk, key, None) for chunk in reversed(chunks))
            setattr(self, key, next((value for value in found if value is not None), None))


def _finish_reasons(choices: Iterable[Any]) -> list[str]:
    return [
        reason
        for choice in choices
        if isinstance(reason := getattr(choice, "finish_reason", None), str)
    ]
