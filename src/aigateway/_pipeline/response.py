"""The HTTP reply around a result: `RawResponse` (``with_raw_response``) and `StreamedResponse`
/ `AsyncStreamedResponse` (``with_streaming_response``, the body not read yet)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from aigateway._call.classify import parse_body, request_failed
from aigateway._closing import AsyncClosing, Closing
from aigateway._http.leases import AsyncLease, OpenLeases, SyncLease
from aigateway._stacks import read_failures
from aigateway.errors import RateLimitInfo

if TYPE_CHECKING:
    from aigateway._stacks import Headers, Request, Response

T = TypeVar("T")

__all__ = ["AsyncStreamedResponse", "RawResponse", "StreamedResponse"]


class _ReplyInfo:
    """Status, headers, request id and rate limits of ``http_response``."""

    http_response: Response

    @property
    def status_code(self) -> int:
        return self.http_response.status_code

    @property
    def headers(self) -> Headers:
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

    http_response: Response
    attempts: int
    _parsed: T

    def parse(self) -> T:
        """The typed result, as the method without ``with_raw_response`` would return it."""
        return self._parsed

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled with the reply's request redacted (its ``Authorization`` header holds the
        key) and without the connection's stream."""
        from aigateway._pickling import picklable

        return (RawResponse, (picklable(self.http_response), self.attempts, self._parsed))


class _UnreadReply(_ReplyInfo):
    """A reply handed back with its body unread (``with_streaming_response``), what
    `StreamedResponse` and `AsyncStreamedResponse` share: the reply and its lease
    (`aigateway._http.leases`); in no reference cycle, so dropped unclosed, one hands its lease
    back at once."""

    _lease: SyncLease | AsyncLease
    _lease_type: type[SyncLease] | type[AsyncLease]

    def __init__(
        self,
        http_response: Response,
        attempts: int,
        parse: Callable[[bytes], Any],
        on_close: Callable[[], object] | None,
        open_stream: Callable[[Response], Any] | None = None,
        *,
        leases: OpenLeases | None = None,
    ) -> None:
        """``on_close``: run once when the reply is released; ``leases``: the client's open
        leases, which hold this reply's connection until it is released."""
        self.http_response = http_response
        self.attempts = attempts
        self._parse = parse
        self._open_stream = open_stream
        """For a streamed call: the typed stream over this reply (what ``parse()`` gives)."""
        self._lease = self._lease_type(http_response, leases, on_close)

    def __del__(self) -> None:
        lease = self.__dict__.get("_lease")  # None if __init__ failed
        if lease is not None:
            lease.abandon()

    def _failed(self, exc: Exception) -> Exception:
        return request_failed(exc, self.http_response.request)


class _Reading(Generic[T]):
    """A body iterator whose read failures become our errors. An iterator object, not a
    generator: dropped unfinished, it leaves nothing for the garbage collector to run (the
    iterator it reads is the reply's lease's, released with the reply)."""

    __slots__ = ("_iterator", "_request")

    def __init__(self, iterator: Iterator[T], request: Request) -> None:
        self._iterator = iterator
        self._request = request

    def __iter__(self) -> Iterator[T]:
        return self

    def __next__(self) -> T:
        try:
            return next(self._iterator)
        except read_failures() as exc:
            raise request_failed(exc, self._request) from exc


class _AsyncReading(Generic[T]):
    """`_Reading` for ``async for``."""

    __slots__ = ("_iterator", "_request")

    def __init__(self, iterator: AsyncIterator[T], request: Request) -> None:
        self._iterator = iterator
        self._request = request

    def __aiter__(self) -> AsyncIterator[T]:
        return self

    async def __anext__(self) -> T:
        try:
            return await anext(self._iterator)
        except read_failures() as exc:
            raise request_failed(exc, self._request) from exc


class StreamedResponse(_UnreadReply, Closing):
    """A 2xx reply whose body has not been read: read it as you like, in a ``with`` block
    (which closes the connection). ``parse()`` reads it and returns the typed result.
    Dropped unclosed, its connection is released (at once, or at the client's next request
    if the garbage collector dropped it)."""

    _lease: SyncLease
    _lease_type = SyncLease

    def read(self) -> bytes:
        try:
            return self.http_response.read()
        except read_failures() as exc:
            raise self._failed(exc) from exc

    def iter_bytes(self, chunk_size: int | None = None) -> Iterator[bytes]:
        return self._reading(self.http_response.iter_bytes(chunk_size))

    def iter_lines(self) -> Iterator[str]:
        return self._reading(self.http_response.iter_lines())

    def _reading(self, iterator: Iterator[Any]) -> Iterator[Any]:
        self._lease.body = iterator  # closed with the reply
        return _Reading(iterator, self.http_response.request)

    def parse(self) -> Any:
        """The typed result: the body read and parsed, or for ``stream=True`` the `Stream`."""
        if self._open_stream is not None:
            return self._open_stream(self.http_response)
        self.read()
        return parse_body(self._parse, self.http_response)

    def close(self) -> None:
        self._lease.close()


class AsyncStreamedResponse(_UnreadReply, AsyncClosing):
    """`StreamedResponse` for async code: ``async with``, ``await read()``, ``async for``.
    Dropped unclosed, its connection is released by a task of its event loop (or by the
    loop's end)."""

    _lease: AsyncLease
    _lease_type = AsyncLease

    async def read(self) -> bytes:
        try:
            return await self.http_response.aread()
        except read_failures() as exc:
            raise self._failed(exc) from exc

    def iter_bytes(self, chunk_size: int | None = None) -> AsyncIterator[bytes]:
        return self._reading(self.http_response.aiter_bytes(chunk_size))

    def iter_lines(self) -> AsyncIterator[str]:
        return self._reading(self.http_response.aiter_lines())

    def _reading(self, iterator: AsyncIterator[Any]) -> AsyncIterator[Any]:
        self._lease.body = iterator  # ended with the reply
        return _AsyncReading(iterator, self.http_response.request)

    async def parse(self) -> Any:
        """The typed result: the body read and parsed, or for ``stream=True`` the `AsyncStream`."""
        if self._open_stream is not None:
            return self._open_stream(self.http_response)
        await self.read()
        return parse_body(self._parse, self.http_response)

    async def close(self) -> None:
        await self._lease.close()
