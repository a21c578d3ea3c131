"""The http clients the SDK makes when it is given none, on either HTTP stack (httpx or
httpx2), from their public API only: the stack's client over our own pool (sync: a transport
whose reads end at the call's deadline, `aigateway._http.sync_transport`; async: the pool
chosen per event loop, `aigateway._http.async_pools`), with the environment's proxies mounted
as the stack would mount them itself (it reads none once given a ``transport=``). On httpx,
the client's cookie jar skips the work for a reply that sets no cookie (httpx2's does so
itself). A client given as ``http_client=`` is used as it is.
"""

from __future__ import annotations

import ipaddress
import urllib.request
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    from aigateway._stacks import HTTPClient as AnyHTTPClient
    from aigateway._stacks import Stack, Timeout

__all__ = [
    "AsyncHTTPClient",
    "HTTPClient",
    "ReplyCookies",
    "environment_proxies",
    "own_http_client",
]

POOL_LIMITS: dict[str, Any] = {"max_connections": 100, "max_keepalive_connections": 20}
"""The limits of a client's own pools: those both stacks give a client by default."""


def own_http_client(
    stack: Stack, *, timeout: Timeout, asynchronous: bool, transport: Any = None
) -> AnyHTTPClient:
    """The http client of a `Client` (``asynchronous`` False) or an `AsyncClient` on
    ``stack``: over ``transport`` when one is given (as the stack would, no proxies from the
    environment), else over our own pool, the environment's proxies each on a pool of its own."""
    client_type: Any = _client_type(stack, asynchronous)
    if transport is not None:
        return client_type(timeout=timeout, transport=transport)  # type: ignore[no-any-return]
    pool = _async_pool if asynchronous else _sync_pool
    proxies = environment_proxies(stack)
    mounts = {
        pattern: None if url is None else pool(stack, proxy=stack.module.Proxy(url))
        for pattern, url in proxies.items()
    }
    return client_type(timeout=timeout, transport=pool(stack), mounts=mounts)  # type: ignore[no-any-return]


def _client_type(stack: Stack, asynchronous: bool) -> type[Any]:
    if stack.module is httpx and stack.name == "httpx":
        return AsyncHTTPClient if asynchronous else HTTPClient
    return stack.AsyncClient if asynchronous else stack.Client


def _sync_pool(stack: Stack, proxy: Any = None) -> Any:
    """`DeadlineTransport` on ``stack`` (a SOCKS proxy's pool is the stack's own)."""
    options = {"limits": stack.module.Limits(**POOL_LIMITS), "proxy": proxy}
    if proxy is not None and proxy.url.scheme not in ("http", "https"):
        return stack.module.HTTPTransport(**options)
    from aigateway._http.sync_transport import deadline_transport

    return deadline_transport(stack)(**options)


def _async_pool(stack: Stack, proxy: Any = None) -> Any:
    """`AutoTransport` on ``stack``: the pool chosen per event loop."""
    from aigateway._http.async_pools import auto_transport

    return auto_transport(stack)(limits=stack.module.Limits(**POOL_LIMITS), proxy=proxy)


def environment_proxies(stack: Stack) -> dict[str, str | None]:
    """The proxies the environment asks for (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``,
    ``NO_PROXY``; the system's settings on macOS and Windows), as URL patterns of ``stack``'s
    ``mounts=`` and the proxy of each (None: no proxy there), read as httpx2 reads them:
    ``NO_PROXY=*`` is no proxy at all; a name in it (``example.com``, ``.example.com``,
    ``*.example.com``), an address or ``localhost`` goes direct. Entries that are no URL
    pattern are left out, as curl and Go do."""
    found = urllib.request.getproxies()
    mounts: dict[str, str | None] = {}
    for scheme in ("http", "https", "all"):
        address = found.get(scheme)
        if address:
            mounts[f"{scheme}://"] = address if "://" in address else f"http://{address}"
    for entry in (host.strip() for host in found.get("no", "").split(",")):
        if entry == "*":
            return {}
        pattern = _direct_pattern(entry) if entry else None
        if pattern is not None:
            mounts[pattern] = None
    invalid = stack.module.InvalidURL
    for pattern in list(mounts):
        try:
            stack.URL(pattern)
        except (invalid, ValueError):
            del mounts[pattern]
    return mounts


def _direct_pattern(entry: str) -> str | None:
    """The URL pattern of a ``NO_PROXY`` entry (None: a name with a path, which is none)."""
    if "://" in entry:
        return entry
    address, _, subnet = entry.partition("/")
    try:
        version = ipaddress.ip_address(address).version
    except ValueError:
        version = None
    if version == 4:
        return f"all://{entry}"
    if version == 6:
        return f"all://[{address}]/{subnet}" if subnet else f"all://[{address}]"
    if entry.lower() == "localhost" or entry.startswith("["):
        return f"all://{entry}"
    if "/" in entry:
        return None
    return f"all://{entry}" if entry.startswith("*.") else f"all://*{entry}"


class ReplyCookies(httpx.Cookies):
    """httpx's cookie jar, which reads a reply's cookies only when it has some.

    httpx copies every reply's request and headers into urllib's shapes to look for
    ``Set-Cookie`` (about 25 µs a reply, more than the SDK's own work on a small completion);
    the standard library's jar reads nothing but ``Set-Cookie`` and ``Set-Cookie2``, so a reply
    without either is skipped before any copy. What is kept and sent back is unchanged
    (httpx2's own jar skips such replies already)."""

    def extract_cookies(self, response: httpx.Response) -> None:
        headers = response.headers
        if "set-cookie" in headers or "set-cookie2" in headers:
            super().extract_cookies(response)


class _ReplyCookiesMixin:
    """The client's ``cookies`` are a `ReplyCookies` (httpx reads and sets them only through
    this public property), from the start and after ``client.cookies = ...``."""

    _reply_cookies: ReplyCookies

    def __init__(self, *args: Any, cookies: Any = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.cookies = cookies

    @property
    def cookies(self) -> httpx.Cookies:
        return self._reply_cookies

    @cookies.setter
    def cookies(self, cookies: Any) -> None:
        self._reply_cookies = ReplyCookies(cookies)


class HTTPClient(_ReplyCookiesMixin, httpx.Client):
    """`httpx.Client` with `ReplyCookies`: the sync client's own on httpx."""


class AsyncHTTPClient(_ReplyCookiesMixin, httpx.AsyncClient):
    """`httpx.AsyncClient` with `ReplyCookies`: the async client's own on httpx."""
