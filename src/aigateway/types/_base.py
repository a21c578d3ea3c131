"""The base of every reply model: lenient parsing that keeps what it does not know."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from aigateway._lazy import collector_paused

if TYPE_CHECKING:
    from aigateway.types.fallbacks import FallbackInfo
    from aigateway.types.rate_limits import RateLimitInfo


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
    rate-limit headers, what a fallback did).

    What was learnt is kept in the model's private storage only when there is something to
    keep (`_learn`): a declared private attribute would cost every reply, and every stream
    chunk, a Python-level initialisation (about 4 µs) whether or not it is ever set. It is
    compared, copied and pickled with the reply, like any private attribute."""

    @property
    def rate_limit(self) -> RateLimitInfo | None:
        """The ``X-RateLimit-*`` values of the reply this object came in (None without them)."""
        learnt = self.__pydantic_private__
        return learnt.get("rate_limit") if learnt else None

    @property
    def fallback(self) -> FallbackInfo | None:
        """With ``fallback_models``: the model that served the call and the ones that failed
        before it; None for a call without fallbacks."""
        learnt = self.__pydantic_private__
        return learnt.get("fallback") if learnt else None

    def _learn(self, name: Literal["rate_limit", "fallback"], value: object) -> None:
        """Keep what the client learnt getting this reply: ``rate_limit`` or ``fallback``."""
        learnt = self.__pydantic_private__
        if learnt is None:
            object.__setattr__(self, "__pydantic_private__", {name: value})
        else:
            learnt[name] = value
