"""What every resource shares: access to the client's pipeline, keyword checking, raw twins."""

from __future__ import annotations

import copy
import difflib
import inspect
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar, get_origin, get_type_hints

from typing_extensions import ParamSpec, Required

if TYPE_CHECKING:
    from .._client import AsyncClient, Client
    from .._http import APICall, RawResponse

P = ParamSpec("P")
R = TypeVar("R")
F = TypeVar("F", bound=Callable[..., Any])

OPTION_KEYS = (
    "extra_headers",
    "extra_body",
    "timeout",
    "max_retries",
    "idempotency_key",
    "stream_idle_timeout",
    "stream_deadline",
)


class _Unset:
    """Shown as the default of optional keywords: a keyword not passed is not sent."""

    def __repr__(self) -> str:
        return "unset"


UNSET: Any = _Unset()


class SyncResource:
    """A group of endpoints on a `Client`."""

    _raw = False

    def __init__(self, client: Client) -> None:
        self._client = client

    def _request(self, call: APICall[Any]) -> Any:
        return self._client._pipeline.request(replace(call, raw=self._raw) if self._raw else call)


class AsyncResource:
    """A group of endpoints on an `AsyncClient`."""

    _raw = False

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    async def _request(self, call: APICall[Any]) -> Any:
        return await self._client._pipeline.request(
            replace(call, raw=self._raw) if self._raw else call
        )


def _raw_twin_method(method: Callable[..., Any]) -> Any:
    resource = copy.copy(method.__self__)  # type: ignore[attr-defined]
    resource._raw = True
    return getattr(resource, method.__name__)


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


def split_options(params: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Separate the per-call options (headers, body extras, timeout, retries) from the body fields."""
    body = dict(params)
    options = {key: body.pop(key) for key in OPTION_KEYS if key in body}
    return body, options


def check_keywords(given: Collection[str], allowed: Collection[str], method: str) -> None:
    """A TypeError naming an unexpected keyword argument and the closest allowed one."""
    for name in given:
        if name not in allowed:
            close = difflib.get_close_matches(name, list(allowed), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise TypeError(f"{method}() got an unexpected keyword argument {name!r}{hint}")


def keyword_signature(params_type: type, *, positional: tuple[str, ...] = ()) -> Callable[[F], F]:
    """Give a ``**params: Unpack[TypedDict]`` method a signature listing the keywords.

    ``help()``, Jupyter's tooltips and ``inspect.signature`` then show the real parameters,
    defined once in the TypedDict.
    """
    hints = get_type_hints(params_type)  # plain types, for display
    # __required_keys__ is unreliable under postponed annotations; read Required[...] itself.
    required = [
        name
        for name, hint in get_type_hints(params_type, include_extras=True).items()
        if get_origin(hint) is Required
    ]
    order = required + [name for name in hints if name not in required]

    def decorate(method: F) -> F:
        existing = inspect.signature(method).parameters
        parameters = [p for name, p in existing.items() if name == "self" or name in positional]
        for name in order:
            hint = hints[name]
            default = inspect.Parameter.empty if name in required else UNSET
            parameters.append(
                inspect.Parameter(
                    name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hint
                )
            )
        method.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            parameters, return_annotation=inspect.signature(method).return_annotation
        )
        return method

    return decorate
