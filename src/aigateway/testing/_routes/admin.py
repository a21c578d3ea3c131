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
controls, not traffic: `MockGateway.handle` answers them before faults, rate limits and the
request log (`is_admin_path`), and nothing here bills.
"""

from __future__ import annotations

import dataclasses
import hmac
from typing import TYPE_CHECKING, Any

from aigateway.testing._accounts import FREE_TIER_CREDITS, Account
from aigateway.testing._admin_bodies import (
    ALLOWED,
    FAULTS,
    ClockChange,
    CreditsChange,
    NewAccount,
    PacingChange,
    QuotaChange,
    RateLimitsChange,
    ReplyScript,
    bad_request,
    body_of,
    checked,
)
from aigateway.testing._engine import ScriptedReply
from aigateway.testing._faults import DeliveryFault
from aigateway.testing._ratelimits import resolve_limits
from aigateway.testing._request_log import LOG_SIZE, RequestLog
from aigateway.testing._routes import INVALID, Handler, RequestContext
from aigateway.testing._wire import MockResponse, error_response, json_response

if TYPE_CHECKING:
    from aigateway.testing._gateway import MockGateway

__all__ = ["ADMIN_PREFIX", "add_admin_routes", "is_admin_path"]

ADMIN_PREFIX = "/_mock/"
"""Where the admin API lives; paths under it are reserved for it."""
MAX_PENDING_FAULTS = 1_000
MAX_ACCOUNTS = 10_000


def is_admin_path(path: str) -> bool:
    """True for a request to the admin API."""
    return path.startswith(ADMIN_PREFIX)


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

    def __init__(self, gateway: MockGateway, log: RequestLog) -> None:
        self.gateway = gateway
        self.log = log

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
        token = self.gateway.admin_token
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
        return _list([_fault(fault) for fault in self.gateway.faults.pending])

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
        plan = self.gateway.faults
        if len(plan.pending) >= MAX_PENDING_FAULTS:
            return _conflict(
                f"{MAX_PENDING_FAULTS} faults are pending already; DELETE /_mock/faults clears them",
                "too_many_faults",
            )
        del fields["kind"]
        queue(plan, **fields)
        return _list([_fault(fault) for fault in plan.pending], 201)

    def clear_faults(self, ctx: RequestContext) -> MockResponse:
        self.gateway.faults.clear()
        return _list([])

    # pacing and clock

    def pacing(self, ctx: RequestContext) -> MockResponse:
        pacing = self.gateway.stream_pacing
        return json_response(
            200,
            {"time_to_first_token": pacing.time_to_first_token, "token_delay": pacing.token_delay},
        )

    def set_pacing(self, ctx: RequestContext) -> MockResponse:
        change = body_of(ctx, PacingChange)
        if isinstance(change, MockResponse):
            return change
        self.gateway.stream_pacing = dataclasses.replace(self.gateway.stream_pacing, **change)
        return self.pacing(ctx)

    def clock(self, ctx: RequestContext) -> MockResponse:
        return json_response(200, {"now": self.gateway.clock.now()})

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
            self.gateway.clock.advance(change["advance"])
        else:
            self.gateway.clock.set(change["set"])
        return self.clock(ctx)

    # accounts and limits

    def accounts(self, ctx: RequestContext) -> MockResponse:
        return _list([_account(account) for account in self.gateway.ledger.accounts])

    def create_account(self, ctx: RequestContext) -> MockResponse:
        fields = body_of(ctx, NewAccount)
        if isinstance(fields, MockResponse):
            return fields
        ledger = self.gateway.ledger
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
        ledger = self.gateway.ledger
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
        account = self.gateway.ledger.account(key)
        if account is None:
            return _not_found("no account has this key")
        if rest == "quota":
            quotas = self.gateway.quotas
            quotas.set(quotas.of(account).changed(**change), account)
            return self.account_quota(key)
        self.gateway.ledger.set_credits(key, change["credits"])
        return json_response(200, _account(account))

    # quotas

    def account_quota(self, key: str) -> MockResponse:
        gateway = self.gateway
        account = gateway.ledger.account(key)
        assert account is not None
        files, stored = gateway.files.usage(account.id)
        usage = {
            "files": files,
            "storage_bytes": stored,
            "databases": gateway.stores.databases_of(account.id),
        }
        view = {
            "quota": dataclasses.asdict(gateway.quotas.of(account)),
            "own": gateway.quotas.own(account),
            "usage": usage,
        }
        return json_response(200, view)

    def default_quota(self, ctx: RequestContext) -> MockResponse:
        return json_response(200, dataclasses.asdict(self.gateway.quotas.default))

    def set_default_quota(self, ctx: RequestContext) -> MockResponse:
        change = body_of(ctx, QuotaChange)
        if isinstance(change, MockResponse):
            return change
        quotas = self.gateway.quotas
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
        if key is not None and self.gateway.ledger.account(key) is None:
            return _not_found("no account has this key", "key")
        self.gateway.rate_limits.set(limits, key)
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
        self.gateway.replies.enqueue(reply)
        return json_response(201, _reply(reply))

    def requests(self, ctx: RequestContext) -> MockResponse:
        raw = ctx.request.params.get("limit", "50")
        limit = int(raw) if raw.isdigit() and len(raw) < 6 else 0
        if not 1 <= limit <= LOG_SIZE:
            return bad_request(
                f"limit={raw[:20]!r}: allowed: an integer from 1 to {LOG_SIZE}", "limit"
            )
        return _list([dataclasses.asdict(entry) for entry in self.log.latest(limit)])


def add_admin_routes(gateway: MockGateway, log: RequestLog) -> None:
    """Register the admin API of ``gateway`` (each route refused without its admin token);
    ``log`` is where `MockGateway.handle` records the requests it answers."""
    api = _AdminAPI(gateway, log)
    for method, name, handler in api.routes():
        gateway.add_route(method, ADMIN_PREFIX + name, api.guarded(handler))
    gateway.add_route("GET", ADMIN_PREFIX + "accounts/", api.guarded(api.account), prefix=True)
    gateway.add_route(
        "PUT", ADMIN_PREFIX + "accounts/", api.guarded(api.change_account), prefix=True
    )
