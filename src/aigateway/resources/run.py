"""``client.run(model, inputs)``: ``POST /run`` for any service, typed or not.

The typed resources (``client.images``, ``client.audio``, ...) cover the thirteen categories of
the API; ``client.run`` reaches any service id with the inputs you give, and returns the whole
reply as a `RunResult`. Inputs that are files (``bytes``, an `os.PathLike` path, a binary file
object) are sent as ``data:`` URLs. Since the SDK cannot know whether an arbitrary service acts
on the world, ``run`` is retried only when given an ``idempotency_key``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel
from typing_extensions import Unpack

from aigateway._call.call import APICall
from aigateway.resources._base import (
    AsyncResource,
    Resource,
    SyncResource,
    async_raw_twin,
    endpoint,
    raw_twin,
    twin_view,
)
from aigateway.resources._services import build_run_call
from aigateway.types.chat_params import RequestOptions
from aigateway.types.requests import RunRequest, request_params
from aigateway.types.services import RunResult

__all__ = ["AsyncRun", "Run"]


def _model_and_inputs(model: object, inputs: object) -> tuple[Any, Any]:
    """``model`` and ``inputs``, from a `RunRequest` when ``model`` is a request model."""
    if isinstance(model, str) or not isinstance(model, BaseModel):
        return model, inputs
    given = {} if inputs is None else {"inputs": inputs}
    params = request_params(model, RunRequest, "run", given)
    return params["model"], params["inputs"]


class RunWithRawResponse:
    def __init__(self, run: Run) -> None:
        self.create = raw_twin(run.create)


class AsyncRunWithRawResponse:
    def __init__(self, run: AsyncRun) -> None:
        self.create = async_raw_twin(run.create)


class _RunMethods(Resource):
    """The methods of `Run` and `AsyncRun`."""

    @endpoint
    def create(
        self,
        model: str | RunRequest,
        inputs: Mapping[str, Any] | None = None,
        **options: Unpack[RequestOptions],
    ) -> APICall[RunResult]:
        """Run service ``model`` with ``inputs`` (a dict); the reply, whole, as a `RunResult`.

        A `RunRequest` may be passed instead of ``model`` and ``inputs``. A ``model`` that is
        not a non-empty string, or ``inputs`` that is not a dict, raises `InvalidRequestError`
        and nothing is sent; an unknown service id is a `NotFoundError`.
        """
        return build_run_call(*_model_and_inputs(model, inputs), options, self._pipeline.fetch)

    __call__ = create

    with_raw_response = twin_view(RunWithRawResponse, AsyncRunWithRawResponse)


class Run(_RunMethods, SyncResource):
    """``client.run(model, inputs)``; ``client.run.with_raw_response.create(...)`` for the
    raw response."""


class AsyncRun(_RunMethods, AsyncResource):
    """``await client.run(model, inputs)``; ``await client.run.with_raw_response.create(...)``
    for the raw response."""
