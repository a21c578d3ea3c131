"""The opt-in credit budget (``max_credits=``, ``with_budget``): a call is refused before it
is sent once the usage ledger says the budget is spent."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from aigateway.errors import BudgetExceededError, ConfigurationError

if TYPE_CHECKING:
    from aigateway._pipeline.ledger import UsageLedger

__all__ = ["CreditBudget"]


class CreditBudget:
    """At most ``max_credits`` spent from when the budget was set: a call is refused before
    sending once the ledger says so. Calls in flight when it runs out may still finish, so
    the spend can pass the budget by the cost of those calls at most."""

    def __init__(self, max_credits: float, ledger: UsageLedger) -> None:
        if (
            isinstance(max_credits, bool)
            or not isinstance(max_credits, (int, float))
            or not max_credits > 0
        ):
            raise ConfigurationError(f"max_credits must be a number > 0, got {max_credits!r}")
        self.max_credits = float(max_credits)
        self._ledger = ledger
        self._start = ledger.exact_credits
        self._lock = threading.Lock()
        self.in_flight = 0

    @property
    def spent(self) -> float:
        """Credits spent since the budget was set."""
        return float(self._ledger.exact_credits - self._start)

    def reserve(self) -> None:
        """Take a place for a call, or raise `BudgetExceededError` (nothing is sent)."""
        with self._lock:
            spent = self.spent
            if spent >= self.max_credits:
                error = BudgetExceededError(
                    f"the credit budget of {self.max_credits:g} is spent ({spent:g} credits "
                    f"used, {self.in_flight} calls in flight); the call was not sent"
                )
                error.max_credits, error.spent = self.max_credits, spent
                raise error
            self.in_flight += 1

    def release(self) -> None:
        """The call's reply (or error) is in."""
        with self._lock:
            self.in_flight -= 1
