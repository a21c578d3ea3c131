"""Which pool the async client's tests run on under asyncio: ``AIGATEWAY_TEST_TRANSPORT=httpx``
or ``aiohttp`` (unset: what users get, aiohttp when installed). CI runs the client tests on
each. respx is taught to intercept the aiohttp transport as it does httpx's pool."""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import respx.mocks
from respx.models import PassThrough

import aigateway._http.async_pools as _transport

from ._stack import stack_name


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


class _Httpx2Mocker(_Mocker):
    """`_Mocker`, which also intercepts httpx2's pools (httpcore2's) and httpx-aiohttp's httpx2
    transport: the lane ``AIGATEWAY_HTTP_STACK=httpx2``. respx speaks httpx, so what crosses
    into httpx2 is converted: the request to an ``httpx.Request`` (httpcore2's has httpcore's
    shape, which respx reads), the reply to httpcore2's or httpx2's, and an httpx error a route
    raises (``side_effect=httpx.ConnectTimeout``, or from its stream) to httpx2's of the same
    name, as httpx2 itself would raise it. Uses only what subclassing respx's HTTPCoreMocker
    offers: ``name``, ``targets``, ``mock`` and ``from_sync_httpx_response``."""

    name = "aigateway-httpx2"
    targets = [
        *_Mocker.targets,
        *(t.replace("httpcore.", "httpcore2.", 1) for t in respx.mocks.HTTPCoreMocker.targets),
        "httpx_aiohttp.httpx2.transport.AiohttpTransport",
    ]

    @classmethod
    def mock(cls, spec: Any) -> Any:
        module = spec.__module__
        if module.startswith("httpx_aiohttp.httpx2"):
            return cls._mock_httpx2_aiohttp(spec)
        mocked = super().mock(spec)
        if not module.startswith("httpcore2") or mocked is spec:
            return mocked
        if inspect.iscoroutinefunction(mocked):

            async def amock(*args: Any, **kwargs: Any) -> Any:
                with _httpx2_errors():
                    return await mocked(*args, **kwargs)

            return amock

        def mock(*args: Any, **kwargs: Any) -> Any:
            with _httpx2_errors():
                return mocked(*args, **kwargs)

        return mock

    @classmethod
    def from_sync_httpx_response(cls, httpx_response: Any, target: Any, **kwargs: Any) -> Any:
        if not type(target).__module__.startswith("httpcore2"):
            return super().from_sync_httpx_response(httpx_response, target, **kwargs)
        import httpcore2

        return httpcore2.Response(
            status=httpx_response.status_code,
            headers=httpx_response.headers.raw,
            content=_Httpx2Stream(httpx_response.stream),
            extensions=httpx_response.extensions,
        )

    @classmethod
    def _mock_httpx2_aiohttp(cls, spec: Any) -> Any:
        import httpx2

        async def handle_async_request(self: Any, request: httpx2.Request) -> httpx2.Response:
            body = await request.aread()
            httpx_request = httpx.Request(
                request.method,
                str(request.url),
                headers=request.headers.raw,
                content=body,
                extensions=request.extensions,
            )
            try:
                with _httpx2_errors():
                    response: httpx.Response = await cls.async_handler(httpx_request)
            except PassThrough:
                return await spec(self, request)  # type: ignore[no-any-return]
            return httpx2.Response(
                response.status_code,
                headers=response.headers.raw,
                stream=_Httpx2Stream(response.stream),
                extensions=response.extensions,
                request=request,
            )

        return handle_async_request


@contextlib.contextmanager
def _httpx2_errors() -> Iterator[None]:
    """Re-raise an httpx error as httpx2's of the same name (what httpx2 raises for it)."""
    try:
        yield
    except httpx.HTTPError as exc:
        import httpx2

        raise getattr(httpx2, type(exc).__name__, httpx2.TransportError)(str(exc)) from exc


class _Httpx2Stream:
    """A respx reply's body (an httpx stream) for httpx2: the same bytes, httpx2's errors."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def __iter__(self) -> Iterator[bytes]:
        with _httpx2_errors():
            yield from self._stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _httpx2_errors():
            async for chunk in self._stream:
                yield chunk

    def close(self) -> None:
        self._stream.close()

    async def aclose(self) -> None:
        await self._stream.aclose()


def use_test_transport(name: str | None) -> None:
    """Run the async tests on ``name``'s pool under asyncio, and let respx mock it (and, on
    the lane ``AIGATEWAY_HTTP_STACK=httpx2``, httpx2's pools too)."""
    if name not in (None, "", "httpx", "aiohttp"):
        raise ValueError(f"AIGATEWAY_TEST_TRANSPORT must be httpx or aiohttp, got {name!r}")
    _transport.ASYNCIO_BACKEND = name or None
    mocker = _Httpx2Mocker if stack_name() == "httpx2" else _Mocker
    respx.mocks.DEFAULT_MOCKER = mocker.name  # type: ignore[attr-defined]
