"""The model catalogue: `Model` and `ModelList` (``GET /models``, ``GET /models/{id}``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

from ._base import GatewayModel, ReplyMixin

__all__ = ["Model", "ModelList"]


class Model(GatewayModel):
    """One catalogue entry. Pricing and capability fields the gateway adds are kept as extras."""

    id: str
    object: Literal["model"] | str = "model"
    created: int | None = None
    owned_by: str | None = None


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
