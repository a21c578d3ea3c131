"""The sync client's own transport: httpx's `httpx.HTTPTransport`, built from public parts
over a network backend whose reads and writes end at the call's deadline.

httpx's sync stack waits for each read with a socket timeout that starts again at every
byte, so a server sending its status line and headers a byte at a time would hold a call
past its deadline (the request path checks it between pieces of a body, not within the head).
While the sync driver sends a request, `SEND_ENDS_AT` holds the time by which the head must
have come; every read and write of the connection then waits at most until then, and one
with no time left raises httpcore's timeout at once, which the request path reports as the
deadline's `APITimeoutError`. Only the client the SDK makes uses it: an ``http_client=`` or
``transport=`` given is used as it is.
"""

from __future__ import annotations

import time
import typing
from collections.abc import Iterable, Iterator

import httpcore
import httpx

from aigateway._call.timeouts import SEND_ENDS_AT

__all__ = ["DeadlineTransport"]

_ERRORS: dict[type[Exception], type[httpx.TransportError]] = {
    # the most precise first: an error is mapped by the first entry it is an instance of
    httpcore.ConnectTimeout: httpx.ConnectTimeout,
    httpcore.ReadTimeout: httpx.ReadTimeout,
    httpcore.WriteTimeout: httpx.WriteTimeout,
    httpcore.PoolTimeout: httpx.PoolTimeout,
    httpcore.TimeoutException: httpx.TimeoutException,
    httpcore.ConnectError: httpx.ConnectError,
    httpcore.ReadError: httpx.ReadError,
    httpcore.WriteError: httpx.WriteError,
    httpcore.NetworkError: httpx.NetworkError,
    httpcore.ProxyError: httpx.ProxyError,
    httpcore.UnsupportedProtocol: httpx.UnsupportedProtocol,
    httpcore.LocalProtocolError: httpx.LocalProtocolError,
    httpcore.RemoteProtocolError: httpx.RemoteProtocolError,
    httpcore.ProtocolError: httpx.ProtocolError,
}
"""httpcore's errors and httpx's for them, as `httpx.HTTPTransport` maps them."""
_CORE_ERRORS = tuple(_ERRORS)


def _httpx_error(exc: Exception) -> httpx.TransportError:
    error = next(ours for core, ours in _ERRORS.items() if isinstance(exc, core))
    return error(str(exc))


class DeadlineTransport(httpx.BaseTransport):
    """`httpx.HTTPTransport` with the settings `httpx.Client` gives it (verify, cert,
    trust_env, http1, http2, limits, an HTTP(S) proxy), whose connections end each read and
    write at the sending call's deadline (`SEND_ENDS_AT`)."""

    def __init__(
        self,
        *,
        verify: typing.Any = True,
        cert: typing.Any = None,
        trust_env: bool = True,
        http1: bool = True,
        http2: bool = False,
        limits: httpx.Limits,
        proxy: httpx.Proxy | None = None,
    ) -> None:
        ssl_context = httpx.create_ssl_context(verify=verify, cert=cert, trust_env=trust_env)
        backend = _DeadlineBackend(httpcore.SyncBackend())
        pool_options: dict[str, typing.Any] = {
            "ssl_context": ssl_context,
            "max_connections": limits.max_connections,
            "max_keepalive_connections": limits.max_keepalive_connections,
            "keepalive_expiry": limits.keepalive_expiry,
            "http1": http1,
            "http2": http2,
            "network_backend": backend,
        }
        self._pool: httpcore.ConnectionPool
        if proxy is None:
            self._pool = httpcore.ConnectionPool(**pool_options)
        else:
            url = proxy.url
            self._pool = httpcore.HTTPProxy(
                proxy_url=httpcore.URL(
                    scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path
                ),
                proxy_auth=proxy.raw_auth,
                proxy_headers=proxy.headers.raw,
                proxy_ssl_context=proxy.ssl_context,
                **pool_options,
            )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        sent = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path
            ),
            headers=request.headers.raw,
            content=typing.cast("Iterable[bytes]", request.stream),
            extensions=request.extensions,
        )
        try:
            reply = self._pool.handle_request(sent)
        except _CORE_ERRORS as exc:
            raise _httpx_error(exc) from exc
        return httpx.Response(
            status_code=reply.status,
            headers=reply.headers,
            stream=_ReplyStream(typing.cast("Iterable[bytes]", reply.stream)),
            extensions=reply.extensions,
        )

    def close(self) -> None:
        try:
            self._pool.close()
        except _CORE_ERRORS as exc:
            raise _httpx_error(exc) from exc


class _ReplyStream(httpx.SyncByteStream):
    """A reply's body from httpcore, with httpx's errors."""

    def __init__(self, body: Iterable[bytes]) -> None:
        self._body = body

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._body
        except _CORE_ERRORS as exc:
            raise _httpx_error(exc) from exc

    def close(self) -> None:
        close = getattr(self._body, "close", None)
        if close is not None:
            close()


def _within(timeout: float | None, error: type[Exception]) -> float | None:
    """``timeout`` lowered to the time the sending call has left; ``error`` when none is."""
    ends_at = SEND_ENDS_AT.get()
    if ends_at is None:
        return timeout
    left = ends_at - time.monotonic()
    if left <= 0:
        raise error("the call's deadline ran out")
    return left if timeout is None or timeout > left else timeout


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's sync backend, whose connections end each wait at the call's deadline."""

    def __init__(self, backend: httpcore.NetworkBackend) -> None:
        self._backend = backend

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        timeout = _within(timeout, httpcore.ConnectTimeout)
        stream = self._backend.connect_tcp(host, port, timeout, local_address, socket_options)
        return _DeadlineStream(stream)

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose reads and writes wait at most until the call's deadline."""

    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _within(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _within(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self,
        ssl_context: typing.Any,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        timeout = _within(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._stream.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> typing.Any:
        return self._stream.get_extra_info(info)
