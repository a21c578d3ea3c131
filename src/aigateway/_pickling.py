"""Pickling errors and raw replies (``with_raw_response``): the request inside (and the
response's) with credentials redacted, open streams and anything else that cannot be pickled
left out. Imported only when one is pickled, so ``import aigateway`` does not load `pickle`.

Objects that hold a connection refuse to be pickled (`aigateway._closing`), and so does the
key itself (`aigateway._call.settings.Secret`)."""

from __future__ import annotations

import copy
import pickle
from typing import TYPE_CHECKING, Any

from aigateway._stacks import stack_of

if TYPE_CHECKING:
    from aigateway._stacks import Request, Response

__all__ = ["picklable", "restore_error"]


def restore_error(
    cls: type[BaseException], args: tuple[Any, ...], state: dict[str, Any]
) -> BaseException:
    """Rebuild a pickled error without calling its ``__init__`` (whose arguments differ)."""
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


_SECRET_HEADERS = ("authorization", "proxy-authorization")


def picklable(value: Any) -> Any:
    """``value`` made safe to pickle: requests and replies without credentials or open
    streams, anything else as is when it pickles, else None."""
    stack = stack_of(value)
    if stack is not None and isinstance(value, stack.Request):
        value = _redacted_request(value)
    elif stack is not None and isinstance(value, stack.Response):
        value = _detached_response(value)
    try:
        pickle.dumps(value)
    except Exception:
        return None
    return value


def _redacted_request(request: Request) -> Request:
    """A copy of ``request`` (body kept when read, stream left out) whose credentials read
    ``<scheme> <redacted>``."""
    clone = copy.copy(request)  # httpx's own pickling state: no stream, no extensions
    clone.headers = request.headers.copy()
    for name in _SECRET_HEADERS:
        if name in clone.headers:
            scheme, space, _ = clone.headers[name].strip().partition(" ")
            clone.headers[name] = f"{scheme} <redacted>" if space else "<redacted>"
    return clone


def _detached_response(response: Response) -> Response:
    """A copy of ``response`` (status, headers, body when read) with a redacted request and
    no stream or redirect history."""
    clone = copy.copy(response)
    clone.history = []
    try:
        request = response.request
    except RuntimeError:  # a reply made without one: the public property says so
        return clone
    clone.request = _redacted_request(request)
    return clone
