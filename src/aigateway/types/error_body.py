"""The body of an error reply, ``{"error": {"message", "type", "code", "param"}}``, as a model."""

from __future__ import annotations

from aigateway.types._base import GatewayModel

__all__ = ["ErrorBody", "ErrorObject"]


class ErrorObject(GatewayModel):
    """The ``error`` member of an error reply: ``{"error": {"message", "type", "code"}}``."""

    message: str = ""
    type: str | None = None
    code: str | None = None
    param: str | None = None


class ErrorBody(GatewayModel):
    """A whole error reply."""

    error: ErrorObject
