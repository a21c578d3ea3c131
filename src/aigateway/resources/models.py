"""``client.models``: the model catalogue (``GET /models``, ``GET /models/{id}``)."""

from __future__ import annotations

from typing_extensions import Unpack

from aigateway._call.call import APICall
from aigateway.resources._base import (
    OPTION_KEYS,
    AsyncResource,
    Resource,
    SyncResource,
    async_raw_twin,
    check_keywords,
    endpoint,
    path_parameter,
    raw_twin,
    twin_view,
)
from aigateway.types.chat_params import RequestOptions
from aigateway.types.models import Model, ModelList

__all__ = ["AsyncModels", "Models"]


class ModelsWithRawResponse:
    def __init__(self, models: Models) -> None:
        self.list = raw_twin(models.list)
        self.retrieve = raw_twin(models.retrieve)


class AsyncModelsWithRawResponse:
    def __init__(self, models: AsyncModels) -> None:
        self.list = async_raw_twin(models.list)
        self.retrieve = async_raw_twin(models.retrieve)


class _ModelsMethods(Resource):
    """The methods of `Models` and `AsyncModels`."""

    @endpoint
    def list(self, **options: Unpack[RequestOptions]) -> APICall[ModelList]:
        """Every model (iterate the result, or read ``.data``)."""
        check_keywords(options, OPTION_KEYS, "models.list")
        return APICall("GET", "models", parse=ModelList.model_validate_json, options=options)

    @endpoint
    def retrieve(self, model_id: str, **options: Unpack[RequestOptions]) -> APICall[Model]:
        """One model; `NotFoundError` when the gateway does not know it."""
        check_keywords(options, OPTION_KEYS, "models.retrieve")
        model_path = path_parameter("model_id", model_id, "a model id from models.list()")
        return APICall(
            "GET", f"models/{model_path}", parse=Model.model_validate_json, options=options
        )

    with_raw_response = twin_view(ModelsWithRawResponse, AsyncModelsWithRawResponse)


class Models(_ModelsMethods, SyncResource):
    """The catalogue of chat models; the gateway's list is authoritative."""


class AsyncModels(_ModelsMethods, AsyncResource):
    """The catalogue of chat models; the gateway's list is authoritative."""
