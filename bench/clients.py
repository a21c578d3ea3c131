"""The three clients under test, each doing the same calls the way its users would.

* ``aigateway``: ``Client`` / ``AsyncClient`` with ``max_retries=0``: typed ``ChatCompletion``
  replies and typed ``ChatCompletionChunk`` stream chunks;
* ``httpx``: the floor: raw ``httpx.Client`` / ``AsyncClient`` (default settings), POST JSON and
  ``response.json()``; for streams ``iter_lines()`` + ``json.loads`` per ``data:`` line;
* ``openai``: ``OpenAI`` / ``AsyncOpenAI`` with ``max_retries=0`` and its typed replies.

When httpx2 (httpx's fork, the ``httpx2`` extra) is installed, the same clients on it too
(`HTTPX2_TWINS`): ``httpx2``, raw ``httpx2.Client`` / ``AsyncClient`` doing what raw httpx
does, and ``aigateway(httpx2)``, aigateway with its own pools on httpx2
(``AIGATEWAY_HTTP_STACK=httpx2`` while the client is made, which is when it is read).

A client is bound to one base URL: the plain one for requests, a ``/stream/<n>`` one for streams
(see `bench.server`). Libraries are imported when a client is made, so a child process that
needs one library does not load the others.
"""

from __future__ import annotations

import collections
import contextlib
import importlib
import importlib.util
import json
import os
import sys
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Protocol

LIBS = ("aigateway", "httpx", "openai")
HTTPX2_TWINS = {"aigateway(httpx2)": "aigateway", "httpx2": "httpx"}
"""The variants on httpx2, each with its twin on httpx (run only when httpx2 is installed)."""
STACK_ENV = "AIGATEWAY_HTTP_STACK"
"""What makes an aigateway client's own pools httpx's or httpx2's (read when it is made)."""
API_KEY = "sk-bench"
MODEL = "gpt-4o"
MESSAGES = [{"role": "user", "content": "Say hello to the benchmark."}]
BODY = {"model": MODEL, "messages": MESSAGES}
STREAM_BODY = {**BODY, "stream": True}

ANOMALIES: collections.Counter[str] = collections.Counter()
"""Errors a client raised *after* delivering every chunk, counted and reported, not hidden."""


def _after_last_chunk(lib: str, mode: str, exc: Exception, count: int) -> None:
    """Record an httpx stream error raised after chunks were delivered; re-raise anything else.

    aigateway's ``Stream._drain`` calls ``response.iter_raw()`` a second time after
    ``data: [DONE]``, which httpx refuses with ``StreamConsumed``: every chunk has been yielded
    by then, so the per-chunk timing stands, and the error is reported next to it.
    """
    import httpx

    errors = [httpx.StreamError]
    if "httpx2" in sys.modules:
        errors.append(sys.modules["httpx2"].StreamError)
    if count == 0 or not isinstance(exc, tuple(errors)):
        raise exc
    ANOMALIES[f"{lib} {mode} stream raised {type(exc).__name__} after its last chunk"] += 1


class SyncClient(Protocol):
    def request(self) -> object: ...
    def stream(self) -> int: ...
    def close(self) -> None: ...


class AsyncClient(Protocol):
    def request(self) -> Awaitable[object]: ...
    def stream(self) -> Awaitable[int]: ...
    def close(self) -> Awaitable[None]: ...


def httpx2_variants() -> tuple[str, ...]:
    """The httpx2 variants (`HTTPX2_TWINS`) when httpx2 is installed, else none."""
    return tuple(HTTPX2_TWINS) if importlib.util.find_spec("httpx2") is not None else ()


HTTPX2_MISSING = "httpx2 is not installed: its rows are skipped (pip install 'aigateway[httpx2]')"


@contextlib.contextmanager
def _own_pools_on(stack: str) -> Iterator[None]:
    """`STACK_ENV` set to ``stack`` while an aigateway client is made, as it was after."""
    before = os.environ.get(STACK_ENV)
    os.environ[STACK_ENV] = stack
    try:
        yield
    finally:
        if before is None:
            del os.environ[STACK_ENV]
        else:
            os.environ[STACK_ENV] = before


def _sse_json_lines(lines: Any) -> int:
    count = 0
    for line in lines:
        if line.startswith("data: "):
            data = line[6:]
            if data == "[DONE]":
                break
            json.loads(data)
            count += 1
    return count


class _SyncAIGateway:
    stack = "httpx"
    """The HTTP stack of the client's own pools."""

    def __init__(self, base_url: str) -> None:
        import aigateway

        with _own_pools_on(self.stack):
            self._client = aigateway.Client(api_key=API_KEY, base_url=base_url, max_retries=0)
        self._create: Callable[..., Any] = self._client.chat.completions.create

    def request(self) -> object:
        return self._create(model=MODEL, messages=MESSAGES)

    def stream(self) -> int:
        count = 0
        try:
            for _ in self._create(model=MODEL, messages=MESSAGES, stream=True):
                count += 1
        except RuntimeError as exc:  # httpx.StreamConsumed from Stream._drain: see ANOMALIES
            _after_last_chunk("aigateway", "sync", exc, count)
        return count

    def close(self) -> None:
        self._client.close()


class _SyncHttpx:
    library = "httpx"
    """``httpx`` or ``httpx2``: the same API."""

    def __init__(self, base_url: str) -> None:
        httpx: Any = importlib.import_module(self.library)
        self._client = httpx.Client(headers={"Authorization": f"Bearer {API_KEY}"})
        self._url = base_url + "/chat/completions"

    def request(self) -> object:
        response = self._client.post(self._url, json=BODY)
        response.raise_for_status()
        return response.json()

    def stream(self) -> int:
        with self._client.stream("POST", self._url, json=STREAM_BODY) as response:
            response.raise_for_status()
            return _sse_json_lines(response.iter_lines())

    def close(self) -> None:
        self._client.close()


class _SyncAIGatewayHttpx2(_SyncAIGateway):
    """aigateway with its own pool on httpx2."""

    stack = "httpx2"


class _SyncHttpx2(_SyncHttpx):
    """Raw httpx2, doing what raw httpx does."""

    library = "httpx2"


class _SyncOpenAI:
    def __init__(self, base_url: str) -> None:
        import openai

        self._client = openai.OpenAI(api_key=API_KEY, base_url=base_url, max_retries=0)
        self._create: Callable[..., Any] = self._client.chat.completions.create

    def request(self) -> object:
        return self._create(model=MODEL, messages=MESSAGES)

    def stream(self) -> int:
        count = 0
        for _ in self._create(model=MODEL, messages=MESSAGES, stream=True):
            count += 1
        return count

    def close(self) -> None:
        self._client.close()


class _AsyncAIGateway:
    transport: Callable[[], Any] | None = None
    stack = "httpx"
    """The HTTP stack of the client's own pools (when it is given no transport)."""

    def __init__(self, base_url: str) -> None:
        import aigateway

        transport = self.transport() if self.transport is not None else None
        with _own_pools_on(self.stack):
            self._client = aigateway.AsyncClient(
                api_key=API_KEY, base_url=base_url, max_retries=0, transport=transport
            )
        self._create: Callable[..., Any] = self._client.chat.completions.create

    async def request(self) -> object:
        return await self._create(model=MODEL, messages=MESSAGES)

    async def stream(self) -> int:
        count = 0
        try:
            async for _ in await self._create(model=MODEL, messages=MESSAGES, stream=True):
                count += 1
        except RuntimeError as exc:  # httpx.StreamConsumed from AsyncStream: see ANOMALIES
            _after_last_chunk("aigateway", "async", exc, count)
        return count

    async def close(self) -> None:
        await self._client.close()


def _aiohttp_transport() -> Any:
    from httpx_aiohttp import AiohttpTransport

    return AiohttpTransport()


def _httpx2_aiohttp_transport() -> Any:
    from httpx_aiohttp.httpx2 import AiohttpTransport

    return AiohttpTransport()


def _httpx_transport() -> Any:
    import httpx

    return httpx.AsyncHTTPTransport()


class _AsyncAIGatewayAiohttp(_AsyncAIGateway):
    """aigateway given httpx-aiohttp's transport explicitly (what the default picks on asyncio)."""

    transport = staticmethod(_aiohttp_transport)


class _AsyncAIGatewayHttpx(_AsyncAIGateway):
    """aigateway given httpx's own pool explicitly, with httpx's limits (as raw httpx has it)."""

    transport = staticmethod(_httpx_transport)


class _AsyncHttpx:
    transport: Callable[[], Any] | None = None
    library = "httpx"
    """``httpx`` or ``httpx2``: the same API."""

    def __init__(self, base_url: str) -> None:
        httpx: Any = importlib.import_module(self.library)
        self._client = httpx.AsyncClient(
            headers={"Authorization": f"Bearer {API_KEY}"},
            transport=self.transport() if self.transport is not None else None,
        )
        self._url = base_url + "/chat/completions"

    async def request(self) -> object:
        response = await self._client.post(self._url, json=BODY)
        response.raise_for_status()
        return response.json()

    async def stream(self) -> int:
        count = 0
        async with self._client.stream("POST", self._url, json=STREAM_BODY) as response:
            response.raise_for_status()
            async for line in response.aiter_lines():
                if line.startswith("data: "):
                    data = line[6:]
                    if data == "[DONE]":
                        break
                    json.loads(data)
                    count += 1
        return count

    async def close(self) -> None:
        await self._client.aclose()


class _AsyncHttpxAiohttp(_AsyncHttpx):
    """Raw httpx on httpx-aiohttp's transport."""

    transport = staticmethod(_aiohttp_transport)


class _AsyncAIGatewayHttpx2(_AsyncAIGateway):
    """aigateway with its own pools on httpx2 (on asyncio: httpx-aiohttp's httpx2 transport)."""

    stack = "httpx2"


class _AsyncHttpx2(_AsyncHttpx):
    """Raw httpx2 on its own pool."""

    library = "httpx2"


class _AsyncHttpx2Aiohttp(_AsyncHttpx2):
    """Raw httpx2 on httpx-aiohttp's httpx2 transport."""

    transport = staticmethod(_httpx2_aiohttp_transport)


class _AsyncOpenAI:
    aiohttp = False

    def __init__(self, base_url: str) -> None:
        import openai

        self._client = openai.AsyncOpenAI(
            api_key=API_KEY,
            base_url=base_url,
            max_retries=0,
            http_client=openai.DefaultAioHttpClient() if self.aiohttp else None,
        )
        self._create: Callable[..., Any] = self._client.chat.completions.create

    async def request(self) -> object:
        return await self._create(model=MODEL, messages=MESSAGES)

    async def stream(self) -> int:
        count = 0
        async for _ in await self._create(model=MODEL, messages=MESSAGES, stream=True):
            count += 1
        return count

    async def close(self) -> None:
        await self._client.close()


class _AsyncOpenAIAiohttp(_AsyncOpenAI):
    """openai on its own aiohttp option, ``http_client=openai.DefaultAioHttpClient()``."""

    aiohttp = True


_SYNC: dict[str, Callable[[str], SyncClient]] = {
    "aigateway": _SyncAIGateway,
    "httpx": _SyncHttpx,
    "openai": _SyncOpenAI,
    "aigateway(httpx2)": _SyncAIGatewayHttpx2,
    "httpx2": _SyncHttpx2,
}
_ASYNC: dict[str, Callable[[str], AsyncClient]] = {
    "aigateway+aiohttp": _AsyncAIGatewayAiohttp,
    "aigateway+httpx": _AsyncAIGatewayHttpx,
    "aigateway": _AsyncAIGateway,
    "httpx": _AsyncHttpx,
    "httpx+aiohttp": _AsyncHttpxAiohttp,
    "openai": _AsyncOpenAI,
    "openai+aiohttp": _AsyncOpenAIAiohttp,
    "aigateway(httpx2)": _AsyncAIGatewayHttpx2,
    "httpx2": _AsyncHttpx2,
    "httpx2+aiohttp": _AsyncHttpx2Aiohttp,
}
"""``lib+transport``: the same client on that transport given explicitly; ``aigateway`` alone
is the default (aiohttp's pool on asyncio when installed); ``httpx`` and ``openai`` alone are
on their own library's pool, their default (openai's library is httpx2 since openai 3).
``aigateway(httpx2)`` is aigateway's default with its own
pools on httpx2; ``httpx2`` is raw httpx2 on its own pool."""


def sync_client(lib: str, base_url: str) -> SyncClient:
    """A sync client of ``lib`` bound to ``base_url`` (which ends in ``/v1``)."""
    return _SYNC[lib](base_url)


def async_client(lib: str, base_url: str) -> AsyncClient:
    """An async client of ``lib``; make it inside the event loop that will use it."""
    return _ASYNC[lib](base_url)
