"""The base of every reply model: lenient parsing that keeps what it does not know."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from .._lazy import collector_paused

if TYPE_CHECKING:
    from .._ledger import FallbackInfo
    from ..errors import RateLimitInfo


class GatewayModel(BaseModel):
    """A reply object. Unknown fields are kept (``model_extra``), so a newer gateway never
    breaks an older client, and fields can be set by name or by their wire alias.

    Validators are built on first use (``defer_build``), not at import: a process pays only
    for the reply types it parses."""

    model_config = ConfigDict(
        extra="allow", populate_by_name=True, protected_namespaces=(), defer_build=True
    )


ModelT = TypeVar("ModelT", bound=BaseModel)


def built(model: type[ModelT]) -> type[ModelT]:
    """``model`` with its validator built, the garbage collector paused while it is (a build
    is one-time work, see `collector_paused`); after the first call, one attribute check."""
    if not model.__pydantic_complete__:
        with collector_paused():
            model.model_rebuild()
    return model


class CreditsMixin(BaseModel):
    """The credit fields the gateway adds to some replies (``_remaining_credits``,
    ``_balance_warning``), as typed attributes; None when the reply did not carry them."""

    model_config = ConfigDict(defer_build=True)

    remaining_credits: float | None = Field(default=None, alias="_remaining_credits")
    """Credits left on the account after this call."""
    balance_warning: bool | None = Field(default=None, alias="_balance_warning")
    """True when the balance is below 10 credits."""


class ReplyMixin(CreditsMixin):
    """A whole reply: its credit fields, and what the client learnt while getting it (the
    rate-limit headers, what a fallback did). Stream chunks carry only the credit fields: a
    private attribute costs every instance a Python-level initialisation, too much per chunk."""

    _rate_limit: RateLimitInfo | None = PrivateAttr(default=None)
    _fallback: FallbackInfo | None = PrivateAttr(default=None)

    @property
    def rate_limit(self) -> RateLimitInfo | None:
        """The ``X-RateLimit-*`` values of the reply this object came in (None without them)."""
        return self._rate_limit

    @property
    def fallback(self) -> FallbackInfo | None:
        """With ``fallback_models``: the model that served the call and the ones that failed
        before it; None for a call without fallbacks."""
        return self._fallback
