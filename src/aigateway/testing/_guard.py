"""What stands between a request and the mock's router: rate limits and idempotency keys.

`guarded` answers one request the way the real gateway's front door would, in this order:

1. the key is looked up (an unknown or missing key goes straight to the router, which answers
   401; limits are per key, so there is nothing to count);
2. the key's rate limits admit the request, or it gets a 429 (`_ratelimits`);
3. a POST with ``Idempotency-Key`` is replayed or refused when the key was seen (`_idempotency`);
4. the router answers; a 2xx reply to an idempotent POST is remembered;
5. the request stops counting as in flight when its reply is complete (for a stream, when its
   body ends or is closed) and its tokens (from the ledger's charge) count towards the
   tokens-per-minute window; every reply carries the ``X-RateLimit-*`` headers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING

from ._pacing import aiter_body
from ._wire import MockRequest, MockResponse, error_response

if TYPE_CHECKING:
    from ._gateway import MockGateway

__all__ = ["guarded"]


def guarded(
    gateway: MockGateway,
    request: MockRequest,
    request_id: str,
    route: Callable[[], MockResponse],
) -> MockResponse:
    """Answer ``request`` through rate limits and idempotency, with ``route`` doing the work."""
    scheme, _, key = request.headers.get("authorization", "").partition(" ")
    account = gateway.ledger.account(key.strip()) if scheme.lower() == "bearer" else None
    if account is None:
        return route()
    limiter = gateway.rate_limits
    admission = limiter.admit(account.key)
    if not admission.ok:
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

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in aiter_body(self._body):
                yield chunk
        finally:
            self.close()

    def close(self) -> None:
        try:
            close = getattr(self._body, "close", None)
            if callable(close):
                close()
        finally:
            self._finish()
