"""How the mock's replies speak of money: the credits fields of a paid reply, and the 402."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from aigateway.testing._core.wire import MockResponse, error_response

__all__ = [
    "BALANCE_WARNING_THRESHOLD",
    "credits_fields",
    "credits_value",
    "insufficient_credits_response",
]

BALANCE_WARNING_THRESHOLD = Decimal(10)
"""``_balance_warning`` is true when the balance after a call is below this many credits."""


def credits_value(amount: Decimal) -> float:
    """A credit amount as it appears in replies: a float rounded to 6 decimals."""
    return round(float(amount), 6)


def credits_fields(balance: Decimal) -> dict[str, Any]:
    """``_remaining_credits`` and ``_balance_warning`` of a reply, after a call left ``balance``."""
    return {
        "_remaining_credits": credits_value(balance),
        "_balance_warning": balance < BALANCE_WARNING_THRESHOLD,
    }


def insufficient_credits_response(cost: Decimal, balance: Decimal) -> MockResponse:
    """The 402 of a call costing ``cost`` on an account holding ``balance``."""
    return error_response(
        402,
        f"insufficient credits: this call costs {credits_value(cost)} credits "
        f"and the balance is {credits_value(balance)}",
        "insufficient_credits",
        "insufficient_credits",
        _remaining_credits=credits_value(balance),
    )
