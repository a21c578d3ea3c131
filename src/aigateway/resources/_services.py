"""What the service resources share: one builder from keyword arguments to a ``/run`` call.

A typed service method is described once, as a `ServiceMethod` (its keywords, the inputs it
validates, the result it parses, whether it acts on the world); `build_service_call` turns the
caller's keywords into an `APICall` (files encoded, inputs checked, nothing sent on a bad one),
and the resource methods are one-liners over it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast, get_type_hints

from pydantic import TypeAdapter

from aigateway._call.call import APICall, encode_json
from aigateway._lazy import collector_paused
from aigateway._pipeline.response import RawResponse
from aigateway.errors import InvalidRequestError, Violation
from aigateway.resources._base import (
    OPTION_KEYS,
    Resource,
    check_keywords,
    raw_twin,
    split_options,
    twin_view,
)
from aigateway.types._validation import validate
from aigateway.types.files import encode_file, is_file_field
from aigateway.types.service_params import SERVICE_ALLOWED
from aigateway.types.services import MediaFile, RunResult

if TYPE_CHECKING:
    from aigateway.types._media_file import Fetch
    from aigateway.types.chat_params import RequestOptions

__all__ = [
    "RawResponses",
    "ServiceMethod",
    "ServiceResource",
    "build_service_call",
    "run_call",
]

R = TypeVar("R", bound=RunResult)
T = TypeVar("T")
_EXTRA_INPUTS = "extra_inputs"


@dataclass(frozen=True)
class ServiceMethod(Generic[R]):
    """One typed service method: its name (for errors), keyword TypedDict, the inputs it
    checks, the result it parses, and whether it acts on the world."""

    name: str
    params: type
    """The TypedDict of the method's keyword arguments (``model``, inputs, options)."""
    inputs: Any
    """The TypedDict (or union) the inputs are checked against, as the mock checks them."""
    result: type[R]
    side_effect: bool = False
    """True for calls that act on the world (send, pay, write): retried only with an
    idempotency key."""
    fixed: Mapping[str, object] = field(default_factory=dict)
    """Inputs the method sets itself (``operation``, ``read_only``)."""
    path: str = "run"

    @cached_property
    def keywords(self) -> frozenset[str]:
        return frozenset(get_type_hints(self.params))

    @cached_property
    def file_fields(self) -> tuple[str, ...]:
        hints = get_type_hints(self.params, include_extras=True)
        return tuple(name for name, hint in hints.items() if is_file_field(hint))

    @cached_property
    def adapter(self) -> TypeAdapter[Any]:
        with collector_paused():
            return TypeAdapter(self.inputs)


def _model_violation(model: object) -> Violation | None:
    if isinstance(model, str) and model.strip():
        return None
    shown = "(missing)" if model is _MISSING else model
    return Violation(
        "model", shown, f"must be a non-empty string; allowed: {SERVICE_ALLOWED['model']}"
    )


_MISSING: Any = object()


def _bound_result(result_type: type[R], fetch: Fetch, content: bytes) -> R:
    """Parse a reply; a file in it is fetched later with ``fetch`` (the client's pipeline)."""
    result = result_type.model_validate_json(content)
    if isinstance(result, MediaFile):
        result.bind(fetch)
    return result


def run_call(
    model: str,
    inputs: Mapping[str, Any],
    result_type: type[R],
    fetch: Fetch,
    options: RequestOptions,
    *,
    side_effect: bool,
    path: str = "run",
) -> APICall[R]:
    """The call: ``POST /run {model, inputs}`` (or a dedicated path with a flat body)."""
    body = {"model": model, "inputs": dict(inputs)} if path == "run" else {"model": model, **inputs}
    return APICall(
        "POST",
        path,
        parse=partial(_bound_result, result_type, fetch),
        payload=body,
        body=encode_json(body, "inputs"),
        options=options,
        side_effect=side_effect,
    )


def build_service_call(
    method: ServiceMethod[R],
    params: Mapping[str, Any],
    fetch: Fetch,
    checked: Collection[str] = frozenset(),
) -> APICall[R]:
    """Check a typed method's keywords and describe its call; raises before anything is sent.

    ``checked``: inputs a request model checked when it was built; when the inputs are only
    those, they are not checked again."""
    check_keywords(params, method.keywords, method.name)
    body, options = split_options(params)
    extra_inputs = body.pop(_EXTRA_INPUTS, None) or {}
    model = body.pop("model", _MISSING)
    for name in method.file_fields:
        if name in body:
            body[name] = encode_file(body[name], name)
    violations = [v for v in [_model_violation(model)] if v is not None]
    inputs: Any = {}
    if checked and all(name in checked for name in body):
        inputs = {**body, **method.fixed}
    else:
        try:
            inputs = validate(method.adapter, {**body, **method.fixed}, SERVICE_ALLOWED)
        except InvalidRequestError as exc:
            violations.extend(exc.violations)
    if violations:
        raise InvalidRequestError(violations)
    wire = {**method.adapter.dump_python(inputs, mode="json"), **extra_inputs}
    return run_call(
        model,
        wire,
        method.result,
        fetch,
        cast("RequestOptions", options),
        side_effect=method.side_effect,
        path=method.path,
    )


def build_run_call(
    model: str, inputs: Mapping[str, Any], options: RequestOptions, fetch: Fetch
) -> APICall[RunResult]:
    """``client.run(model, inputs)``: any service. Top-level file values (bytes, paths as
    `os.PathLike`, binary file objects) are encoded as ``data:`` URLs."""
    check_keywords(options, OPTION_KEYS, "run")
    violations = [v for v in [_model_violation(model)] if v is not None]
    if not isinstance(inputs, Mapping):
        violations.append(
            Violation(
                "inputs",
                inputs,
                f"must be an object (a dict), got {type(inputs).__name__}; "
                f"allowed: {SERVICE_ALLOWED['inputs']}",
            )
        )
    if violations:
        raise InvalidRequestError(violations)
    encoded = {name: _encoded_input(name, value) for name, value in inputs.items()}
    # A service unknown to the SDK may act on the world: retried only with an idempotency key.
    return run_call(model, encoded, RunResult, fetch, options, side_effect=True)


def _encoded_input(name: str, value: object) -> object:
    """A top-level input as the wire carries it: JSON values as they are, files as URLs."""
    if isinstance(value, str | int | float | bool | list | dict | None):
        return value
    return encode_file(value, f"inputs.{name}")


class RawResponses(Generic[T]):
    """``resource.with_raw_response.<method>(...)``: the method's `RawResponse` (awaitable
    on an `AsyncClient`), ``T``."""

    def __init__(self, resource: Resource) -> None:
        self._resource = resource

    def __getattr__(self, name: str) -> Callable[..., T]:
        method = getattr(self._resource, name) if not name.startswith("_") else None
        if not callable(method):
            raise AttributeError(f"{type(self._resource).__name__} has no method {name!r}")
        return cast("Callable[..., T]", raw_twin(method))


class ServiceResource(Resource):
    """What the service resources' sync and async classes share: ``with_raw_response``."""

    with_raw_response = twin_view(
        RawResponses[RawResponse[Any]], RawResponses[Awaitable[RawResponse[Any]]]
    )
    """The same methods, returning the raw response (status, headers, attempts) too."""
