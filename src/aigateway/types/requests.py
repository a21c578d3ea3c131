"""Requests as pydantic models: build one ahead of time, check it, store it as JSON, send it later.

Each model is derived from the TypedDict that already defines its endpoint's keywords, limits
and docs (`chat_params`, `service_params`), so no field is written twice: the model checks its
data with that TypedDict's validator and the same `InvalidRequestError` messages as the call,
and ``model_dump_json()`` is the JSON body the call sends (fields not set are absent).

    request = ChatCompletionCreateRequest(model="gpt-4o-mini", messages=[...])
    line = request.model_dump_json()
    client.chat.completions.create(ChatCompletionCreateRequest.model_validate_json(line))
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from functools import cache
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast, get_args, get_origin, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, create_model, model_serializer
from typing_extensions import NotRequired, Required, Self, TypedDict, Unpack

from aigateway._lazy import collector_paused
from aigateway.errors import InvalidRequestError, Violation
from aigateway.types._validation import validate
from aigateway.types.chat import message_param
from aigateway.types.chat_params import ALLOWED, ChatCompletionRequestFields
from aigateway.types.service_params import (
    CATEGORIES,
    SERVICE_ALLOWED,
    ImageGenerateBody,
    NonEmpty,
    RunBody,
)

__all__ = [
    "ChatCompletionCreateRequest",
    "ImageGenerateRequest",
    "RequestModel",
    "RunRequest",
    "load_requests",
]


class RequestModel(BaseModel):
    """A request to one endpoint, checked when built, and serialised as the body it sends."""

    model_config = ConfigDict(frozen=True, protected_namespaces=(), defer_build=True)

    endpoint: ClassVar[str] = ""
    """The method that sends it (``chat.completions.create``), for errors."""
    _fields_type: ClassVar[Any] = None
    _allowed: ClassVar[Mapping[str, str]] = {}

    def __init__(self, /, **data: Any) -> None:
        checked = type(self)._check(data)
        built = type(self).model_construct(**checked)
        for name in ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__"):
            object.__setattr__(self, name, getattr(built, name))
        object.__setattr__(self, "__pydantic_private__", built.__pydantic_private__)

    @classmethod
    def _adapter(cls) -> TypeAdapter[Any]:
        return _adapter_of(cls._fields_type)

    @classmethod
    def _prepare(cls, data: dict[str, Any]) -> dict[str, Any]:
        """The data as the TypedDict takes it (chat: reply objects as message dicts)."""
        return data

    @classmethod
    def _check(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        """``data`` checked as the call checks it; InvalidRequestError otherwise."""
        known = cls.model_fields
        unknown = [
            Violation(
                name,
                value,
                f"not a field of {cls.__name__}; allowed: {', '.join(known)}"
                + ("; pass stream=True to the call instead" if name == "stream" else ""),
            )
            for name, value in data.items()
            if name not in known
        ]
        if unknown:
            raise InvalidRequestError(unknown)
        checked: dict[str, Any] = validate(cls._adapter(), cls._prepare(dict(data)), cls._allowed)
        return checked

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> Self:
        """A request from a dict (or one of this class, as it is), checked as the call checks."""
        if isinstance(obj, cls):
            return obj
        if not isinstance(obj, Mapping):
            raise InvalidRequestError(
                [Violation("(body)", obj, f"a {cls.__name__} is built from a JSON object")]
            )
        return cls(**obj)

    @classmethod
    def model_validate_json(cls, json_data: str | bytes | bytearray, *args: Any, **kw: Any) -> Self:
        """A request from the JSON that ``model_dump_json`` wrote."""
        try:
            data = json.loads(json_data)
        except ValueError as exc:
            raise InvalidRequestError(
                [Violation("(body)", str(json_data)[:80], f"not JSON ({exc})")]
            ) from None
        return cls.model_validate(data)

    def to_params(self) -> dict[str, Any]:
        """The fields that were set, as keyword arguments of the call (``create(**params)``)."""
        return {
            name: getattr(self, name)
            for name in type(self).model_fields
            if name in self.model_fields_set
        }

    def __repr_args__(self) -> Any:
        return list(self.to_params().items())

    @model_serializer(mode="plain")
    def _body(self) -> Any:
        return self._adapter().dump_python(self.to_params(), mode="json")


@cache
def _adapter_of(fields_type: Any) -> TypeAdapter[Any]:
    with collector_paused():
        return TypeAdapter(fields_type)


def _field_definitions(fields_type: type) -> dict[str, Any]:
    """pydantic field definitions from a TypedDict: its types (for the JSON schema) and which
    are required; values are checked by the TypedDict itself."""
    required_keys: frozenset[str] = getattr(fields_type, "__required_keys__", frozenset())
    definitions: dict[str, Any] = {}
    for name, hint in get_type_hints(fields_type, include_extras=True).items():
        origin = get_origin(hint)
        required = origin is Required or (origin is not NotRequired and name in required_keys)
        if origin in (Required, NotRequired):
            hint = get_args(hint)[0]
        definitions[name] = (hint, ... if required else Field(default=None))
    return definitions


def request_model(
    name: str,
    fields_type: Any,
    *,
    endpoint: str,
    allowed: Mapping[str, str],
    doc: str,
    base: type[RequestModel] = RequestModel,
    fields: Mapping[str, Any] | None = None,
) -> Any:
    """The request model of ``fields_type`` (a TypedDict): its fields, its checks, its docs."""
    created: Any = create_model(
        name,
        __base__=base,
        __module__=__name__,
        __doc__=doc,
        **(fields if fields is not None else _field_definitions(fields_type)),
    )
    model = cast("type[RequestModel]", created)
    model.endpoint = endpoint
    model._fields_type = fields_type
    model._allowed = allowed
    return model


class _ChatBase(RequestModel):
    @classmethod
    def _prepare(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Reply objects in ``messages`` (a `Message`, `Choice`, `ChatCompletion`) as dicts."""
        messages = data.get("messages")
        if isinstance(messages, list | tuple):
            data["messages"] = [message_param(message) for message in messages]
        return data


_CHAT_DOC = """A ``POST /chat/completions`` request: send with
``client.chat.completions.create(request)`` (``stream=True`` there to stream it)."""
_RUN_DOC = """A ``POST /run`` request ``{model, inputs}``: send with ``client.run(request)``.
``RunRequest.for_category("speech")`` checks ``inputs`` as that category's typed method does."""
_IMAGE_DOC = """A ``POST /image/generate`` request ``{model, prompt, size}``: send with
``client.images.generate(request)``."""


class _RunBase(RequestModel):
    category: ClassVar[str | None] = None

    @classmethod
    def for_category(cls, category: str) -> type[RunRequest]:
        """The `RunRequest` whose ``inputs`` are checked as ``category``'s (``"speech"``, ...)."""
        if category not in CATEGORIES:
            raise InvalidRequestError(
                [Violation("category", category, f"one of {', '.join(map(repr, CATEGORIES))}")]
            )
        return _category_model(category)

    def __reduce_ex__(self, protocol: Any) -> Any:
        # A category's class is made on demand, not a module attribute: pickle rebuilds it.
        if self.category is None:
            return super().__reduce_ex__(protocol)
        return _rebuilt, (self.category, self.model_dump(mode="json"))


if TYPE_CHECKING:

    class ChatCompletionCreateRequest(RequestModel):
        def __init__(self, **params: Unpack[ChatCompletionRequestFields]) -> None: ...

    class RunRequest(_RunBase):
        def __init__(self, *, model: str, inputs: Mapping[str, Any]) -> None: ...

    class ImageGenerateRequest(RequestModel):
        def __init__(self, **params: Unpack[ImageGenerateBody]) -> None: ...

else:
    ChatCompletionCreateRequest = request_model(
        "ChatCompletionCreateRequest",
        ChatCompletionRequestFields,
        endpoint="chat.completions.create",
        allowed=ALLOWED,
        doc=_CHAT_DOC,
        base=_ChatBase,
    )
    RunRequest = request_model(
        "RunRequest", RunBody, endpoint="run", allowed=SERVICE_ALLOWED, doc=_RUN_DOC, base=_RunBase
    )
    ImageGenerateRequest = request_model(
        "ImageGenerateRequest",
        ImageGenerateBody,
        endpoint="images.generate",
        allowed=SERVICE_ALLOWED,
        doc=_IMAGE_DOC,
    )


@cache
def _category_model(category: str) -> type[RunRequest]:
    inputs = CATEGORIES[category]
    body = TypedDict(  # type: ignore[misc]  # noqa: UP013
        f"{category.title()}RunBody", {"model": NonEmpty, "inputs": inputs}
    )
    model: type[RunRequest] = request_model(
        f"{category.title()}RunRequest",
        body,
        endpoint="run",
        allowed=SERVICE_ALLOWED,
        doc=f"A ``POST /run`` request to a {category} service, its inputs checked.",
        base=RunRequest,
        fields={"model": (NonEmpty, ...), "inputs": (inputs, ...)},
    )
    model.category = category
    return model


def _rebuilt(category: str, body: dict[str, Any]) -> RunRequest:
    return _category_model(category).model_validate(body)


def load_requests(
    path: str | PathLike[str], model: type[RequestModel] = ChatCompletionCreateRequest
) -> list[Any]:
    """The requests of a JSON-lines file (one ``model_dump_json()`` per line; blank lines
    skipped), each checked; a bad line raises `InvalidRequestError` naming its number."""
    return list(iter_requests(path, model))


def iter_requests(path: str | PathLike[str], model: type[RequestModel]) -> Iterator[Any]:
    """`load_requests`, one request at a time."""
    with Path(path).open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                yield model.model_validate_json(line)
            except InvalidRequestError as exc:
                raise InvalidRequestError(
                    [
                        Violation(
                            v.field, v.value, f"line {number} of {Path(path).name}: {v.problem}"
                        )
                        for v in exc.violations
                    ]
                ) from None


def request_params(
    request: object, expected: type[RequestModel], method: str, given: Mapping[str, Any]
) -> dict[str, Any]:
    """A request model's fields as ``method``'s keywords; refuses a model of another endpoint,
    or fields given both in the model and as keywords."""
    if not isinstance(request, expected):
        sent_by = getattr(request, "endpoint", "")
        shown = type(request).__name__ + (f" (sent by {sent_by})" if sent_by else "")
        raise InvalidRequestError(
            [Violation("request", shown, f"{method} takes a {expected.__name__}, not a {shown}")]
        )
    params = request.to_params()
    twice = [name for name in given if name in params]
    if twice:
        raise InvalidRequestError(
            [
                Violation(name, given[name], "given both in the request and as a keyword")
                for name in twice
            ]
        )
    return {**params, **given}
