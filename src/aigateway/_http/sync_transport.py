"""The sync client's own transport: the HTTP stack's ``HTTPTransport``, built from public
parts over a network backend whose reads and writes end at the call's deadline.

httpx's sync stack (httpx2's too) waits for each read with a socket timeout that starts again
at every byte, so a server sending its status line and headers a byte at a time would hold a
call past its deadline (the request path checks it between pieces of a body, not within the
head). While the sync driver sends a request, `SEND_ENDS_AT` holds the time by which the head
must have come; every read and write of the connection then waits at most until then, and
one with no time left raises the connection library's timeout at once, which the request
path reports as the deadline's `APITimeoutError`. Only the client the SDK makes uses it: an
``http_client=`` or ``transport=`` given is used as it is.

One class serves both stacks (`deadline_transport` gives the one of a stack): httpx over
httpcore, httpx2 over httpcore2, the same public names in each.
"""

from __future__ import annotations

import time
import typing
from collections.abc import Iterable, Iterator
from types import ModuleType

from aigateway._call.timeouts import SEND_ENDS_AT

if typing.TYPE_CHECKING:
    from aigateway._stacks import Request, Response, Stack

__all__ = ["DeadlineTransport", "deadline_transport"]

_ERROR_NAMES = (
    # the most precise first: an error is mapped by the first entry it is an instance of
    "ConnectTimeout",
    "ReadTimeout",
    "WriteTimeout",
    "PoolTimeout",
    "TimeoutException",
    "ConnectError",
    "ReadError",
    "WriteError",
    "NetworkError",
    "ProxyError",
    "UnsupportedProtocol",
    "LocalProtocolError",
    "RemoteProtocolError",
    "ProtocolError",
)
"""The connection library's errors, each mapped to the stack's of the same name, as the
stack's ``HTTPTransport`` maps them."""


class _Errors:
    """A stack's map of its connection library's errors to its own."""

    def __init__(self, stack: Stack, core: ModuleType) -> None:
        self.pairs = [(getattr(core, name), getattr(stack.module, name)) for name in _ERROR_NAMES]
        self.core: tuple[type[Exception], ...] = tuple(core_error for core_error, _ in self.pairs)

    def mapped(self, exc: Exception) -> Exception:
        error = next(ours for core, ours in self.pairs if isinstance(exc, core))
        return error(str(exc))  # type: ignore[no-any-return]


def deadline_transport(stack: Stack) -> type[DeadlineTransport]:
    """`DeadlineTransport` as a transport of ``stack`` (a subclass of its ``BaseTransport``)."""
    return stack.subclass(DeadlineTransport, "BaseTransport")


class DeadlineTransport:
    """The stack's ``HTTPTransport`` with the settings its client gives it (verify, cert,
    trust_env, http1, http2, limits, an HTTP(S) proxy), whose connections end each read and
    write at the sending call's deadline (`SEND_ENDS_AT`). Made per stack by
    `deadline_transport`, whose class sets `stack`."""

    stack: Stack

    def __init__(
        self,
        *,
        verify: typing.Any = True,
        cert: typing.Any = None,
        trust_env: bool = True,
        http1: bool = True,
        http2: bool = False,
        limits: typing.Any,
        proxy: typing.Any = None,
    ) -> None:
        stack = self.stack
        self._core = core = stack.core()
        self._errors = _Errors(stack, core)
        self._response = stack.Response
        self._reply_stream: typing.Any = stack.subclass(_ReplyStream, "SyncByteStream")
        ssl_context = stack.module.create_ssl_context(verify=verify, cert=cert, trust_env=trust_env)
        backend = _DeadlineBackend(core.SyncBackend(), core)
        pool_options: dict[str, typing.Any] = {
            "ssl_context": ssl_context,
            "max_connections": limits.max_connections,
            "max_keepalive_connections": limits.max_keepalive_connections,
            "keepalive_expiry": limits.keepalive_expiry,
            "http1": http1,
            "http2": http2,
            "network_backend": backend,
        }
        if proxy is None:
            self._pool = core.ConnectionPool(**pool_options)
        else:
            url = proxy.url
            self._pool = core.HTTPProxy(
                proxy_url=core.URL(
                    scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path
                ),
                proxy_auth=proxy.raw_auth,
                proxy_headers=proxy.headers.raw,
                proxy_ssl_context=proxy.ssl_context,
                **pool_options,
            )

    def handle_request(self, request: Request) -> Response:
        core = self._core
        url = request.url
        sent = core.Request(
            method=request.method,
            url=core.URL(
                scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        try:
            reply = self._pool.handle_request(sent)
        except self._errors.core as exc:
            raise self._errors.mapped(exc) from exc
        return self._response(
            status_code=reply.status,
            headers=reply.headers,
            stream=self._reply_stream(reply.stream, self._errors),
            extensions=reply.extensions,
        )

    def close(self) -> None:
        try:
            self._pool.close()
        except self._errors.core as exc:
            raise self._errors.mapped(exc) from exc


class _ReplyStream:
    """A reply's body from the connection library, with the stack's errors (made a
    ``SyncByteStream`` of the stack by `DeadlineTransport`)."""

    def __init__(self, body: Iterable[bytes], errors: _Errors) -> None:
        self._body = body
        self._errors = errors

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._body
        except self._errors.core as exc:
            raise self._errors.mapped(exc) from exc

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


class _DeadlineBackend:
    """The connection library's sync backend, whose connections end each wait at the call's
    deadline (a ``NetworkBackend`` of httpcore or httpcore2 by its methods)."""

    def __init__(self, backend: typing.Any, core: ModuleType) -> None:
        self._backend = backend
        self._core = core

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[typing.Any] | None = None,
    ) -> _DeadlineStream:
        timeout = _within(timeout, self._core.ConnectTimeout)
        stream = self._backend.connect_tcp(host, port, timeout, local_address, socket_options)
        return _DeadlineStream(stream, self._core)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: typing.Any = None
    ) -> _DeadlineStream:
        timeout = _within(timeout, self._core.ConnectTimeout)
        stream = self._backend.connect_unix_socket(path, timeout, socket_options)
        return _DeadlineStream(stream, self._core)

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


class _DeadlineStream:
    """A connection whose reads and writes wait at most until the call's deadline (a
    ``NetworkStream`` of httpcore or httpcore2 by its methods)."""

    def __init__(self, stream: typing.Any, core: ModuleType) -> None:
        self._stream = stream
        self._core = core

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _within(timeout, self._core.ReadTimeout))  # type: ignore[no-any-return]

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _within(timeout, self._core.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self,
        ssl_context: typing.Any,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> _DeadlineStream:
        timeout = _within(timeout, self._core.ConnectTimeout)
        stream = self._stream.start_tls(ssl_context, server_hostname, timeout)
        return _DeadlineStream(stream, self._core)

    def get_extra_info(self, info: str) -> typing.Any:
        return self._stream.get_extra_info(info)
