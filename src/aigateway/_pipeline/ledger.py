"""What calls cost and how they went: the usage ledger (requests, tokens, credits and failures
per model) of a client and its copies.

Credits come from the gateway, never from a local price table. A reply that states its own
cost (``usage.credits`` of a ``/run`` reply) counts that; any other reply counts how far its
``_remaining_credits`` fell below the lowest balance seen before it. Replies of concurrent
calls can arrive out of order, so a cost may be booked on a neighbouring reply, but the total
stays exact from the first balance the client saw. The first reply without a stated cost has
no earlier balance to compare with: it counts in ``requests`` but adds no credits (it is
counted in ``uncounted``). A top-up during the client's life is not seen.

Sums are exact: every amount is read as the decimal the gateway wrote (a float's shortest
repr, as the mock's `to_decimal`) and added as a `Decimal`; the floats shown (``credits``)
are each the float nearest an exact sum, never a sum of floats.
"""

from __future__ import annotations

import math
import threading
from dataclasses import asdict, dataclass, field, replace
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aigateway.errors import APIError

__all__ = ["ModelUsage", "UsageLedger", "credit_amount"]

_UNKNOWN_MODEL = "(unknown)"


def credit_amount(value: object) -> Decimal | None:
    """A credits value of a reply as the decimal the gateway wrote (``0.1`` is exactly
    ``Decimal("0.1")``: floats through their shortest repr); None when it is no finite number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return Decimal(repr(value))


def _field(model: object, name: str) -> Any:
    """``getattr(model, name, None)`` for a reply model's field or extra field, without
    pydantic's slow path for a name the model lacks (an exception raised and caught, about a
    tenth of the client's own work on a reply): a chat ``usage`` has no ``credits``."""
    fields = getattr(model, "__dict__", None)
    if fields is not None and name in fields:
        return fields[name]
    extra = getattr(model, "__pydantic_extra__", None)
    return extra.get(name) if extra else None


@dataclass
class ModelUsage:
    """The usage of one model (or the total): calls that ended, tokens, credits, failures."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    credits: float = 0.0
    """Credits spent: the float nearest the exact sum (`UsageLedger.exact_credits` has it)."""
    uncounted: int = 0
    """Replies whose cost could not be known (the first without a stated cost)."""
    failures: dict[str, int] = field(default_factory=dict)
    """Failed calls by error class name (``NotFoundError``...)."""

    def _add(self, other: ModelUsage) -> None:
        """Add ``other``'s counts (not its credits: floats are never summed)."""
        self.requests += other.requests
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.uncounted += other.uncounted
        for name, count in other.failures.items():
            self.failures[name] = self.failures.get(name, 0) + count

    def _copy(self) -> ModelUsage:
        return replace(self, failures=dict(self.failures))


class UsageLedger:
    """The usage of a client and its copies since it was made; thread- and task-safe.

    It pickles as a snapshot of the counts (a worker process can send its usage back)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._models: dict[str, ModelUsage] = {}
        self._credits: dict[str, Decimal] = {}
        self._lowest_balance: Decimal | None = None
        self._spent = Decimal(0)
        self.pending: list[tuple[str, object, object, int, int, str]] | None = None
        """With a shared state: the calls that ended since it was last told (`drain`)."""

    def drain(self) -> list[tuple[str, object, object, int, int, str]]:
        """The calls that ended since the last drain: model, stated cost, balance, prompt and
        completion tokens, error class ('' for a reply)."""
        with self._lock:
            ended, self.pending = self.pending or [], []
            return ended

    @property
    def credits(self) -> float:
        """Credits spent by every model so far (the float nearest `exact_credits`)."""
        with self._lock:
            return float(self._spent)

    @property
    def exact_credits(self) -> Decimal:
        """Credits spent by every model so far, exactly: the sum, as a `Decimal`, of the
        amounts the gateway wrote (to the last digit it gave)."""
        with self._lock:
            return self._spent

    def record_reply(self, reply: object) -> None:
        """Count a reply (a completion, a run result, the last chunk of a stream)."""
        model = getattr(reply, "model", None)
        if not isinstance(model, str):
            return
        usage = getattr(reply, "usage", None)
        prompt = getattr(usage, "prompt_tokens", None)
        completion = getattr(usage, "completion_tokens", None)
        stated = _field(usage, "credits")
        raw_balance = getattr(reply, "remaining_credits", None)
        charge = credit_amount(stated)
        balance = credit_amount(raw_balance)
        with self._lock:
            if balance is not None:
                lowest = self._lowest_balance
                if charge is None and lowest is not None:
                    charge = max(Decimal(0), lowest - balance)
                if lowest is None or balance < lowest:
                    self._lowest_balance = balance
            entry = self._models.get(model) or self._models.setdefault(model, ModelUsage())
            entry.requests += 1
            prompt = prompt if isinstance(prompt, int) else 0
            completion = completion if isinstance(completion, int) else 0
            entry.prompt_tokens += prompt
            entry.completion_tokens += completion
            if self.pending is not None:
                self.pending.append((model, stated, raw_balance, prompt, completion, ""))
            if charge is None:
                entry.uncounted += 1
            else:
                self._spent += charge
                spent = self._credits.get(model, Decimal(0)) + charge
                self._credits[model] = spent
                entry.credits = float(spent)

    def record_failure(self, model: str | None, error: APIError) -> None:
        """Count a call for ``model`` that ended in ``error``."""
        name = type(error).__name__
        with self._lock:
            entry = self._models.setdefault(model or _UNKNOWN_MODEL, ModelUsage())
            entry.requests += 1
            entry.failures[name] = entry.failures.get(name, 0) + 1
            if self.pending is not None:
                self.pending.append((model or _UNKNOWN_MODEL, None, None, 0, 0, name))

    def _copies(self) -> dict[str, ModelUsage]:
        """A copy of each model's usage (the caller holds the lock)."""
        return {name: usage._copy() for name, usage in self._models.items()}

    def _snapshot(self) -> tuple[dict[str, ModelUsage], ModelUsage]:
        """Copies of the usage of each model, and the total, read at one instant."""
        with self._lock:
            models = self._copies()
            spent = self._spent
        total = ModelUsage(credits=float(spent))
        for usage in models.values():
            total._add(usage)
        return models, total

    def by_model(self) -> dict[str, ModelUsage]:
        """A copy of the usage of each model, in first-use order."""
        return self._snapshot()[0]

    def total(self) -> ModelUsage:
        """The usage of every model together."""
        return self._snapshot()[1]

    def as_dict(self) -> dict[str, Any]:
        """``{"models": {model: {...}}, "total": {...}}``, plain values (JSON-ready)."""
        models, total = self._snapshot()
        return {
            "models": {name: asdict(usage) for name, usage in models.items()},
            "total": asdict(total),
        }

    def table(self) -> str:
        """An aligned text table: a row per model and the total."""
        header = ("model", "requests", "failed", "prompt", "completion", "credits")
        rows = [header]
        models, total = self._snapshot()
        for name, usage in [*models.items(), ("total", total)]:
            rows.append(
                (
                    name,
                    str(usage.requests),
                    str(sum(usage.failures.values())),
                    str(usage.prompt_tokens),
                    str(usage.completion_tokens),
                    f"{usage.credits:.6f}",
                )
            )
        from aigateway._display import text_table

        return text_table(rows, right=range(1, len(header)))

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        total = self.total()
        return f"UsageLedger(requests={total.requests}, credits={total.credits:.6f})"

    def __getstate__(self) -> dict[str, Any]:
        """The counts, copied at one instant; not the lock."""
        with self._lock:
            state = {
                **self.__dict__,
                "_models": self._copies(),
                "_credits": dict(self._credits),
                "pending": None if self.pending is None else list(self.pending),
            }
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
