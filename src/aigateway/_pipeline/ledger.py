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
from typing import TYPE_CHECKING, Any, TypeGuard

if TYPE_CHECKING:
    from aigateway.errors import APIError

__all__ = ["ModelUsage", "UsageLedger", "credit_amount"]

_UNKNOWN_MODEL = "(unknown)"
_FOLD_AT = 1024
"""Recorded calls kept at most before they are added to the counts (`UsageLedger._fold`)."""

_Ended = tuple[str, object, object, int, int, str]
"""A call that ended: model, stated cost, balance, prompt and completion tokens, error class
('' for a reply), the raw values of the reply (amounts are read when added to the counts)."""


def _is_amount(value: object) -> TypeGuard[int | float]:
    """Whether ``value`` is a finite number (not a bool): an amount `credit_amount` can read."""
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, int) and not isinstance(value, bool)


def credit_amount(value: object) -> Decimal | None:
    """A credits value of a reply as the decimal the gateway wrote (``0.1`` is exactly
    ``Decimal("0.1")``: floats through their shortest repr); None when it is no finite number."""
    return Decimal(repr(value)) if _is_amount(value) else None


def _below(amount: int | float, other: int | float) -> bool:
    """``credit_amount(amount) < credit_amount(other)``, without reading either as a decimal
    when both are floats or both ints (the shortest repr keeps the order of floats)."""
    if type(amount) is type(other):
        return amount < other
    return Decimal(repr(amount)) < Decimal(repr(other))


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

    It pickles as a snapshot of the counts (a worker process can send its usage back).

    Recording a call only appends its raw values to a list; they are added to the counts, in
    the order they arrived (so each reply is compared with the lowest balance seen before it,
    as if counted at once), when anything reads the ledger or the list holds `_FOLD_AT`
    calls. Reading decimals and summing them is most of a reply's book-keeping, and most
    replies are never read one by one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._unfolded: list[_Ended] = []
        """Calls recorded and not yet added to the counts, in arrival order."""
        self._models: dict[str, ModelUsage] = {}
        self._credits: dict[str, Decimal] = {}
        self._lowest_balance: int | float | None = None
        """The lowest balance a reply stated, as it stated it."""
        self._spent = Decimal(0)
        self.pending: list[_Ended] | None = None
        """With a shared state: the calls that ended since it was last told (`drain`)."""

    def drain(self) -> list[_Ended]:
        """The calls that ended since the last drain: model, stated cost, balance, prompt and
        completion tokens, error class ('' for a reply)."""
        with self._lock:
            ended, self.pending = self.pending or [], []
            return ended

    @property
    def credits(self) -> float:
        """Credits spent by every model so far (the float nearest `exact_credits`)."""
        with self._lock:
            self._fold()
            return float(self._spent)

    @property
    def exact_credits(self) -> Decimal:
        """Credits spent by every model so far, exactly: the sum, as a `Decimal`, of the
        amounts the gateway wrote (to the last digit it gave)."""
        with self._lock:
            self._fold()
            return self._spent

    def record_reply(self, reply: object) -> None:
        """Count a reply (a completion, a run result, the last chunk of a stream)."""
        model = getattr(reply, "model", None)
        if not isinstance(model, str):
            return
        usage = getattr(reply, "usage", None)
        prompt = getattr(usage, "prompt_tokens", None)
        completion = getattr(usage, "completion_tokens", None)
        self._record(
            (
                model,
                _field(usage, "credits"),
                getattr(reply, "remaining_credits", None),
                prompt if isinstance(prompt, int) else 0,
                completion if isinstance(completion, int) else 0,
                "",
            )
        )

    def record_failure(self, model: str | None, error: APIError) -> None:
        """Count a call for ``model`` that ended in ``error``."""
        self._record((model or _UNKNOWN_MODEL, None, None, 0, 0, type(error).__name__))

    def _record(self, ended: _Ended) -> None:
        """Keep a call that ended, to be added to the counts later (`_fold`)."""
        with self._lock:
            self._unfolded.append(ended)
            if self.pending is not None:
                self.pending.append(ended)
            if len(self._unfolded) >= _FOLD_AT:
                self._fold()

    def _fold(self) -> None:
        """Add the calls recorded since the last fold to the counts, in the order they
        arrived (the caller holds the lock).

        Consecutive replies of one model that state no cost and each bring the lowest balance
        down cost, together, the fall from the lowest balance before the first to the last
        one's: the sum of their falls, read as two decimals rather than two per reply."""
        if not self._unfolded:
            return
        ended, self._unfolded = self._unfolded, []
        lowest = self._lowest_balance
        charged: dict[str, Decimal] = {}
        run_model: str | None = None  # the model of the current run of falls
        run_from: int | float = 0  # the lowest balance before that run

        def end_run() -> None:
            if run_model is not None and lowest is not None:
                charged[run_model] = charged.get(run_model, Decimal(0)) + (
                    Decimal(repr(run_from)) - Decimal(repr(lowest))
                )

        for model, stated, balance, prompt, completion, error in ended:
            entry = self._models.get(model) or self._models.setdefault(model, ModelUsage())
            entry.requests += 1
            if error:
                entry.failures[error] = entry.failures.get(error, 0) + 1
                continue
            entry.prompt_tokens += prompt
            entry.completion_tokens += completion
            if _is_amount(stated):
                end_run()
                run_model = None
                charged[model] = charged.get(model, Decimal(0)) + Decimal(repr(stated))
                if _is_amount(balance) and (lowest is None or _below(balance, lowest)):
                    lowest = balance
            elif not _is_amount(balance) or lowest is None:
                entry.uncounted += 1  # no cost stated and no earlier balance to compare with
                if _is_amount(balance):
                    lowest = balance
            elif _below(balance, lowest):
                if model != run_model:
                    end_run()
                    run_model, run_from = model, lowest
                lowest = balance
            # else: the balance did not fall below the lowest: no cost seen
        end_run()
        self._lowest_balance = lowest
        for model, charge in charged.items():
            self._spent += charge
            spent = self._credits.get(model, Decimal(0)) + charge
            self._credits[model] = spent
            self._models[model].credits = float(spent)

    def _copies(self) -> dict[str, ModelUsage]:
        """A copy of each model's usage, folded first (the caller holds the lock)."""
        self._fold()
        return {name: usage._copy() for name, usage in self._models.items()}

    def _snapshot(self) -> tuple[dict[str, ModelUsage], ModelUsage]:
        """Copies of the usage of each model, and the total, read at one instant."""
        with self._lock:
            models = self._copies()  # folds first
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
            self._fold()  # before the counts are read
            state = {
                **self.__dict__,
                "_models": self._copies(),
                "_unfolded": [],
                "_credits": dict(self._credits),
                "pending": None if self.pending is None else list(self.pending),
            }
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update({"_unfolded": [], **state})
        self._lock = threading.Lock()
