"""Typed streams of a streamed reply: `Stream` (sync) and `AsyncStream` (async).

Both feed the bytes they read into one `ChunkDecoder` (sans-io: SSE events in, typed chunks
out, ``[DONE]`` and error events handled), so the two classes differ only in how they read.
A stream is iterable and a context manager; leaving the ``with`` block, breaking out of the
loop, an exception or a cancelled task all release the connection.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from types import TracebackType
from typing import Generic, TypeVar

import anyio
import httpx

from ._sse import SSEDecodeError, SSEDecoder
from .errors import (
    APIConnectionError,
    APIResponseValidationError,
    IncompleteStreamError,
    status_error_class,
)

T = TypeVar("T")

DONE = "[DONE]"

_ERROR_TYPE_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "insufficient_credits": 402,
    "insufficient_balance": 402,
    "not_found_error": 404,
    "rate_limit_error": 429,
    "rate_limit_exceeded": 429,
    "service_unavailable": 503,
}


class ChunkDecoder(Generic[T]):
    """Bytes of an event stream in, typed chunks out; no I/O.

    ``data: [DONE]`` marks the end; an event whose data is ``{"error": {...}}`` raises the
    matching API error; a chunk that does not parse raises `APIResponseValidationError`.
    """

    def __init__(self, parse: Callable[[bytes], T], response: httpx.Response) -> None:
        self._parse = parse
        self._response = response
        self._sse = SSEDecoder()
        self.done = False
        self.received = 0

    def feed(self, data: bytes) -> list[T]:
        try:
            events = self._sse.feed(data)
        except SSEDecodeError as exc:
            raise self._invalid(str(exc), data) from exc
        chunks: list[T] = []
        for event in events:
            if self.done:
                break
            if event.data == DONE:
                self.done = True
                break
            raw = event.data.encode()
            if event.data.startswith('{"error"') or event.event == "error":
                self._raise_error_event(raw)
            try:
                chunks.append(self._parse(raw))
            except ValueError as exc:
                raise self._invalid(
                    f"a stream chunk is not of the expected shape ({exc})", raw
                ) from exc
        self.received += len(chunks)
        return chunks

    def end(self) -> None:
        """The body ended: raise unless ``[DONE]`` was seen."""
        if not self.done:
            cut = " in the middle of an event" if self._sse.pending else ""
            raise IncompleteStreamError(
                f"the stream ended{cut} before data: [DONE], after {self.received} chunks",
                request=self._response.request,
            )

    def _invalid(self, message: str, raw: bytes) -> APIResponseValidationError:
        return APIResponseValidationError(
            message,
            body=raw,
            status_code=self._response.status_code,
            headers=self._response.headers,
            request=self._response.request,
        )

    def _raise_error_event(self, raw: bytes) -> None:
        try:
            body = json.loads(raw)
        except ValueError:
            return  # not an error object after all; let the chunk parser judge it
        error = body.get("error") if isinstance(body, dict) else None
        if not isinstance(error, dict):
            return
        code = error.get("code")
        status = error.get("status")
        if not isinstance(status, int):
            status = _ERROR_TYPE_STATUS.get(str(error.get("type")), 500)
        response = httpx.Response(
            status, content=raw, headers=self._response.headers, request=self._response.request
        )
        cls = status_error_class(status, None if code is None else str(code))
        raise cls(
            str(error.get("message") or "error event in the stream"),
            response=response,
            body=body,
            error_type=None if error.get("type") is None else str(error.get("type")),
            code=None if code is None else str(code),
        )


class _StreamBase(Generic[T]):
    def __init__(
        self,
        response: httpx.Response,
        parse: Callable[[bytes], T],
        *,
        on_chunk: Callable[[httpx.Response, object], None] | None = None,
    ) -> None:
        self.response = response
        self._decoder = ChunkDecoder(parse, response)
        self._on_chunk = on_chunk

    def _observe(self, chunks: list[T]) -> None:
        if self._on_chunk is not None and chunks:
            self._on_chunk(self.response, chunks[-1])

    def _connection_error(self, exc: httpx.TransportError) -> APIConnectionError:
        error = APIConnectionError(
            f"the stream was cut after {self._decoder.received} chunks: {exc!r}",
            request=self.response.request,
        )
        error.__cause__ = exc
        return error


class Stream(_StreamBase[T]):
    """A streamed reply, chunk by chunk. Use it in a ``with`` block, or iterate it to the end."""

    def __iter__(self) -> Iterator[T]:
        try:
            raw = self.response.iter_raw()
            for data in raw:
                chunks = self._decoder.feed(data)
                self._observe(chunks)
                yield from chunks
                if self._decoder.done:
                    self._drain(raw)
                    return
            self._decoder.end()
        except httpx.TransportError as exc:
            raise self._connection_error(exc) from exc
        finally:
            self.close()

    def _drain(self, raw: Iterator[bytes]) -> None:
        """Read what follows ``[DONE]`` so the connection can go back to the pool (from the
        same iterator: httpx refuses to start a second one)."""
        for _ in raw:
            pass

    def close(self) -> None:
        """Release the connection (idempotent)."""
        self.response.close()

    def __enter__(self) -> Stream[T]:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncStream(_StreamBase[T]):
    """A streamed reply, chunk by chunk, for ``async for``; also an async context manager."""

    def __aiter__(self) -> AsyncIterator[T]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[T]:
        try:
            raw = self.response.aiter_raw()
            async for data in raw:
                chunks = self._decoder.feed(data)
                self._observe(chunks)
                for chunk in chunks:
                    yield chunk
                if self._decoder.done:
                    async for _ in raw:
                        pass
                    return
            self._decoder.end()
        except httpx.TransportError as exc:
            raise self._connection_error(exc) from exc
        finally:
            await self.close()

    async def close(self) -> None:
        """Release the connection (idempotent); shielded, so it completes even when cancelled."""
        with anyio.CancelScope(shield=True):
            await self.response.aclose()

    async def __aenter__(self) -> AsyncStream[T]:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


__all__ = ["AsyncStream", "ChunkDecoder", "Stream"]
