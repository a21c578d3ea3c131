"""One client's view of the shared state in Redis: the request path's `SharedState`,
implemented with the commands its flow yields and the sub-flows (budget around a call,
idempotency key of an act) that `aigateway._pipeline.flow.Pipeline` runs.

Nothing here does I/O: a `SharedCall` is performed by the driver (``perform`` blocking,
``aperform`` awaited), like the other commands of `aigateway._call.commands`.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from aigateway._call.commands import Flow, Sleep
from aigateway._pipeline.request import new_idempotency_key
from aigateway.errors import APIError, BudgetExceededError

if TYPE_CHECKING:
    from aigateway._call.call import APICall
    from aigateway._pipeline.credit_budget import CreditBudget
    from aigateway._pipeline.flow import Pipeline
    from aigateway._pipeline.ledger import UsageLedger
    from aigateway._pipeline.limits import RateLimit, RateLimiter
    from aigateway.errors import RateLimitInfo
    from aigateway.integrations.redis.state import RedisState

__all__ = ["SharedBinding", "SharedCall", "usage_of"]

_WINDOWS = (1.0, 60.0, 3_600.0, 86_400.0)
"""Window lengths a learnt reset delay is rounded up to (the gateway's are whole units)."""
_MARGIN = 0.5
"""Seconds at the end of a window left unused, so no request sent then is counted by the
gateway in the next window (see the ``RATE_RESERVE`` script)."""
PROBE_WAIT = 0.05
"""Seconds between asks while the first call under a shared budget learns what a call costs."""
PROBE_TTL_MS = 30_000
"""How long that first call keeps the others waiting at most (should its process die)."""


class SharedCall:
    """Run a script in the shared state; answer its parsed result, or ``local()`` when Redis
    cannot be reached and the state fails open (a command for a driver)."""

    __slots__ = ("args", "before_send", "keys", "local", "parse", "script", "state")

    def __init__(
        self,
        state: RedisState,
        script: str,
        keys: Sequence[str],
        args: Sequence[object],
        *,
        parse: Callable[[Any], Any] = lambda raw: raw,
        local: Callable[[], Any] = lambda: None,
        before_send: bool = True,
    ) -> None:
        self.state, self.script, self.keys, self.args = state, script, keys, args
        self.parse, self.local, self.before_send = parse, local, before_send

    def perform(self) -> Any:
        return self.state._run(self)

    async def aperform(self) -> Any:
        return await self.state._arun(self)


class SharedBinding:
    """A client's keys in the shared state and the commands its calls need (the request
    path's `aigateway._pipeline.state.SharedState`)."""

    def __init__(
        self,
        state: RedisState,
        api_key: str,
        *,
        rate_limit: RateLimit | None,
        limiter: RateLimiter | None,
    ) -> None:
        self.state = state
        self.prefix = state.prefix(api_key)
        self.rate_limit = rate_limit
        self.limiter = limiter
        """The local limiter: used when waiting is on, and the fallback when Redis is not."""
        self._ttl = str(int(state.ttl * 1000))

    # Rate limit

    def slot_wait(self, now: float) -> SharedCall:
        """Count a request in the shared window; answers the seconds to wait first."""
        cap = self.rate_limit
        limiter = self.limiter
        return SharedCall(
            self.state,
            "RATE_RESERVE",
            [f"{self.prefix}:rate"],
            [
                now,
                self._ttl,
                cap.requests if cap else 0,
                cap.window if cap else 0,
                _MARGIN,
                cap.tokens if cap and cap.tokens else 0,
            ],
            parse=float,
            local=lambda: limiter.reserve(now) if limiter is not None else 0.0,
        )

    def observe(self, info: RateLimitInfo, now: float) -> Flow[None]:
        """Tell everyone the gateway's rate-limit values of a reply (when waiting is on)."""
        wait = info.seconds_until_reset(now)
        if self.limiter is None or info.limit is None or info.remaining is None:
            return
        if wait is None or wait <= 0:
            return
        window = next((length for length in _WINDOWS if length >= wait), math.ceil(wait))
        args = [info.limit, info.remaining, repr(now + wait), repr(window), repr(now), self._ttl]
        args += ["" if n is None else n for n in (info.limit_tokens, info.remaining_tokens)]
        yield SharedCall(
            self.state, "RATE_OBSERVE", [f"{self.prefix}:rate"], args, before_send=False
        )

    def for_key(self, api_key: str, limiter: RateLimiter | None) -> SharedBinding:
        """The same shared state, for a client on ``api_key`` with ``limiter``."""
        return SharedBinding(self.state, api_key, rate_limit=self.rate_limit, limiter=limiter)

    async def aclose(self) -> None:
        """Close this event loop's connections to Redis (an `AsyncClient` closing)."""
        await self.state._aclose()

    # A whole call

    def run(
        self,
        pipeline: Pipeline,
        call: APICall[Any],
        attempts: Callable[[APICall[Any]], Flow[Any]],
        budget: CreditBudget | None,
    ) -> Flow[Any]:
        """A call (``attempts(call)``: its attempts, with its fallback models if any) under
        the shared budget, with a shared idempotency key when it is an act."""
        act = (
            call.side_effect
            and pipeline.config.auto_idempotency_keys
            and not call.options.get("idempotency_key")
        )
        act_key = claimed = ""
        if act:
            act_key = self._act_key(call)
            fresh = new_idempotency_key()
            claimed = yield SharedCall(
                self.state, "ACT_CLAIM", [act_key], [fresh, self._ttl], local=lambda: fresh
            )
            call = replace(call, options={**call.options, "idempotency_key": claimed})
        result = yield from self.budgeted(budget, pipeline.state.ledger, attempts(call))
        tokens = _total_tokens(result)
        if tokens and self.limiter is not None:  # a reply's headers tell the tokens before it
            yield SharedCall(
                self.state,
                "RATE_TOKENS",
                [f"{self.prefix}:rate"],
                [tokens, repr(pipeline.retry.now())],
                before_send=False,
            )
        if act:  # performed: a later identical act is a new one
            yield SharedCall(self.state, "ACT_DONE", [act_key], [claimed], before_send=False)
        return result

    def _act_key(self, call: APICall[Any]) -> str:
        digest = hashlib.sha256()
        extra = json.dumps(call.options.get("extra_body"), sort_keys=True, default=str)
        for part in (call.method, call.path, extra):
            digest.update(part.encode() + b"\0")
        digest.update(call.body or b"")
        return f"{self.prefix}:act:{digest.hexdigest()}"

    # Credit budget and usage

    def budgeted(
        self, budget: CreditBudget | None, ledger: UsageLedger, flow: Flow[Any]
    ) -> Flow[Any]:
        """Run ``flow`` (a whole call) under the shared budget; book what it cost for all."""
        estimate = 0.0
        if budget is not None:
            reserved = yield self._reserve(budget.max_credits)
            while reserved is None:  # no cost known yet, and another call is out learning it
                yield Sleep(PROBE_WAIT)
                reserved = yield self._reserve(budget.max_credits)
            estimate = reserved
        try:
            result = yield from flow
        except APIError:
            yield self._settle(budget, estimate, ledger)
            raise
        yield self._settle(budget, estimate, ledger)
        return result

    def _budget_key(self, max_credits: float) -> str:
        return f"{self.prefix}:budget:{max_credits:g}"

    def _reserve(self, max_credits: float) -> SharedCall:
        def parse(raw: Sequence[str]) -> float | None:
            if raw[0] == "1":
                return float(raw[1])
            if raw[0] == "2":
                return None
            spent = float(raw[1])
            error = BudgetExceededError(
                f"the shared credit budget of {max_credits:g} is spent ({spent:g} credits used "
                "by every process on this key); the call was not sent"
            )
            error.max_credits, error.spent = max_credits, spent
            raise error

        key = self._budget_key(max_credits)
        return SharedCall(
            self.state,
            "BUDGET_RESERVE",
            [key, f"{key}:probe"],
            [repr(max_credits), self._ttl, PROBE_TTL_MS],
            parse=parse,
            local=lambda: 0.0,
        )

    def _settle(self, budget: CreditBudget | None, estimate: float, ledger: UsageLedger) -> Any:
        ended = ledger.drain()
        args: list[object] = [repr(estimate), self._ttl, "1" if budget is not None else "0"]
        for entry in ended:
            args.extend("" if value is None else value for value in entry)
        usage = f"{self.prefix}:usage"
        budget_key = self._budget_key(budget.max_credits) if budget is not None else usage
        keys = [usage, budget_key, f"{budget_key}:probe" if budget is not None else usage]
        return SharedCall(self.state, "SETTLE", keys, args, parse=float, before_send=False)


def _total_tokens(result: object) -> int:
    """The tokens a whole reply used (0 for a stream, whose usage comes at its end)."""
    usage = getattr(result, "usage", None)
    total = getattr(usage, "total_tokens", None)
    return total if isinstance(total, int) else 0


def usage_of(raw: dict[str, str]) -> dict[str, Any]:
    """The usage hash as ``{"total": {...}, "models": {model: {...}}}``."""
    fields = ("requests", "prompt_tokens", "completion_tokens", "credits", "failures", "uncounted")

    def entry(prefix: str) -> dict[str, Any]:
        return {
            name: (float if name == "credits" else int)(raw.get(prefix + name, 0))
            for name in fields
        }

    models = sorted(
        {name[len("model:") :].rsplit(":", 1)[0] for name in raw if name.startswith("model:")}
    )
    return {"total": entry(""), "models": {model: entry(f"model:{model}:") for model in models}}
