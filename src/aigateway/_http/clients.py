"""The httpx clients the SDK makes when it is given none: httpx's own, with a cookie jar that
skips the work for a reply that sets no cookie, (sync) a transport whose reads end at the call's
deadline (`aigateway._http.sync_transport`) and (async) the pool chosen per event loop
(`aigateway._http.async_pools`). A client given as ``http_client=`` is used as it is."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    from httpx._types import CookieTypes

__all__ = ["AsyncHTTPClient", "HTTPClient", "ReplyCookies"]


class ReplyCookies(httpx.Cookies):
    """httpx's cookie jar, which reads a reply's cookies only when it has some.

    httpx copies every reply's request and headers into urllib's shapes to look for
    ``Set-Cookie`` (about 25 µs a reply, more than the SDK's own work on a small completion);
    the standard library's jar reads nothing but ``Set-Cookie`` and ``Set-Cookie2``, so a reply
    without either is skipped before any copy. What is kept and sent back is unchanged."""

    def extract_cookies(self, response: httpx.Response) -> None:
        headers = response.headers
        if "set-cookie" in headers or "set-cookie2" in headers:
            super().extract_cookies(response)


class _ReplyCookiesMixin:
    """The client's ``cookies`` are a `ReplyCookies` (httpx reads and sets them only through
    this property), from the start and after ``client.cookies = ...``."""

    _reply_cookies: ReplyCookies

    def __init__(self, *args: Any, cookies: CookieTypes | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.cookies = cookies

    @property
    def cookies(self) -> httpx.Cookies:
        return self._reply_cookies

    @cookies.setter
    def cookies(self, cookies: CookieTypes | None) -> None:
        self._reply_cookies = ReplyCookies(cookies)


class _OwnPoolsMixin:
    """The client's own pools (the direct one and one per proxy from the environment) are made
    by `_pool`; a ``transport=`` given is used as it is."""

    def _pool(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def _init_transport(self, *args: Any, transport: Any = None, **kwargs: Any) -> Any:
        kwargs.pop("app", None)  # httpx 0.27's deprecated argument, never given by us
        return transport if transport is not None else self._pool(*args, **kwargs)

    def _init_proxy_transport(self, proxy: httpx.Proxy, *args: Any, **kwargs: Any) -> Any:
        return self._pool(*args, proxy=proxy, **kwargs)


class HTTPClient(_ReplyCookiesMixin, _OwnPoolsMixin, httpx.Client):
    """`httpx.Client` with `ReplyCookies`, whose own pools are `DeadlineTransport`s, so a
    call's deadline also bounds a reply's head; a SOCKS proxy's pool is httpx's own."""

    def _pool(self, *args: Any, **kwargs: Any) -> httpx.BaseTransport:
        proxy = kwargs.get("proxy")
        if proxy is not None and proxy.url.scheme not in ("http", "https"):
            return httpx.HTTPTransport(*args, **kwargs)
        from aigateway._http.sync_transport import DeadlineTransport

        return DeadlineTransport(*args, **kwargs)


class AsyncHTTPClient(_ReplyCookiesMixin, _OwnPoolsMixin, httpx.AsyncClient):
    """`httpx.AsyncClient` with `ReplyCookies`, whose own pools are `AutoTransport`s (the
    pool chosen per event loop)."""

    def _pool(self, *args: Any, **kwargs: Any) -> httpx.AsyncBaseTransport:
        from aigateway._http.async_pools import AutoTransport

        return AutoTransport(*args, **kwargs)
