"""What stands between a request and the mock's router: body size, rate limits, idempotency.

`Guard.guarded` answers one request the way the real gateway's front door would, in this
order:

1. a body larger than the gateway's ``max_body_bytes`` (as sent, or as its ``Content-Length``
   declares it) is a 413;
2. the key is looked up (an unknown or missing key goes straight to the router, which answers
   401; limits are per key, so there is nothing to count);
3. the key's rate limits admit the request, or it gets a 429 (`rate_limits`);
4. a POST with ``Idempotency-Key`` is replayed or refused when the key was seen (`idempotency`);
5. the router answers; a 2xx reply to an idempotent POST is remembered;
6. the request stops counting as in flight when its reply is complete (for a stream, when its
   body ends or is closed) and its tokens (from the ledger's charge) count towards the
   tokens-per-minute window.

Every reply carries the ``X-RateLimit-*`` headers: an admitted one the key's after counting it,
one that counted nothing (a 413, a 401) `Guard.rate_limit_headers`: the key's, or the default
limits with nothing used for a caller without a valid key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from aigateway.testing._core.accounts import Ledger
from aigateway.testing._core.idempotency import IdempotencyStore
from aigateway.testing._core.pacing import AsyncBody
from aigateway.testing._core.rate_limits import RateLimiter
from aigateway.testing._core.wire import (
    MockRequest,
    MockResponse,
    close_body,
    declared_length,
    error_response,
)

__all__ = ["Guard"]


@dataclass
class Guard:
    """The front door's checks of one gateway: its accounts (``ledger``), its rate limits,
    its idempotency keys, and the largest body it answers (``max_body_bytes``)."""

    ledger: Ledger
    rate_limits: RateLimiter
    idempotency: IdempotencyStore
    max_body_bytes: int

    def rate_limit_headers(self, request: MockRequest) -> dict[str, str]:
        """The ``X-RateLimit-*`` headers of a reply that counted no request: those of the
        request's key, or the default limits with nothing used when it has no valid key."""
        key = request.bearer_key
        known = self.ledger.account(key) is not None
        return self.rate_limits.headers(key if known else None)

    def guarded(
        self,
        request: MockRequest,
        request_id: str,
        route: Callable[[], MockResponse],
        *,
        on_refused: Callable[[], None],
    ) -> MockResponse:
        """Answer ``request`` through the body limit, rate limits and idempotency, with
        ``route`` doing the work; ``on_refused`` is called when the body limit or a rate
        limit refuses it."""
        limit = self.max_body_bytes
        if max(len(request.body), declared_length(request.headers)) > limit:
            too_large = error_response(
                413,
                f"the request body is larger than this gateway's limit of {limit} bytes",
                "invalid_request_error",
                "request_too_large",
            )
            on_refused()
            return self._uncounted(request, too_large)
        account = self.ledger.account(request.bearer_key)
        if account is None:
            return self._uncounted(request, route())
        limiter = self.rate_limits
        admission = limiter.admit(account.key)
        if not admission.ok:
            on_refused()
            return error_response(
                429,
                admission.message,
                "rate_limit_error",
                admission.code,
                headers=admission.headers,
            )
        finished = False

        def finish() -> None:
            nonlocal finished
            if not finished:
                finished = True
                charge = self.ledger.charge_for(request_id)
                tokens = charge.prompt_tokens + charge.completion_tokens if charge else 0
                limiter.finish(account.key, tokens)

        try:
            idempotency_key = request.headers.get("idempotency-key", "").strip()
            if idempotency_key and request.method == "POST":
                store = self.idempotency
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

    def _uncounted(self, request: MockRequest, response: MockResponse) -> MockResponse:
        for name, value in self.rate_limit_headers(request).items():
            response.headers.setdefault(name, value)
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
            close_body(self._body)
        finally:
            self._finish()
