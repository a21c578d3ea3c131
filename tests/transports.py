"""Which pool the async client's tests run on under asyncio: ``AIGATEWAY_TEST_TRANSPORT=httpx``
or ``aiohttp`` (unset: what users get, aiohttp when installed). CI runs the client tests on
each. respx is taught to intercept the aiohttp transport as it does httpx's pool."""

from __future__ import annotations

from typing import Any

import httpx
import respx.mocks
from respx.models import PassThrough

import aigateway._http.async_pools as _transport


class _Mocker(respx.mocks.HTTPCoreMocker):
    """respx's httpcore mocker, which also intercepts httpx-aiohttp's transport (a request in,
    a response out, as respx's own handler takes and gives them)."""

    name = "aigateway"
    targets = [
        *respx.mocks.HTTPCoreMocker.targets,
        "httpx_aiohttp.transport.AiohttpTransport",
    ]

    @classmethod
    def mock(cls, spec: Any) -> Any:
        if not spec.__qualname__.startswith("AiohttpTransport."):
            return super().mock(spec)

        async def handle_async_request(self: Any, request: httpx.Request) -> httpx.Response:
            await request.aread()
            try:
                response: httpx.Response = await cls.async_handler(request)
            except PassThrough:
                response = await spec(self, request)
            return response

        return handle_async_request


def use_test_transport(name: str | None) -> None:
    """Run the async tests on ``name``'s pool under asyncio, and let respx mock it."""
    if name not in (None, "", "httpx", "aiohttp"):
        raise ValueError(f"AIGATEWAY_TEST_TRANSPORT must be httpx or aiohttp, got {name!r}")
    _transport.ASYNCIO_BACKEND = name or None
    respx.mocks.DEFAULT_MOCKER = _Mocker.name  # type: ignore[attr-defined]
