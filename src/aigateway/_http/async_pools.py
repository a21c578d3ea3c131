"""The async client's connection pools, one per event loop, each made at the loop's first
request: aiohttp's on asyncio (several times httpx's throughput under many concurrent requests,
where httpx's pool scans every connection for every queued request), httpx's own on trio or
when aiohttp is missing. Made late because a client may be made outside any event loop, and
one per loop because a connection belongs to the loop that opened it: a module-level client
used by successive ``asyncio.run`` calls gets a pool in each, closed when its loop ends.

Each class here is written once and made one of each HTTP stack's (httpx, httpx2) when a
client on that stack needs it (`aigateway._stacks.Stack.subclass`): on asyncio, httpx-aiohttp's
transport for that stack (``httpx_aiohttp.httpx2`` for httpx2, from httpx-aiohttp 0.2), else
the stack's own pool."""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from aigateway._call.settings import SecretText
from aigateway._http.loops import PerLoop, close_at_loop_end, current_loop, is_asyncio, start
from aigateway._stacks import DEFAULT_STACK, get, stack_of

if TYPE_CHECKING:
    from aigateway._stacks import AsyncTransport, Request, Response, Stack

__all__ = ["AutoTransport", "auto_transport", "backend_for"]

ASYNCIO_BACKEND: str | None = None
"""``"httpx"`` or ``"aiohttp"`` to skip the choice on asyncio (the test suite runs on each)."""


HTTPX_POOL_LIMITS: dict[str, Any] = {"max_connections": 1000, "max_keepalive_connections": 100}
"""httpx's pool's limits here (the openai package's): with httpx's own (100 connections), a
request that waits for a connection is queued in a pool that rescans every connection for
every waiting request, and throughput collapses past a few hundred requests in flight (at
1,024: 28 requests per second, 154 with these)."""


def backend_for(library: str, stack: Stack | None = None) -> str:
    """The pool a client on ``stack`` (httpx by default) uses under the async ``library``
    (``"asyncio"``, ``"trio"``): ``"aiohttp"`` or ``"httpx"`` (the stack's own, httpx2's on
    httpx2, also when httpx-aiohttp has no transport for the stack)."""
    if library != "asyncio":
        return "httpx"
    if ASYNCIO_BACKEND is not None:
        return ASYNCIO_BACKEND
    module = "httpx_aiohttp" if stack is None or stack.name == "httpx" else stack.aiohttp_module
    try:
        found = importlib.util.find_spec(module) is not None
    except ImportError:  # a package of the name missing
        found = False
    return "aiohttp" if found else "httpx"


def auto_transport(stack: Stack) -> type[AutoTransport]:
    """`AutoTransport` as a transport of ``stack`` (a subclass of its ``AsyncBaseTransport``)."""
    return stack.subclass(AutoTransport, "AsyncBaseTransport")


class AutoTransport:
    """Builds a pool with its stack's settings (verify, cert, trust_env, limits, proxy) at the
    first request in each event loop, once the running async library is known (made per stack
    by `auto_transport`, whose class sets `stack`).

    A pool is closed by its loop's end (`close_at_loop_end`) or by ``aclose()``, and never
    used from another loop: each loop finds its own (one identity check per request while
    the loop is the last one used)."""

    stack: Stack

    def __init__(self, *args: Any, **options: Any) -> None:
        self._args = args
        self._options = options
        self.backend: str | None = None
        """The kind of the last pool made: ``"aiohttp"`` or ``"httpx"``."""
        self._pools: PerLoop[_LoopPool] = PerLoop(self._open)

    @property
    def pool(self) -> AsyncTransport | None:
        """The pool of the loop of the last request (None before any, or after ``aclose()``)."""
        last = self._pools.last
        return None if last is None else last.pool

    async def handle_async_request(self, request: Request) -> Response:
        return await self._pools.get().pool.handle_async_request(request)  # type: ignore[arg-type]

    def _open(self, loop: object) -> _LoopPool:
        stack = self.stack
        self.backend = backend_for("asyncio" if is_asyncio(loop) else "trio", stack)
        pool: Any
        if self.backend == "aiohttp":
            pool_type = stack.subclass(_AiohttpPool, stack.aiohttp_transport())
            pool = pool_type(*self._args, **self._options)
        else:
            limits = stack.module.Limits(**HTTPX_POOL_LIMITS)
            pool = stack.subclass(_HttpxPool, "AsyncHTTPTransport")(
                *self._args, **{**self._options, "limits": limits}
            )
        return _LoopPool(pool, self._pools, loop)

    async def aclose(self) -> None:
        """Close the pool of the running loop; those of other loops close when their loop ends
        (the client refuses requests from now on)."""
        entry = self._pools.pop(current_loop())
        if entry is not None:
            await entry.keeper.aclose()


class _LoopPool:
    """A pool and the generator that closes it, and forgets it, when its event loop ends."""

    __slots__ = ("keeper", "pool")

    def __init__(self, pool: AsyncTransport, pools: PerLoop[_LoopPool], loop: object) -> None:
        self.pool = pool

        async def close() -> None:
            pools.pop(loop, self)
            await pool.aclose()

        self.keeper = close_at_loop_end(close)
        start(self.keeper)


class _HttpxPool:
    """The stack's pool (``AsyncHTTPTransport``, made its subclass per stack), sending a
    request's body from an iterator object: the stack's own is an async generator, which a
    send cancelled mid-write leaves suspended for the garbage collector (and trio warns of
    each)."""

    stack: Stack

    def __init__(self, *args: Any, **options: Any) -> None:
        super().__init__(*args, **options)
        self._bytes_type = self.stack.module.ByteStream
        self._content_type = self.stack.subclass(_Content, "AsyncByteStream")

    async def handle_async_request(self, request: Any) -> Any:
        if type(request.stream) is self._bytes_type:
            request.stream = self._content_type(request.content)
        return await super().handle_async_request(request)  # type: ignore[misc]


class _Content:
    """A request body of bytes, read once per attempt (an ``AsyncByteStream`` of the
    stack)."""

    def __init__(self, content: bytes) -> None:
        self._content = content

    def __aiter__(self) -> AsyncIterator[bytes]:
        return _Once(self._content)


class _Once:
    """An async iterator of one item."""

    __slots__ = ("_item",)

    def __init__(self, item: bytes) -> None:
        self._item: bytes | None = item

    def __aiter__(self) -> _Once:
        return self

    async def __anext__(self) -> bytes:
        item, self._item = self._item, None
        if item is None:
            raise StopAsyncIteration
        return item


class _AiohttpPool:
    """httpx-aiohttp's transport for the stack (made its subclass per stack) with aiohttp's
    errors mapped as the stack's own pool raises them: a dropped connection is a connection
    error, not a connect timeout."""

    stack: Stack

    def __init__(self, *args: Any, **options: Any) -> None:
        super().__init__(*args, **options)
        self._headers_type: Any = self.stack.subclass(CredentialHeaders, "Headers")
        self._body_type = self.stack.subclass(_Body, "AsyncByteStream")

    async def handle_async_request(self, request: Any) -> Any:
        request.headers = self._headers_type(request.headers)
        try:
            response = await super().handle_async_request(request)  # type: ignore[misc]
        except Exception as exc:
            raise _as_httpx_error(exc, request) from exc
        response.stream = self._body_type(response.stream, request)
        return response


class CredentialHeaders:
    """A request's headers as aiohttp reads them (``items()``), the credentials as
    `SecretText`: aiohttp copies them into plain strings of its own, and a traceback rendered
    with locals after a failed request would show the key in its frames (the stack's
    ``Headers``, made its subclass per stack)."""

    def items(self) -> Any:
        return [
            (name, SecretText(value) if name in _CREDENTIALS else value)
            for name, value in super().items()  # type: ignore[misc]
        ]


_CREDENTIALS = frozenset({"authorization", "proxy-authorization"})


class _Body:
    """A reply's body from aiohttp, with the stack's errors (an ``AsyncByteStream`` of the
    stack)."""

    def __init__(self, stream: Any, request: Request) -> None:
        self._stream = stream
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._stream:
                yield chunk
        except Exception as exc:
            raise _as_httpx_error(exc, self._request, reading=True) from exc

    async def aclose(self) -> None:
        try:
            await self._stream.aclose()
        except Exception as exc:
            raise _as_httpx_error(exc, self._request, reading=True) from exc


def _as_httpx_error(exc: Exception, request: Request, *, reading: bool = False) -> Exception:
    """The error the stack's own pool raises for what aiohttp raised (``exc`` or its cause),
    of the request's stack (httpx's or httpx2's)."""
    import asyncio
    import ssl

    import aiohttp

    module: Any = (stack_of(request) or get(DEFAULT_STACK)).module
    cause = exc.__cause__ if isinstance(exc, module.HTTPError) and exc.__cause__ else exc
    if not isinstance(cause, aiohttp.ClientError | asyncio.TimeoutError | OSError | ssl.SSLError):
        return exc  # the stack's own errors, and anything that is no I/O failure, pass as they are
    message = str(cause) or type(cause).__name__
    if isinstance(cause, aiohttp.ConnectionTimeoutError):
        error = module.ConnectTimeout(message)
    elif isinstance(cause, aiohttp.SocketTimeoutError):
        error = module.ReadTimeout(message)
    elif isinstance(cause, asyncio.TimeoutError):
        error = module.ReadTimeout(message) if reading else module.ConnectTimeout(message)
    elif isinstance(cause, aiohttp.ClientProxyConnectionError | aiohttp.ClientHttpProxyError):
        error = module.ProxyError(message)
    elif isinstance(cause, aiohttp.ClientConnectorError | ssl.SSLError):
        error = module.ConnectError(message)
    elif isinstance(cause, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError):
        error = module.RemoteProtocolError(message)
    elif isinstance(cause, aiohttp.ClientResponseError):
        error = module.RemoteProtocolError(message)
    elif reading:
        error = module.ReadError(message)
    else:
        error = module.ConnectError(message)
    error.request = request
    return error  # type: ignore[no-any-return]
