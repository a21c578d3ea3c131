"""The model catalogue: `Model` and `ModelList` (``GET /models``, ``GET /models/{id}``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

from aigateway._display import card, field, guarded, plain, table
from aigateway.types._base import GatewayModel, ReplyMixin

__all__ = ["Model", "ModelList"]


class Model(GatewayModel):
    """One catalogue entry. Pricing and capability fields the gateway adds are kept as extras."""

    id: str
    object: Literal["model"] | str = "model"
    created: int | None = None
    owned_by: str | None = None

    def _summary(self) -> list[Any]:
        """id, owner, context window, prices and capabilities, as shown in a table."""
        extra = self.model_extra or {}
        return [
            self.id,
            self.owned_by,
            extra.get("context_window"),
            _prices(extra.get("pricing")),
            _capabilities(extra.get("capabilities")),
        ]

    @guarded
    def __repr__(self) -> str:
        context = (self.model_extra or {}).get("context_window")
        return plain(self, repr(self.id), field("owner", self.owned_by), field("context", context))

    @guarded
    def _repr_html_(self) -> str:
        return card(self, zip(_COLUMNS, self._summary(), strict=True))


_COLUMNS = ("id", "owner", "context window", "prices", "capabilities")
_LISTED_IDS = 3
"""How many ids a model list's plain repr names."""


def _prices(pricing: Any) -> str | None:
    """``0.005 in / 0.015 out per 1k credits`` from the gateway's ``pricing`` object."""
    if not isinstance(pricing, dict):
        return None if pricing is None else str(pricing)
    unit = pricing.get("unit", "credits")
    return f"{pricing.get('input_per_1k')} in / {pricing.get('output_per_1k')} out per 1k {unit}"


def _capabilities(capabilities: Any) -> str | None:
    """The names of the capabilities that are true (``vision, tools``)."""
    if not isinstance(capabilities, dict):
        return None if capabilities is None else str(capabilities)
    return ", ".join(name for name, on in capabilities.items() if on is True) or "none"


class ModelList(ReplyMixin, GatewayModel):
    """The catalogue; iterate it, index it, or read ``data``."""

    object: Literal["list"] | str = "list"
    data: list[Model]

    def __iter__(self) -> Iterator[Model]:  # type: ignore[override]
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index: int) -> Model:
        return self.data[index]

    @property
    def ids(self) -> list[str]:
        """The model ids, in catalogue order."""
        return [model.id for model in self.data]

    @guarded
    def __repr__(self) -> str:
        ids = self.ids[:_LISTED_IDS] + (["..."] if len(self.data) > _LISTED_IDS else [])
        return plain(self, f"{len(self.data)} models: {', '.join(ids)}")

    @guarded
    def _repr_html_(self) -> str:
        return table(_COLUMNS, (model._summary() for model in self.data))
