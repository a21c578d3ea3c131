"""The mock's admin API: drive a gateway over HTTP, from a test in any language.

Under ``/_mock/`` at the site root (not under ``/v1``), each request carrying the gateway's
admin token as ``Authorization: Bearer <gateway.admin_token>``; JSON in and out::

    GET    /_mock/faults                   the faults not used up yet
    POST   /_mock/faults                   queue one: {"kind": "fail", "status": 503, "times": 2}
    DELETE /_mock/faults                   clear them
    GET    /_mock/pacing                   how fast streams flow
    PUT    /_mock/pacing                   {"time_to_first_token": 0.2, "token_delay": 0.01}
    GET    /_mock/clock                    {"now": <Unix seconds>}
    POST   /_mock/clock                    {"advance": 60} or {"set": 1700000000}
    GET    /_mock/accounts                 every account
    POST   /_mock/accounts                 a new one: {"credits": 5} -> {"id", "key", "credits"}
    GET    /_mock/accounts/{key}           one account
    PUT    /_mock/accounts/{key}/credits   {"credits": 3}
    GET    /_mock/accounts/{key}/quota     its quota and what it uses of it
    PUT    /_mock/accounts/{key}/quota     {"files": 10} (the fields sent change, the rest stay)
    GET    /_mock/quota                    the default quota of accounts without their own
    PUT    /_mock/quota                    {"storage_bytes": 1048576} (the same, for it)
    PUT    /_mock/rate-limits              {"preset": "free_plan", "key": "..."} (no key: all)
    POST   /_mock/replies                  script the next chat reply (``enqueue_reply``)
    GET    /_mock/requests?limit=50        the latest requests: method, path, status, id, time,
                                           unknown chat body fields

No token is a 401, another token a 403 (compared in constant time); a body that breaks the
rules is a 400 naming the field and what is allowed. Admin requests are the mock's own
controls, not traffic: the gateway answers them before faults, rate limits and the request
log (`aigateway.testing._core.state.is_admin_path`), and nothing here bills.

A body holds what its TypedDict says (pydantic checks it, strictly: no extra fields, no strings
for numbers, no booleans for counts), and a 400 says what is allowed for each field
(`ALLOWED`). A fault body's fields are the keywords of the `FaultPlan` method that queues it
(`FAULTS`).
"""

from __future__ import annotations

import dataclasses
import hmac
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import ConfigDict, Field, StrictBool, TypeAdapter, ValidationError, with_config
from typing_extensions import Required, TypedDict

from aigateway.testing._core.accounts import FREE_TIER_CREDITS, Account
from aigateway.testing._core.context import Handler, RequestContext
from aigateway.testing._core.faults import DeliveryFault, FaultPlan
from aigateway.testing._core.rate_limits import PRESETS, resolve_limits
from aigateway.testing._core.request_log import LOG_SIZE
from aigateway.testing._core.state import ADMIN_PREFIX
from aigateway.testing._core.wire import INVALID, MockResponse, error_response, json_response
from aigateway.testing._model.engine import ScriptedReply
from aigateway.types._validation import violations

if TYPE_CHECKING:
    from aigateway.testing._core.state import GatewayState

__all__ = ["ALLOWED", "FAULTS", "add_admin_routes"]

MAX_PENDING_FAULTS = 1_000
MAX_ACCOUNTS = 10_000


# -- the bodies ----------------------------------------------------------------------------


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


# -- views ---------------------------------------------------------------------------------


def _account(account: Account) -> dict[str, Any]:
    return {"id": account.id, "key": account.key, "credits": account.credits}


def _fault(fault: DeliveryFault) -> dict[str, Any]:
    """A queued fault in the words of ``POST /_mock/faults``."""
    kind = {"drop_after": "drop", "chunk_latency": "latency"}.get(fault.kind, fault.kind)
    view: dict[str, Any] = {"kind": kind, "times": fault.times, "path": fault.path}
    if kind == "fail":
        view["status"] = fault.status
    elif kind == "drop":
        view["after_processing"] = fault.kind == "drop_after"
    elif kind in ("drop_mid_stream", "malformed_chunk"):
        view["after_events"] = fault.after_events
    elif kind == "malformed":
        view.update(status=fault.status, content_type=fault.content_type)
    elif kind == "latency":
        view.update(seconds=fault.seconds, between_chunks=fault.kind == "chunk_latency")
    return view


def _reply(reply: ScriptedReply) -> dict[str, Any]:
    calls = [{"id": i, "name": name, "arguments": args} for i, name, args in reply.tool_calls]
    return {"content": reply.content, "tool_calls": calls, "finish_reason": reply.finish_reason}


def _list(items: list[dict[str, Any]], status: int = 200) -> MockResponse:
    return json_response(status, {"object": "list", "data": items})


def _not_found(what: str, param: str | None = None) -> MockResponse:
    return error_response(404, what, INVALID, "not_found", param=param)


def _conflict(message: str, code: str) -> MockResponse:
    return error_response(409, message, INVALID, code)


# -- the routes ----------------------------------------------------------------------------


class _AdminAPI:
    """The admin routes of one gateway."""

    def __init__(self, state: GatewayState) -> None:
        self.state = state

    def routes(self) -> list[tuple[str, str, Handler]]:
        return [
            ("GET", "faults", self.faults),
            ("POST", "faults", self.add_fault),
            ("DELETE", "faults", self.clear_faults),
            ("GET", "pacing", self.pacing),
            ("PUT", "pacing", self.set_pacing),
            ("GET", "clock", self.clock),
            ("POST", "clock", self.move_clock),
            ("GET", "accounts", self.accounts),
            ("POST", "accounts", self.create_account),
            ("PUT", "rate-limits", self.set_rate_limits),
            ("GET", "quota", self.default_quota),
            ("PUT", "quota", self.set_default_quota),
            ("POST", "replies", self.enqueue_reply),
            ("GET", "requests", self.requests),
        ]

    def allowed(self, ctx: RequestContext) -> MockResponse | None:
        """None when the request carries the admin token; else the 401 or 403."""
        token = self.state.admin_token
        scheme, _, given = ctx.request.headers.get("authorization", "").strip().partition(" ")
        given = given.strip()
        if scheme.lower() != "bearer" or not given:
            return error_response(
                401,
                "the mock's admin API needs the gateway's admin token: send the header "
                "'Authorization: Bearer <admin token>' (MockGateway.admin_token)",
                "authentication_error",
                "missing_admin_token",
                headers={"www-authenticate": "Bearer"},
            )
        if not token or not hmac.compare_digest(given.encode(), token.encode()):
            return error_response(
                403,
                "this is not the gateway's admin token (MockGateway.admin_token)",
                "permission_error",
                "invalid_admin_token",
            )
        return None

    def guarded(self, handler: Handler) -> Handler:
        def answer(ctx: RequestContext) -> MockResponse:
            return self.allowed(ctx) or handler(ctx)

        return answer

    # faults

    def faults(self, ctx: RequestContext) -> MockResponse:
        return _list([_fault(fault) for fault in self.state.faults.pending])

    def add_fault(self, ctx: RequestContext) -> MockResponse:
        body = ctx.json_object()
        if isinstance(body, MockResponse):
            return body
        kind = body.get("kind")
        if not isinstance(kind, str) or kind not in FAULTS:
            shown = "(missing)" if kind is None else repr(kind)[:100]
            return bad_request(
                f"kind={shown}: unknown kind of fault; allowed: {ALLOWED['kind']}", "kind"
            )
        shape, queue = FAULTS[kind]
        fields = checked(body, shape)
        if isinstance(fields, MockResponse):
            return fields
        plan = self.state.faults
        if len(plan.pending) >= MAX_PENDING_FAULTS:
            return _conflict(
                f"{MAX_PENDING_FAULTS} faults are pending already; DELETE /_mock/faults clears them",
                "too_many_faults",
            )
        del fields["kind"]
        queue(plan, **fields)
        return _list([_fault(fault) for fault in plan.pending], 201)

    def clear_faults(self, ctx: RequestContext) -> MockResponse:
        self.state.faults.clear()
        return _list([])

    # pacing and clock

    def pacing(self, ctx: RequestContext) -> MockResponse:
        pacing = self.state.stream_pacing
        return json_response(
            200,
            {"time_to_first_token": pacing.time_to_first_token, "token_delay": pacing.token_delay},
        )

    def set_pacing(self, ctx: RequestContext) -> MockResponse:
        change = body_of(ctx, PacingChange)
        if isinstance(change, MockResponse):
            return change
        self.state.stream_pacing = dataclasses.replace(self.state.stream_pacing, **change)
        return self.pacing(ctx)

    def clock(self, ctx: RequestContext) -> MockResponse:
        return json_response(200, {"now": self.state.clock.now()})

    def move_clock(self, ctx: RequestContext) -> MockResponse:
        change = body_of(ctx, ClockChange)
        if isinstance(change, MockResponse):
            return change
        if len(change) != 1:
            return bad_request(
                "send exactly one of 'advance' (seconds to move the clock forward) or 'set' "
                "(a Unix time to put it at)",
                "advance",
            )
        if "advance" in change:
            self.state.clock.advance(change["advance"])
        else:
            self.state.clock.set(change["set"])
        return self.clock(ctx)

    # accounts and limits

    def accounts(self, ctx: RequestContext) -> MockResponse:
        return _list([_account(account) for account in self.state.ledger.accounts])

    def create_account(self, ctx: RequestContext) -> MockResponse:
        fields = body_of(ctx, NewAccount)
        if isinstance(fields, MockResponse):
            return fields
        ledger = self.state.ledger
        if len(ledger.accounts) >= MAX_ACCOUNTS:
            return _conflict(f"the mock holds at most {MAX_ACCOUNTS} accounts", "too_many_accounts")
        try:
            account = ledger.create_account(
                fields.get("credits", FREE_TIER_CREDITS), key=fields.get("key")
            )
        except ValueError:
            return _conflict("an account with this key exists already", "key_exists")
        return json_response(201, _account(account))

    def account(self, ctx: RequestContext) -> MockResponse:
        ledger = self.state.ledger
        key, _, rest = ctx.argument.rpartition("/")
        found = ledger.account(ctx.argument)
        if found is None and rest == "quota" and ledger.account(key) is not None:
            return self.account_quota(key)
        if found is None:
            return _not_found("no account has this key")
        return json_response(200, _account(found))

    def change_account(self, ctx: RequestContext) -> MockResponse:
        key, slash, rest = ctx.argument.rpartition("/")
        if not slash or rest not in ("credits", "quota"):
            return _not_found(
                f"no route for PUT {ctx.request.path}; try /_mock/accounts/KEY/credits or "
                "/_mock/accounts/KEY/quota"
            )
        change = body_of(ctx, CreditsChange if rest == "credits" else QuotaChange)
        if isinstance(change, MockResponse):
            return change
        account = self.state.ledger.account(key)
        if account is None:
            return _not_found("no account has this key")
        if rest == "quota":
            quotas = self.state.quotas
            quotas.set(quotas.of(account).changed(**change), account)
            return self.account_quota(key)
        self.state.ledger.set_credits(key, change["credits"])
        return json_response(200, _account(account))

    # quotas

    def account_quota(self, key: str) -> MockResponse:
        state = self.state
        account = state.ledger.account(key)
        assert account is not None
        files, stored = state.files.usage(account.id)
        usage = {
            "files": files,
            "storage_bytes": stored,
            "databases": state.stores.databases_of(account.id),
        }
        view = {
            "quota": dataclasses.asdict(state.quotas.of(account)),
            "own": state.quotas.own(account),
            "usage": usage,
        }
        return json_response(200, view)

    def default_quota(self, ctx: RequestContext) -> MockResponse:
        return json_response(200, dataclasses.asdict(self.state.quotas.default))

    def set_default_quota(self, ctx: RequestContext) -> MockResponse:
        change = body_of(ctx, QuotaChange)
        if isinstance(change, MockResponse):
            return change
        quotas = self.state.quotas
        quotas.set(quotas.default.changed(**change))
        return self.default_quota(ctx)

    def set_rate_limits(self, ctx: RequestContext) -> MockResponse:
        change = body_of(ctx, RateLimitsChange)
        if isinstance(change, MockResponse):
            return change
        try:
            limits = resolve_limits(change["preset"])
        except ValueError as exc:
            return bad_request(str(exc), "preset")
        key = change.get("key")
        if key is not None and self.state.ledger.account(key) is None:
            return _not_found("no account has this key", "key")
        self.state.rate_limits.set(limits, key)
        body = {"preset": change["preset"], "key": key, "limits": dataclasses.asdict(limits)}
        return json_response(200, body)

    # replies and the log

    def enqueue_reply(self, ctx: RequestContext) -> MockResponse:
        fields = body_of(ctx, ReplyScript)
        if isinstance(fields, MockResponse):
            return fields
        try:
            reply = ScriptedReply.build(
                fields.get("content"), fields.get("tool_calls"), fields.get("finish_reason")
            )
        except ValueError as exc:
            return bad_request(f"tool_calls: {exc}"[:500], "tool_calls")
        self.state.replies.enqueue(reply)
        return json_response(201, _reply(reply))

    def requests(self, ctx: RequestContext) -> MockResponse:
        raw = ctx.request.params.get("limit", "50")
        limit = int(raw) if raw.isdigit() and len(raw) < 6 else 0
        if not 1 <= limit <= LOG_SIZE:
            return bad_request(
                f"limit={raw[:20]!r}: allowed: an integer from 1 to {LOG_SIZE}", "limit"
            )
        return _list([dataclasses.asdict(entry) for entry in self.state.request_log.latest(limit)])


def add_admin_routes(state: GatewayState) -> None:
    """Register the admin API on ``state``'s router, each route refused without its admin
    token."""
    api = _AdminAPI(state)
    router = state.router
    for method, name, handler in api.routes():
        router.add(method, ADMIN_PREFIX + name, api.guarded(handler))
    router.add("GET", ADMIN_PREFIX + "accounts/", api.guarded(api.account), prefix=True)
    router.add("PUT", ADMIN_PREFIX + "accounts/", api.guarded(api.change_account), prefix=True)
