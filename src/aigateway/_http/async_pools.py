"""The async client's connection pools, one per event loop, each made at the loop's first
request: aiohttp's on asyncio (several times httpx's throughput under many concurrent requests,
where httpx's pool scans every connection for every queued request), httpx's own on trio or
when aiohttp is missing. Made late because a client may be made outside any event loop, and
one per loop because a connection belongs to the loop that opened it: a module-level client
used by successive ``asyncio.run`` calls gets a pool in each, closed when its loop ends."""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator
from typing import Any

import httpx

from aigateway._call.settings import SecretText
from aigateway._http.loops import PerLoop, close_at_loop_end, current_loop, is_asyncio, start

__all__ = ["AutoTransport", "backend_for"]

ASYNCIO_BACKEND: str | None = None
"""``"httpx"`` or ``"aiohttp"`` to skip the choice on asyncio (the test suite runs on each)."""


HTTPX_POOL_LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=100)
"""httpx's pool's limits here (the openai package's): with httpx's own (100 connections), a
request that waits for a connection is queued in a pool that rescans every connection for
every waiting request, and throughput collapses past a few hundred requests in flight (at
1,024: 28 requests per second, 154 with these)."""


def backend_for(library: str) -> str:
    """The pool a client uses under the async ``library`` (``"asyncio"``, ``"trio"``)."""
    if library != "asyncio":
        return "httpx"
    if ASYNCIO_BACKEND is not None:
        return ASYNCIO_BACKEND
    return "aiohttp" if importlib.util.find_spec("httpx_aiohttp") is not None else "httpx"


class AutoTransport(httpx.AsyncBaseTransport):
    """Builds a pool with httpx's settings (verify, cert, trust_env, limits, proxy) at the first
    request in each event loop, once the running async library is known.

    A pool is closed by its loop's end (`close_at_loop_end`) or by ``aclose()``, and never
    used from another loop: each loop finds its own (one identity check per request while
    the loop is the last one used)."""

    def __init__(self, *args: Any, **options: Any) -> None:
        self._args = args
        self._options = options
        self.backend: str | None = None
        """The kind of the last pool made: ``"aiohttp"`` or ``"httpx"``."""
        self._pools: PerLoop[_LoopPool] = PerLoop(self._open)

    @property
    def pool(self) -> httpx.AsyncBaseTransport | None:
        """The pool of the loop of the last request (None before any, or after ``aclose()``)."""
        last = self._pools.last
        return None if last is None else last.pool

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self._pools.get().pool.handle_async_request(request)

    def _open(self, loop: object) -> _LoopPool:
        self.backend = backend_for("asyncio" if is_asyncio(loop) else "trio")
        pool: httpx.AsyncBaseTransport
        if self.backend == "aiohttp":
            pool = _aiohttp_transport(*self._args, **self._options)
        else:
            options = {**self._options, "limits": HTTPX_POOL_LIMITS}
            pool = _HttpxPool(*self._args, **options)
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

    def __init__(
        self, pool: httpx.AsyncBaseTransport, pools: PerLoop[_LoopPool], loop: object
    ) -> None:
        self.pool = pool

        async def close() -> None:
            pools.pop(loop, self)
            await pool.aclose()

        self.keeper = close_at_loop_end(close)
        start(self.keeper)


class _HttpxPool(httpx.AsyncHTTPTransport):
    """httpx's pool, sending a request's body from an iterator object: httpx's own is an async
    generator, which a send cancelled mid-write leaves suspended for the garbage collector
    (and trio warns of each)."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if type(request.stream) is httpx.ByteStream:
            request.stream = _Content(request.content)
        return await super().handle_async_request(request)


class _Content(httpx.AsyncByteStream):
    """A request body of bytes, read once per attempt."""

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


def _aiohttp_transport(*args: Any, **options: Any) -> httpx.AsyncBaseTransport:
    from httpx_aiohttp import AiohttpTransport

    class AiohttpPool(AiohttpTransport):
        """httpx-aiohttp's transport with aiohttp's errors mapped as httpx's pool raises
        them: a dropped connection is a connection error, not a connect timeout."""

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            request.headers = CredentialHeaders(request.headers)
            try:
                response = await super().handle_async_request(request)
            except Exception as exc:
                raise _as_httpx_error(exc, request) from exc
            assert isinstance(response.stream, httpx.AsyncByteStream)
            response.stream = _Body(response.stream, request)
            return response

    return AiohttpPool(*args, **options)


class CredentialHeaders(httpx.Headers):
    """A request's headers as aiohttp reads them (``items()``), the credentials as
    `SecretText`: aiohttp copies them into plain strings of its own, and a traceback rendered
    with locals after a failed request would show the key in its frames."""

    def items(self) -> Any:
        return [
            (name, SecretText(value) if name in _CREDENTIALS else value)
            for name, value in super().items()
        ]


_CREDENTIALS = frozenset({"authorization", "proxy-authorization"})


class _Body(httpx.AsyncByteStream):
    def __init__(self, stream: httpx.AsyncByteStream, request: httpx.Request) -> None:
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


def _as_httpx_error(exc: Exception, request: httpx.Request, *, reading: bool = False) -> Exception:
    """The httpx error httpx's own pool raises for what aiohttp raised (``exc`` or its cause)."""
    import asyncio
    import ssl

    import aiohttp

    cause = exc.__cause__ if isinstance(exc, httpx.HTTPError) and exc.__cause__ else exc
    if not isinstance(cause, aiohttp.ClientError | asyncio.TimeoutError | OSError | ssl.SSLError):
        return exc  # httpx's own errors, and anything that is no I/O failure, pass as they are
    message = str(cause) or type(cause).__name__
    error: httpx.TransportError
    if isinstance(cause, aiohttp.ConnectionTimeoutError):
        error = httpx.ConnectTimeout(message)
    elif isinstance(cause, aiohttp.SocketTimeoutError):
        error = httpx.ReadTimeout(message)
    elif isinstance(cause, asyncio.TimeoutError):
        error = httpx.ReadTimeout(message) if reading else httpx.ConnectTimeout(message)
    elif isinstance(cause, aiohttp.ClientProxyConnectionError | aiohttp.ClientHttpProxyError):
        error = httpx.ProxyError(message)
    elif isinstance(cause, aiohttp.ClientConnectorError | ssl.SSLError):
        error = httpx.ConnectError(message)
    elif isinstance(cause, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError):
        error = httpx.RemoteProtocolError(message)
    elif isinstance(cause, aiohttp.ClientResponseError):
        error = httpx.RemoteProtocolError(message)
    elif reading:
        error = httpx.ReadError(message)
    else:
        error = httpx.ConnectError(message)
    error.request = request
    return error
