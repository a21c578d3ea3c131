"""The bodies of a cassette's replies (replayed events, a reply being recorded) and its error."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator

import httpx

from aigateway.testing._pacing import AsyncBody

__all__ = ["CassetteError", "Events", "Recorder"]


class CassetteError(Exception):
    """A cassette cannot answer: a request that was not recorded, a missing or malformed file,
    or a body over the size limit."""


class Events(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A replayed streamed body: its events one by one, sync or async."""

    def __init__(self, events: list[bytes]) -> None:
        self._events = events

    def __iter__(self) -> Iterator[bytes]:
        yield from self._events

    def __aiter__(self) -> AsyncIterator[bytes]:
        return AsyncBody(iter(self._events))


class Recorder(httpx.SyncByteStream, httpx.AsyncByteStream):
    """The body of a reply being recorded: the inner reply's decoded bytes pass through as they
    come and are kept; at the end (or on close, after reading the rest) ``keep`` gets them all,
    so the cassette holds whole replies even when the caller stops reading early."""

    def __init__(
        self, inner: httpx.Response, limit: int, what: str, keep: Callable[[bytes], None]
    ) -> None:
        self._inner = inner
        self._limit = limit
        self._what = what
        self._keep = keep
        self._chunks: list[bytes] = []
        self._size = 0
        self._open = True
        self._sync: Iterator[bytes] | None = None
        self._async: AsyncIterator[bytes] | None = None

    def _take(self, chunk: bytes) -> bytes:
        self._size += len(chunk)
        if self._size > self._limit:
            self._open = False
            raise CassetteError(
                f"the reply to {self._what} is over {self._limit} bytes, the most a cassette "
                "records (max_body_size)"
            )
        self._chunks.append(chunk)
        return chunk

    def _done(self) -> None:
        if self._open:
            self._open = False
            self._keep(b"".join(self._chunks))

    def __iter__(self) -> Iterator[bytes]:
        self._sync = self._sync or self._inner.iter_bytes()
        try:
            for chunk in self._sync:
                yield self._take(chunk)
        except Exception:  # not GeneratorExit: a caller that stops early gets the rest read
            self._open = False
            raise
        self._done()

    def close(self) -> None:
        try:
            if self._open:
                for _ in self:  # read and keep the rest
                    pass
        finally:
            self._inner.close()

    def __aiter__(self) -> Recorder:
        return self

    async def __anext__(self) -> bytes:
        self._async = self._async or self._inner.aiter_bytes()
        try:
            chunk = await self._async.__anext__()
        except StopAsyncIteration:
            self._done()
            raise
        except Exception:
            self._open = False
            raise
        return self._take(chunk)

    async def aclose(self) -> None:
        try:
            if self._open:
                async for _ in self:
                    pass
        finally:
            close = getattr(self._async, "aclose", None)
            if close is not None:
                await close()
            await self._inner.aclose()
