"""The HTTP reply around a result: `RawResponse` (``with_raw_response``) and `StreamedResponse`
/ `AsyncStreamedResponse` (``with_streaming_response``, the body not read yet)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import httpx

from ._classify import parse_body, request_failed
from ._closing import AsyncClosing, Closing
from .errors import RateLimitInfo

T = TypeVar("T")

__all__ = ["AsyncStreamedResponse", "RawResponse", "StreamedResponse"]


class _ReplyInfo:
    """Status, headers, request id and rate limits of ``http_response``."""

    http_response: httpx.Response

    @property
    def status_code(self) -> int:
        return self.http_response.status_code

    @property
    def headers(self) -> httpx.Headers:
        return self.http_response.headers

    @property
    def request_id(self) -> str | None:
        request_id: str | None = self.http_response.headers.get("x-request-id")
        return request_id

    @property
    def rate_limit(self) -> RateLimitInfo | None:
        """The ``X-RateLimit-*`` headers of this reply."""
        return RateLimitInfo.from_headers(self.http_response.headers)


@dataclass(frozen=True, slots=True)
class RawResponse(_ReplyInfo, Generic[T]):
    """The HTTP reply behind a result: status, headers, how many attempts it took, and the
    parsed object (``parse()``)."""

    http_response: httpx.Response
    attempts: int
    _parsed: T

    def parse(self) -> T:
        """The typed result, as the method without ``with_raw_response`` would return it."""
        return self._parsed

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled with the reply's request redacted (its ``Authorization`` header holds the
        key) and without the connection's stream."""
        from ._pickling import picklable

        return (RawResponse, (picklable(self.http_response), self.attempts, self._parsed))


class _StreamedBase(_ReplyInfo):
    def __init__(
        self,
        http_response: httpx.Response,
        attempts: int,
        parse: Callable[[bytes], Any],
        on_close: Callable[[], object] | None,
        open_stream: Callable[[httpx.Response], Any] | None = None,
    ) -> None:
        self.http_response = http_response
        self.attempts = attempts
        self._parse = parse
        self._on_close = on_close
        self._open_stream = open_stream
        """For a streamed call: the typed stream over this reply (what ``parse()`` gives)."""

    def _closed(self) -> None:
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close()

    def _failed(self, exc: Exception) -> Exception:
        return request_failed(exc, self.http_response.request)


_READ_FAILURES = (httpx.HTTPError, httpx.StreamError, OSError)


class StreamedResponse(_StreamedBase, Closing):
    """A 2xx reply whose body has not been read: read it as you like, in a ``with`` block
    (which closes the connection). ``parse()`` reads it and returns the typed result."""

    def read(self) -> bytes:
        try:
            return self.http_response.read()
        except _READ_FAILURES as exc:
            raise self._failed(exc) from exc

    def iter_bytes(self, chunk_size: int | None = None) -> Iterator[bytes]:
        try:
            yield from self.http_response.iter_bytes(chunk_size)
        except _READ_FAILURES as exc:
            raise self._failed(exc) from exc

    def iter_lines(self) -> Iterator[str]:
        try:
            yield from self.http_response.iter_lines()
        except _READ_FAILURES as exc:
            raise self._failed(exc) from exc

    def parse(self) -> Any:
        """The typed result: the body read and parsed, or for ``stream=True`` the `Stream`."""
        if self._open_stream is not None:
            return self._open_stream(self.http_response)
        self.read()
        return parse_body(self._parse, self.http_response)

    def close(self) -> None:
        try:
            self.http_response.close()
        finally:
            self._closed()


class AsyncStreamedResponse(_StreamedBase, AsyncClosing):
    """`StreamedResponse` for async code: ``async with``, ``await read()``, ``async for``."""

    async def read(self) -> bytes:
        try:
            return await self.http_response.aread()
        except _READ_FAILURES as exc:
            raise self._failed(exc) from exc

    async def iter_bytes(self, chunk_size: int | None = None) -> AsyncIterator[bytes]:
        try:
            async for chunk in self.http_response.aiter_bytes(chunk_size):
                yield chunk
        except _READ_FAILURES as exc:
            raise self._failed(exc) from exc

    async def iter_lines(self) -> AsyncIterator[str]:
        try:
            async for line in self.http_response.aiter_lines():
                yield line
        except _READ_FAILURES as exc:
            raise self._failed(exc) from exc

    async def parse(self) -> Any:
        """The typed result: the body read and parsed, or for ``stream=True`` the `AsyncStream`."""
        if self._open_stream is not None:
            return self._open_stream(self.http_response)
        await self.read()
        return parse_body(self._parse, self.http_response)

    async def close(self) -> None:
        import anyio

        with anyio.CancelScope(shield=True):
            try:
                await self.http_response.aclose()
            finally:
                self._closed()
