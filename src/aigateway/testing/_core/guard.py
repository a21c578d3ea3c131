"""What stands between a request and the mock's router: body size, rate limits, idempotency.

`guarded` answers one request the way the real gateway's front door would, in this order:

1. a body larger than the gateway's ``max_body_bytes`` (as sent, or as its ``Content-Length``
   declares it) is a 413;
2. the key is looked up (an unknown or missing key goes straight to the router, which answers
   401; limits are per key, so there is nothing to count);
3. the key's rate limits admit the request, or it gets a 429 (`_ratelimits`);
4. a POST with ``Idempotency-Key`` is replayed or refused when the key was seen (`_idempotency`);
5. the router answers; a 2xx reply to an idempotent POST is remembered;
6. the request stops counting as in flight when its reply is complete (for a stream, when its
   body ends or is closed) and its tokens (from the ledger's charge) count towards the
   tokens-per-minute window.

Every reply carries the ``X-RateLimit-*`` headers: an admitted one the key's after counting it,
one that counted nothing (a 413, a 401) `rate_limit_headers`: the key's, or the default limits
with nothing used for a caller without a valid key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from aigateway.testing._pacing import AsyncBody
from aigateway.testing._wire import MockRequest, MockResponse, declared_length, error_response

if TYPE_CHECKING:
    from aigateway.testing._gateway import MockGateway

__all__ = ["guarded", "rate_limit_headers"]


def rate_limit_headers(gateway: MockGateway, request: MockRequest) -> dict[str, str]:
    """The ``X-RateLimit-*`` headers of a reply that counted no request: those of the
    request's key, or the default limits with nothing used when it has no valid key."""
    key = request.bearer_key
    known = gateway.ledger.account(key) is not None
    return gateway.rate_limits.headers(key if known else None)


def _uncounted(gateway: MockGateway, request: MockRequest, response: MockResponse) -> MockResponse:
    for name, value in rate_limit_headers(gateway, request).items():
        response.headers.setdefault(name, value)
    return response


def guarded(
    gateway: MockGateway,
    request: MockRequest,
    request_id: str,
    route: Callable[[], MockResponse],
    *,
    on_refused: Callable[[], None],
) -> MockResponse:
    """Answer ``request`` through the body limit, rate limits and idempotency, with ``route``
    doing the work; ``on_refused`` is called when the body limit or a rate limit refuses it."""
    limit = gateway.max_body_bytes
    if max(len(request.body), declared_length(request.headers)) > limit:
        too_large = error_response(
            413,
            f"the request body is larger than this gateway's limit of {limit} bytes",
            "invalid_request_error",
            "request_too_large",
        )
        on_refused()
        return _uncounted(gateway, request, too_large)
    account = gateway.ledger.account(request.bearer_key)
    if account is None:
        return _uncounted(gateway, request, route())
    limiter = gateway.rate_limits
    admission = limiter.admit(account.key)
    if not admission.ok:
        on_refused()
        return error_response(
            429, admission.message, "rate_limit_error", admission.code, headers=admission.headers
        )
    finished = False

    def finish() -> None:
        nonlocal finished
        if not finished:
            finished = True
            charge = gateway.ledger.charge_for(request_id)
            tokens = charge.prompt_tokens + charge.completion_tokens if charge else 0
            limiter.finish(account.key, tokens)

    try:
        idempotency_key = request.headers.get("idempotency-key", "").strip()
        if idempotency_key and request.method == "POST":
            store = gateway.idempotency
            response = store.begin(account.id, idempotency_key, request)
            if response is None:
                try:
                    response = store.finish(account.id, idempotency_key, route())
                except BaseException:
                    store.abandon(account.id, idempotency_key)
                    raise
        else:
            response = route()
    except BaseException:
        finish()
        raise
    response.headers.update(admission.headers)
    if isinstance(response.body, bytes):
        finish()
    else:
        response.body = _UntilDone(response.body, finish)
    return response


class _UntilDone:
    """The body, calling ``finish`` once it ends, fails or is closed (even unstarted)."""

    def __init__(self, body: Iterator[bytes], finish: Callable[[], None]) -> None:
        self._body = body
        self._finish = finish

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        try:
            return next(self._body)
        except BaseException:
            self.close()
            raise

    def __aiter__(self) -> _UntilDone:
        self._events = AsyncBody(self._body)
        return self

    async def __anext__(self) -> bytes:
        try:
            return await self._events.__anext__()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        try:
            close = getattr(self._body, "close", None)
            if callable(close):
                close()
        finally:
            self._finish()
