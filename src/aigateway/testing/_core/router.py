"""Routing in the mock gateway: which handler answers a request (`Router`).

Paths are matched as sent, without the query: exact paths first, then prefixes (the longest
that matches), whose rest, percent-decoded, is the handler's ``ctx.argument``. A path no route
knows is a 404, a known path with another method a 405 naming the allowed ones. What a
handler gets and returns is in `aigateway.testing._core.context`.
"""

from __future__ import annotations

import threading
import urllib.parse
from collections.abc import Callable

from aigateway.testing._core.context import Handler, RequestContext
from aigateway.testing._core.wire import INVALID, MockRequest, MockResponse, error_response

__all__ = ["Router"]


class Router:
    """Routes by method and path: exact paths, then the longest matching prefix."""

    def __init__(self) -> None:
        self._exact: dict[str, dict[str, Handler]] = {}
        self._prefixes: list[tuple[str, dict[str, Handler]]] = []
        self._lock = threading.Lock()

    def add(self, method: str, path: str, handler: Handler, *, prefix: bool = False) -> None:
        """Answer ``method path`` with ``handler`` (replacing a route already there); with
        ``prefix``, every path under ``path`` (its rest is ``ctx.argument``)."""
        if not path.startswith("/"):
            raise ValueError(f"a route's path starts with '/', got {path!r}")
        method = method.upper()
        with self._lock:
            if not prefix:
                self._exact.setdefault(path.rstrip("/") or "/", {})[method] = handler
                return
            for known, handlers in self._prefixes:
                if known == path:
                    handlers[method] = handler
                    return
            self._prefixes.append((path, {method: handler}))
            self._prefixes.sort(key=lambda item: len(item[0]), reverse=True)

    def match(self, path: str) -> tuple[dict[str, Handler], str]:
        """The handlers by method for ``path`` and the path's rest (empty when none match)."""
        exact = self._exact.get(path.rstrip("/") or "/")
        if exact:
            return exact, ""
        for prefix, handlers in self._prefixes:
            if path.startswith(prefix) and len(path) > len(prefix):
                return handlers, urllib.parse.unquote(path[len(prefix) :])
        return {}, ""

    def route(self, request: MockRequest, context: Callable[[str], RequestContext]) -> MockResponse:
        """Answer ``request`` with its route's handler, given ``context(argument)``, or the
        404 / 405."""
        handlers, argument = self.match(request.path)
        if not handlers:
            return error_response(
                404, f"no route for {request.method} {request.path}", INVALID, "not_found"
            )
        handler = handlers.get(request.method)
        if handler is None:
            allowed = ", ".join(handlers)
            return error_response(
                405,
                f"method {request.method} is not allowed on {request.path} (allowed: {allowed})",
                INVALID,
                "method_not_allowed",
                headers={"allow": allowed},
            )
        return handler(context(argument))
