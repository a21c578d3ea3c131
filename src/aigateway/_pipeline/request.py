"""The HTTP request of one attempt of a call: URL, headers, body and timeout.

The request is made with the ``Request`` class of the http client's stack (httpx or httpx2:
one stack's objects break the other's clients) from headers merged here, in one pass: the http
client's own headers, less those the call sets, then the call's, then the ``Host`` and
``Content-Length`` the stack's ``Request`` would add. That is what the http client's
``build_request`` does, without its copy of the client's headers, a removal per overridden
name, and the ``Request``'s second pass over the headers to add its own (together about three
quarters of the cost of building one). An http client with cookies or query parameters of its
own is left to merge them itself.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aigateway._call.call import encode_json
from aigateway._call.settings import ClientConfig, SecretText, coerce_timeout, with_headers
from aigateway._http.body import accept_encoding
from aigateway._stacks import DEFAULT_STACK, get, stack_of
from aigateway._version import __version__

if TYPE_CHECKING:
    from aigateway._call.call import APICall
    from aigateway._stacks import URL, Headers, HTTPClient, Request, Timeout

__all__ = ["RequestBuilder", "client_headers", "new_idempotency_key"]

_URL_CACHE_SIZE = 256
"""Paths whose URL a builder remembers (ids in paths vary; the cache must not grow without end)."""
_JSON_HEADERS = {"Content-Type": "application/json"}
_EMPTY_BODY_LENGTH = {"POST", "PUT", "PATCH", "QUERY"}
"""The methods a request without a body says ``Content-Length: 0`` for, as the stacks do."""


def client_headers(config: ClientConfig) -> dict[str, str]:
    """The headers every request of a client carries: its key, what it accepts (the
    encodings it decodes in bounded pieces only), who it is, then ``default_headers``."""
    own = {
        "Authorization": SecretText(f"Bearer {config.api_key.reveal()}"),
        "Accept": "application/json",
        "Accept-Encoding": accept_encoding(),
        "User-Agent": f"aigateway-python/{__version__}",
    }
    return with_headers(own, config.default_headers)


def new_idempotency_key() -> str:
    """A fresh idempotency key (a random UUID), to pass as ``idempotency_key=`` and keep, so
    the same call can be repeated later (even from another process) without acting twice."""
    return str(uuid.uuid4())


class RequestBuilder:
    """Builds the requests of one client object (its config on its http client)."""

    def __init__(self, config: ClientConfig, http_client: HTTPClient):
        self.config = config
        self.http_client = http_client
        self._headers = client_headers(config)
        self._urls: dict[str, tuple[URL, bool, bytes]] = {}
        self._stack = stack = stack_of(http_client) or get(DEFAULT_STACK)
        self._request_type: Callable[..., Request] = stack.Request
        self._byte_stream: Callable[[bytes], Any] = stack.module.ByteStream
        base = config.base_url
        self._base_url = base if isinstance(base, stack.URL) else stack.URL(str(base))

    def build(self, call: APICall[Any], timeout: Timeout | None = None) -> Request:
        """The request for ``call``; ``timeout`` replaces the call's (a stream's read limit)."""
        options = call.options
        headers: dict[str, str] = dict(self._headers)
        if call.body is not None:
            headers.update(_JSON_HEADERS)
        if call.stream:
            headers["Accept"] = "text/event-stream"
        idempotency_key = options.get("idempotency_key")
        if idempotency_key:
            headers["Idempotency-Key"] = idempotency_key
        elif self.config.auto_idempotency_keys and call.method == "POST":
            headers["Idempotency-Key"] = new_idempotency_key()
        extra_headers = options.get("extra_headers")
        if extra_headers:
            headers = with_headers(headers, extra_headers)
        body = call.body
        extra_body = options.get("extra_body")
        if extra_body:
            body = encode_json({**(call.payload or {}), **extra_body}, "extra_body")
        url, same_origin, host = self._url_for(call.path)
        if not same_origin:
            headers.pop("Authorization", None)  # the key goes to the gateway only
        if timeout is None:
            timeout = self.timeout_of(call)
        http: Any = self.http_client  # its stack's URL and Timeout, as the client's own are
        if http.cookies or http.params:
            request: Request = http.build_request(
                call.method, url, headers=headers, content=body, timeout=timeout
            )
            return request
        if body:
            length: bytes | None = str(len(body)).encode()
        else:
            body, length = b"", b"0" if call.method in _EMPTY_BODY_LENGTH else None
        request = self._request_type(
            call.method,
            url,
            headers=_merge(http.headers, headers, host, length),
            stream=self._byte_stream(body),
            extensions={"timeout": timeout.as_dict()},
        )
        request.read()  # as a Request given its content: ``.content`` readable (event hooks)
        return request

    def timeout_of(self, call: APICall[Any]) -> Timeout:
        """The call's ``timeout=`` option, or the client's."""
        options = call.options
        if "timeout" in options:
            return coerce_timeout(options["timeout"], self._stack)
        return self.config.timeout

    def _url_for(self, path: str) -> tuple[URL, bool, bytes]:
        """The absolute URL of a path, whether it is on the gateway's origin, and its ``Host``
        header; the common paths are remembered, since joining URLs is the costliest step of
        building a request."""
        known = self._urls.get(path)
        if known is None:
            base = self._base_url
            url = base.join(path)
            same_origin = (url.scheme, url.host, url.port) == (base.scheme, base.host, base.port)
            known = (url, same_origin, url.netloc)
            if len(self._urls) < _URL_CACHE_SIZE:
                self._urls[path] = known
        return known


def _merge(
    defaults: Headers, headers: dict[str, str], host: bytes, length: bytes | None
) -> list[tuple[Any, Any]]:
    """The http client's headers less every one the call sets (whatever its case), then the
    call's, as ``Headers.update`` merges them (the client's kept as they were given); with
    ``Host`` and ``Content-Length`` (None: none) where the stack's ``Request`` puts them,
    unless a header already names them (or, for the length, ``Transfer-Encoding``): first, or
    the length last when there is a body."""
    overridden = {name.lower().encode("latin-1") for name in headers}
    kept = [(name, value) for name, value in defaults.raw if name.lower() not in overridden]
    present = overridden.union([name.lower() for name, _ in kept])
    merged: list[tuple[Any, Any]] = [] if b"host" in present else [(b"Host", host)]
    if b"content-length" in present or b"transfer-encoding" in present:
        length = None
    if length == b"0":
        merged.append((b"Content-Length", length))
    merged += kept
    merged += headers.items()
    if length is not None and length != b"0":
        merged.append((b"Content-Length", length))
    return merged
