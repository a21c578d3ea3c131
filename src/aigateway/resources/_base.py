"""What every resource shares: the client's pipeline, keyword checking, raw and streaming twins."""

from __future__ import annotations

import copy
import inspect
from collections.abc import Awaitable, Callable, Collection, Coroutine, Mapping
from dataclasses import replace
from functools import cache, update_wrapper
from types import MethodType
from typing import (
    TYPE_CHECKING,
    Any,
    Concatenate,
    Generic,
    TypeVar,
    get_args,
    get_origin,
    get_type_hints,
    overload,
)
from urllib.parse import quote

from typing_extensions import ParamSpec, Required, Self

from aigateway.errors import InvalidRequestError, Violation

if TYPE_CHECKING:
    from aigateway._call.call import APICall
    from aigateway._pipeline.drivers import AsyncPipeline, SyncPipeline
    from aigateway._pipeline.response import AsyncStreamedResponse, RawResponse, StreamedResponse
    from aigateway.types.requests import RequestModel

P = ParamSpec("P")
R = TypeVar("R")
F = TypeVar("F", bound=Callable[..., Any])
S = TypeVar("S")
A = TypeVar("A")

OPTION_KEYS = (
    "extra_headers",
    "extra_body",
    "timeout",
    "deadline",
    "max_retries",
    "idempotency_key",
    "stream_first_event_timeout",
    "stream_idle_timeout",
    "stream_deadline",
    "fallback_models",
)


class _Unset:
    """Shown as the default of optional keywords: a keyword not passed is not sent."""

    def __repr__(self) -> str:
        return "unset"


UNSET: Any = _Unset()


class Resource:
    """What a resource's `SyncResource` and `AsyncResource` classes share: the pipeline, how
    replies are handed back, and the methods written once for both (`endpoint`)."""

    _pipeline: SyncPipeline | AsyncPipeline
    _reply: dict[str, bool] = {}
    """How calls hand back their reply: ``{"raw": True}`` for ``with_raw_response`` twins,
    ``{"streamed": True}`` for ``with_streaming_response`` twins; empty for the parsed result."""

    def _shaped(self, call: APICall[Any]) -> APICall[Any]:
        return replace(call, **self._reply) if self._reply else call  # type: ignore[arg-type]


class SyncResource(Resource):
    """A group of endpoints on a `Client`, around its pipeline."""

    _pipeline: SyncPipeline

    def __init__(self, pipeline: SyncPipeline) -> None:
        self._pipeline = pipeline

    def _request(self, call: APICall[Any]) -> Any:
        return self._pipeline.request(self._shaped(call))


class AsyncResource(Resource):
    """A group of endpoints on an `AsyncClient`, around its pipeline."""

    _pipeline: AsyncPipeline

    def __init__(self, pipeline: AsyncPipeline) -> None:
        self._pipeline = pipeline

    async def _request(self, call: APICall[Any]) -> Any:
        return await self._pipeline.request(self._shaped(call))


class endpoint(Generic[P, R]):  # lower case: a decorator, as functools.cached_property
    """A resource method written once for the resource's sync and async classes.

    Decorate a function that describes the call (``-> APICall[Result]``), which is all the
    logic such a method has; the resource it is looked up on sends the call. On a
    `SyncResource` it is a method returning the call's result; on an `AsyncResource` a
    coroutine method, the call described when it is awaited, as an ``async def`` method's
    would be. Type checkers see the same through the overloads of ``__get__``: the function's
    parameters (keywords checked as the function's are) and the call's result, or a coroutine
    of it. ``help()``, ``inspect.signature`` and the reference show the function's name,
    docstring and signature, the call's result as its return annotation.
    """

    def __init__(self, describe: Callable[Concatenate[Any, P], APICall[R]]) -> None:
        self._sync = _sync_method(describe)
        self._async = _async_method(describe)

    @overload
    def __get__(self, resource: None, owner: type) -> Callable[..., Any]: ...
    @overload
    def __get__(self, resource: SyncResource, owner: type | None = None) -> Callable[P, R]: ...
    @overload
    def __get__(
        self, resource: AsyncResource, owner: type | None = None
    ) -> Callable[P, Coroutine[Any, Any, R]]: ...
    def __get__(self, resource: Resource | None, owner: type | None = None) -> Any:
        owner = type(resource) if owner is None else owner
        method = self._async if issubclass(owner, AsyncResource) else self._sync
        return method if resource is None else MethodType(method, resource)


class twin_view(Generic[S, A]):  # lower case: used as functools.cached_property is
    """A view of a resource written once for its sync and async classes, such as
    ``with_raw_response``: ``sync(resource)`` on a `SyncResource`, ``async_(resource)`` on an
    `AsyncResource`, made on first use and kept, as by ``cached_property``."""

    def __init__(self, sync: Callable[[Any], S], async_: Callable[[Any], A]) -> None:
        self._sync = sync
        self._async = async_
        self._name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, resource: None, owner: type) -> Self: ...
    @overload
    def __get__(self, resource: SyncResource, owner: type | None = None) -> S: ...
    @overload
    def __get__(self, resource: AsyncResource, owner: type | None = None) -> A: ...
    def __get__(self, resource: Resource | None, owner: type | None = None) -> Any:
        if resource is None:
            return self
        make = self._async if isinstance(resource, AsyncResource) else self._sync
        view = resource.__dict__[self._name] = make(resource)
        return view


def _sync_method(describe: Callable[..., APICall[Any]]) -> Callable[..., Any]:
    def method(resource: SyncResource, /, *args: Any, **kwargs: Any) -> Any:
        return resource._request(describe(resource, *args, **kwargs))

    return _dressed_as(describe, method)


def _async_method(describe: Callable[..., APICall[Any]]) -> Callable[..., Any]:
    async def method(resource: AsyncResource, /, *args: Any, **kwargs: Any) -> Any:
        return await resource._request(describe(resource, *args, **kwargs))

    return _dressed_as(describe, method)


def _dressed_as(describe: Callable[..., Any], method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` with the name, docstring and signature of ``describe``, the call's result
    as its return annotation."""
    update_wrapper(method, describe)
    signature = inspect.signature(describe)
    result = _call_result(signature.return_annotation)
    method.__annotations__ = {**describe.__annotations__, "return": result}
    method.__signature__ = signature.replace(return_annotation=result)  # type: ignore[attr-defined]
    return method


def _call_result(annotation: object) -> object:
    """``APICall[X]``, the return annotation of a function describing a call, as ``X``."""
    if isinstance(annotation, str):  # postponed annotations are strings
        return annotation.removeprefix("APICall[").removesuffix("]")
    args = get_args(annotation)
    return args[0] if args else annotation


def _twin_method(method: Callable[..., Any], **reply: bool) -> Any:
    resource = copy.copy(method.__self__)  # type: ignore[attr-defined]
    resource._reply = reply
    return getattr(resource, method.__name__)


def _raw_twin_method(method: Callable[..., Any]) -> Any:
    return _twin_method(method, raw=True)


def raw_twin(method: Callable[P, R]) -> Callable[P, RawResponse[R]]:
    """The same method, returning the `RawResponse` (status, headers, attempts) around its result.

    Nothing extra goes on the wire: the twin is a copy of the resource that asks the pipeline
    for the raw response.
    """
    twin: Callable[P, RawResponse[R]] = _raw_twin_method(method)
    return twin


def async_raw_twin(method: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[RawResponse[R]]]:
    """`raw_twin` for the coroutine methods of async resources."""
    twin: Callable[P, Awaitable[RawResponse[R]]] = _raw_twin_method(method)
    return twin


def streaming_twin(method: Callable[P, Any]) -> Callable[P, StreamedResponse]:
    """The same method, returning the `StreamedResponse`: status and headers at once, the body
    unread until you read it (in a ``with`` block, which closes the connection)."""
    twin: Callable[P, StreamedResponse] = _twin_method(method, streamed=True)
    return twin


def async_streaming_twin(
    method: Callable[P, Awaitable[Any]],
) -> Callable[P, Awaitable[AsyncStreamedResponse]]:
    """`streaming_twin` for the coroutine methods of async resources."""
    twin: Callable[P, Awaitable[AsyncStreamedResponse]] = _twin_method(method, streamed=True)
    return twin


def path_parameter(name: str, value: object, allowed: str) -> str:
    """``value`` written into a URL path: the ``/`` of provider-prefixed ids (``meta-llama/...``)
    kept as the gateway writes it, every other reserved character (``?``, ``#``, ``%``, spaces,
    ...) percent-encoded. A value that is not a string, is blank, or has an empty, ``.`` or
    ``..`` segment (which would change the endpoint called) is an `InvalidRequestError` naming
    ``name``, before anything is sent; ``allowed`` says what to pass instead."""
    if not isinstance(value, str) or not value.strip():
        problem = "must be a non-empty string"
    elif any(segment in ("", ".", "..") for segment in value.split("/")):
        problem = (
            "must not have an empty, '.' or '..' part between slashes "
            "(it would change the endpoint called)"
        )
    else:
        return quote(value, safe="/")
    raise InvalidRequestError([Violation(name, value, f"{problem}; allowed: {allowed}")])


def split_options(params: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Separate the per-call options (headers, body extras, timeout, retries) from the body fields."""
    body = dict(params)
    options = {key: body.pop(key) for key in OPTION_KEYS if key in body}
    return body, options


def one_request(args: tuple[Any, ...], method: str) -> Any:
    """The one positional argument (a request model) of a method taking keywords, or None."""
    if len(args) > 1:
        raise TypeError(f"{method}() takes one positional argument (a request), got {len(args)}")
    return args[0] if args else None


def with_request(
    request: object, expected: type[RequestModel], method: str, given: dict[str, Any]
) -> tuple[dict[str, Any], frozenset[str]]:
    """A method's keywords, with the fields of ``request`` (a request model of type
    ``expected``, or None) among them, and the names of those fields: they were checked when
    the request was built, so the call does not check them again."""
    if request is None:
        return given, frozenset()
    from aigateway.types.requests import request_params

    params = request_params(request, expected, method, given)
    return params, frozenset(params.keys() - given.keys())


def check_keywords(given: Collection[str], allowed: Collection[str], method: str) -> None:
    """A TypeError naming an unexpected keyword argument and the closest allowed one."""
    for name in given:
        if name not in allowed:
            import difflib  # only for a misspelt keyword's hint

            close = difflib.get_close_matches(name, list(allowed), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise TypeError(f"{method}() got an unexpected keyword argument {name!r}{hint}")


@cache
def _keywords(params_type: type) -> tuple[dict[str, Any], list[str], list[str]]:
    """A TypedDict's plain hints (for display), its required keys and the keyword order;
    cached, as the sync and async twins of a method share one TypedDict."""
    hints = get_type_hints(params_type)
    # __required_keys__ is unreliable under postponed annotations; read Required[...] itself.
    required = [
        name
        for name, hint in get_type_hints(params_type, include_extras=True).items()
        if get_origin(hint) is Required
    ]
    return hints, required, required + [name for name in hints if name not in required]


def keyword_signature(
    params_type: type, *, positional: tuple[str, ...] = (), request: type | str | None = None
) -> Callable[[F], F]:
    """Give a ``**params: Unpack[TypedDict]`` method a signature listing the keywords.

    ``help()``, Jupyter's tooltips and ``inspect.signature`` then show the real parameters,
    defined once in the TypedDict. ``request``: the method also takes a request model of that
    type as its one positional argument (the implementation's ``*args``); its name as a string
    keeps the model's module from being imported before a request model is used.
    """
    hints, required, order = _keywords(params_type)

    def decorate(method: F) -> F:
        existing = inspect.signature(method).parameters
        parameters = [p for name, p in existing.items() if name == "self" or name in positional]
        if request is not None:
            only = inspect.Parameter.POSITIONAL_ONLY
            parameters = [p.replace(kind=only) if p.name == "self" else p for p in parameters]
            parameters.append(
                inspect.Parameter(
                    "request", inspect.Parameter.POSITIONAL_ONLY, default=None, annotation=request
                )
            )
        for name in order:
            hint = hints[name]
            default = inspect.Parameter.empty if name in required else UNSET
            parameters.append(
                inspect.Parameter(
                    name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hint
                )
            )
        method.__params_type__ = params_type  # type: ignore[attr-defined]  # for the reference
        method.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            parameters, return_annotation=inspect.signature(method).return_annotation
        )
        return method

    return decorate
