"""``client.models``: the model catalogue (``GET /models``, ``GET /models/{id}``)."""

from __future__ import annotations

from functools import cached_property

from typing_extensions import Unpack

from aigateway._call.call import APICall
from aigateway.resources._base import (
    OPTION_KEYS,
    AsyncResource,
    SyncResource,
    async_raw_twin,
    check_keywords,
    path_parameter,
    raw_twin,
)
from aigateway.types.chat_params import RequestOptions
from aigateway.types.models import Model, ModelList

__all__ = ["AsyncModels", "Models", "list_call", "retrieve_call"]


def list_call(options: RequestOptions) -> APICall[ModelList]:
    check_keywords(options, OPTION_KEYS, "models.list")
    return APICall("GET", "models", parse=ModelList.model_validate_json, options=options)


def retrieve_call(model_id: str, options: RequestOptions) -> APICall[Model]:
    check_keywords(options, OPTION_KEYS, "models.retrieve")
    model_path = path_parameter("model_id", model_id, "a model id from models.list()")
    return APICall("GET", f"models/{model_path}", parse=Model.model_validate_json, options=options)


class Models(SyncResource):
    """The catalogue of chat models; the gateway's list is authoritative."""

    def list(self, **options: Unpack[RequestOptions]) -> ModelList:
        """Every model (iterate the result, or read ``.data``)."""
        result: ModelList = self._request(list_call(options))
        return result

    def retrieve(self, model_id: str, **options: Unpack[RequestOptions]) -> Model:
        """One model; `NotFoundError` when the gateway does not know it."""
        result: Model = self._request(retrieve_call(model_id, options))
        return result

    @cached_property
    def with_raw_response(self) -> ModelsWithRawResponse:
        return ModelsWithRawResponse(self)


class AsyncModels(AsyncResource):
    """The catalogue of chat models; the gateway's list is authoritative."""

    async def list(self, **options: Unpack[RequestOptions]) -> ModelList:
        """Every model (iterate the result, or read ``.data``)."""
        result: ModelList = await self._request(list_call(options))
        return result

    async def retrieve(self, model_id: str, **options: Unpack[RequestOptions]) -> Model:
        """One model; `NotFoundError` when the gateway does not know it."""
        result: Model = await self._request(retrieve_call(model_id, options))
        return result

    @cached_property
    def with_raw_response(self) -> AsyncModelsWithRawResponse:
        return AsyncModelsWithRawResponse(self)


class ModelsWithRawResponse:
    def __init__(self, models: Models) -> None:
        self.list = raw_twin(models.list)
        self.retrieve = raw_twin(models.retrieve)


class AsyncModelsWithRawResponse:
    def __init__(self, models: AsyncModels) -> None:
        self.list = async_raw_twin(models.list)
        self.retrieve = async_raw_twin(models.retrieve)
