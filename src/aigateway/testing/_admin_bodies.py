"""What the bodies of the mock's admin API may hold, and the 400 for one that breaks the rules.

One TypedDict per body (pydantic checks it, strictly: no extra fields, no strings for numbers,
no booleans for counts), and `ALLOWED`, what to say is allowed for each field in a 400. A fault
body's fields are the keywords of the `FaultPlan` method that queues it (`FAULTS`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, StrictBool, TypeAdapter, ValidationError, with_config
from typing_extensions import Required, TypedDict

from aigateway.testing._faults import FaultPlan
from aigateway.testing._ratelimits import PRESETS
from aigateway.testing._routes import INVALID, RequestContext
from aigateway.testing._wire import MockResponse, error_response
from aigateway.types._validation import violations

__all__ = [
    "ALLOWED",
    "FAULTS",
    "ClockChange",
    "CreditsChange",
    "NewAccount",
    "PacingChange",
    "QuotaChange",
    "RateLimitsChange",
    "ReplyScript",
    "bad_request",
    "body_of",
    "checked",
]

_FORBID = ConfigDict(extra="forbid")
Count = Annotated[int, Field(strict=True, ge=1, le=1_000_000)]
Seconds = Annotated[float, Field(strict=True, ge=0, le=3_600, allow_inf_nan=False)]
PacingSeconds = Annotated[float, Field(strict=True, ge=0, le=60, allow_inf_nan=False)]
Credits = Annotated[float, Field(strict=True, ge=0, le=1e12, allow_inf_nan=False)]
Text = Annotated[str, Field(min_length=1, max_length=1_000)]
FaultPath = Annotated[str, Field(pattern=r"^/\S*$", max_length=200)]
Key = Annotated[str, Field(pattern=r"^[A-Za-z0-9._~+/=-]+$", max_length=200)]


@with_config(_FORBID)
class FailFault(TypedDict, total=False):
    kind: Required[Literal["fail"]]
    status: Annotated[int, Field(strict=True, ge=400, le=599)]
    retry_after: Seconds
    rate_limit_headers: StrictBool
    code: Text
    message: Text
    times: Count
    path: FaultPath


@with_config(_FORBID)
class DropFault(TypedDict, total=False):
    kind: Required[Literal["drop"]]
    after_processing: StrictBool
    times: Count
    path: FaultPath


@with_config(_FORBID)
class DropMidStreamFault(TypedDict, total=False):
    kind: Required[Literal["drop_mid_stream"]]
    after_events: Annotated[int, Field(strict=True, ge=0, le=100_000)]
    times: Count
    path: FaultPath


@with_config(_FORBID)
class TruncateFault(TypedDict, total=False):
    kind: Required[Literal["truncate"]]
    times: Count
    path: FaultPath


@with_config(_FORBID)
class MalformedFault(TypedDict, total=False):
    kind: Required[Literal["malformed"]]
    body: Annotated[str, Field(max_length=65_536)]
    status: Annotated[int, Field(strict=True, ge=100, le=599)]
    content_type: Text
    times: Count
    path: FaultPath


@with_config(_FORBID)
class MalformedChunkFault(TypedDict, total=False):
    kind: Required[Literal["malformed_chunk"]]
    data: Annotated[str, Field(max_length=65_536)]
    after_events: Annotated[int, Field(strict=True, ge=0, le=100_000)]
    times: Count
    path: FaultPath


@with_config(_FORBID)
class LatencyFault(TypedDict, total=False):
    kind: Required[Literal["latency"]]
    seconds: Required[Seconds]
    between_chunks: StrictBool
    times: Count | None
    path: FaultPath


def queue_malformed(plan: FaultPlan, body: str | None = None, **fields: Any) -> None:
    if body is not None:
        fields["body"] = body.encode("utf-8")
    plan.malformed(**fields)


def queue_malformed_chunk(plan: FaultPlan, data: str | None = None, **fields: Any) -> None:
    if data is not None:
        fields["data"] = data.encode("utf-8")
    plan.malformed_chunk(**fields)


FAULTS: dict[str, tuple[type, Callable[..., None]]] = {
    "fail": (FailFault, FaultPlan.fail),
    "drop": (DropFault, FaultPlan.drop),
    "drop_mid_stream": (DropMidStreamFault, FaultPlan.drop_mid_stream),
    "truncate": (TruncateFault, FaultPlan.truncate),
    "malformed": (MalformedFault, queue_malformed),
    "malformed_chunk": (MalformedChunkFault, queue_malformed_chunk),
    "latency": (LatencyFault, FaultPlan.latency),
}
"""Each kind of fault: the shape of its body and the `FaultPlan` method that queues it (the
body's fields are the method's keywords)."""


@with_config(_FORBID)
class PacingChange(TypedDict, total=False):
    time_to_first_token: PacingSeconds
    token_delay: PacingSeconds


@with_config(_FORBID)
class ClockChange(TypedDict, total=False):
    advance: Annotated[float, Field(strict=True, ge=0, le=3.2e9, allow_inf_nan=False)]
    set: Annotated[float, Field(strict=True, ge=0, le=1e11, allow_inf_nan=False)]


@with_config(_FORBID)
class NewAccount(TypedDict, total=False):
    credits: Credits
    key: Key


@with_config(_FORBID)
class CreditsChange(TypedDict):
    credits: Credits


Amount = Annotated[int, Field(strict=True, ge=0, le=2**40)]


@with_config(_FORBID)
class QuotaChange(TypedDict, total=False):
    files: Amount
    storage_bytes: Amount
    databases: Amount
    database_bytes: Amount


@with_config(_FORBID)
class RateLimitsChange(TypedDict, total=False):
    preset: Required[str]
    key: Key


@with_config(_FORBID)
class ReplyScript(TypedDict, total=False):
    content: Annotated[str, Field(max_length=1_000_000)] | None
    tool_calls: Annotated[list[dict[str, Any]], Field(max_length=128)]
    finish_reason: Annotated[str, Field(min_length=1, max_length=64)]


ALLOWED: Mapping[str, str] = {
    "kind": ", ".join(FAULTS),
    "times": "an integer from 1 to 1000000 (latency: also null, every request until cleared)",
    "path": "a path relative to /v1 such as '/chat/completions' (or the full '/v1/...')",
    "status": "an HTTP status: from 400 to 599 for 'fail', 100 to 599 for 'malformed'",
    "retry_after": "seconds from 0 to 3600",
    "seconds": "seconds from 0 to 3600",
    "after_events": "an integer from 0 to 100000",
    "time_to_first_token": "seconds from 0 to 60",
    "token_delay": "seconds from 0 to 60",
    "advance": "seconds to move forward, >= 0",
    "set": "a Unix time in seconds, >= 0",
    "credits": "a number of credits >= 0",
    "key": "an API key: letters, digits and ._~+/=- (at most 200)",
    "preset": ", ".join(PRESETS),
    "files": "an integer from 0 to 2**40",
    "storage_bytes": "an integer from 0 to 2**40",
    "databases": "an integer from 0 to 2**40",
    "database_bytes": "an integer from 0 to 2**40",
    "content": "a string or null",
    "tool_calls": 'a list of {"name": ..., "arguments": {...}} or wire-form tool calls',
    "finish_reason": "a string such as stop, length, tool_calls or content_filter",
}

_ADAPTERS: dict[type, TypeAdapter[Any]] = {}


def _adapter(shape: type) -> TypeAdapter[Any]:
    found = _ADAPTERS.get(shape)
    if found is None:
        found = _ADAPTERS[shape] = TypeAdapter(shape)
    return found


def bad_request(message: str, param: str | None, code: str = "invalid_parameter") -> MockResponse:
    return error_response(400, message, INVALID, code, param=param)


def checked(body: object, shape: type) -> dict[str, Any] | MockResponse:
    """``body`` validated against the TypedDict ``shape``, or the 400 naming the field."""
    try:
        valid: dict[str, Any] = _adapter(shape).validate_python(body)
    except ValidationError as exc:
        found = violations(exc, body, ALLOWED)
        known = ", ".join(shape.__annotations__)
        message = "; ".join(
            f"{v}; allowed fields: {known}" if v.problem.startswith("Extra inputs") else str(v)
            for v in found
        )
        return bad_request(message, found[0].field if found else None)
    return valid


def body_of(ctx: RequestContext, shape: type) -> dict[str, Any] | MockResponse:
    body = ctx.json_object()
    return body if isinstance(body, MockResponse) else checked(body, shape)
