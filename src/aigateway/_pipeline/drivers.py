"""The two drivers of the request path: they run a call's flow, performing the I/O it asks for.

`SyncPipeline` blocks, `AsyncPipeline` awaits (on asyncio or trio); everything else, every
decision of a call, is the shared logic of `aigateway._pipeline.flow.Pipeline`. A driver sends each
command's outcome back into the flow, or throws in what the I/O raised, so the flow classifies
failures and cleans up (closing replies, giving back slots) the same way for both.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from aigateway._call.call import APICall
from aigateway._call.classify import other_loop_error
from aigateway._call.commands import Acquire, Close, Next, Send, Sleep, Write
from aigateway._call.timeouts import SEND_ENDS_AT
from aigateway._http.body import adecoded_body, decoded_body
from aigateway._http.leases import aclose_reply, close_reply
from aigateway._pipeline.flow import Pipeline
from aigateway._pipeline.response import AsyncStreamedResponse, StreamedResponse

if TYPE_CHECKING:
    import os

    from aigateway._stacks import AsyncHTTPClient, SyncHTTPClient
    from aigateway.types.chat_params import RequestOptions

__all__ = ["AsyncPipeline", "SyncPipeline", "fetch_call"]


class SyncPipeline(Pipeline):
    """The blocking driver, over an `httpx.Client`."""

    http_client: SyncHTTPClient
    body_pieces = staticmethod(decoded_body)
    streamed_response_type = StreamedResponse

    def request(self, call: APICall[Any]) -> Any:
        """Run a call's flow to its result (or error)."""
        if self.state.leases.abandoned:  # streams dropped unclosed: released here, outside locks
            self.state.leases.release_abandoned()
        flow = self.flow(call)
        try:
            command = next(flow)
            while True:
                try:
                    outcome = self._perform(command)
                except BaseException as exc:  # the flow classifies it, or cleans up and re-raises
                    command = flow.throw(exc)
                else:
                    command = flow.send(outcome)
        except StopIteration as done:
            return done.value

    @overload
    def fetch(self, url: str, *, timeout: float | None = None) -> bytes: ...

    @overload
    def fetch(self, url: str, *, save_to: str | os.PathLike[str], max_bytes: int) -> int: ...

    def fetch(
        self,
        url: str,
        *,
        timeout: float | None = None,
        save_to: str | os.PathLike[str] | None = None,
        max_bytes: int | None = None,
    ) -> bytes | int:
        """The bytes at ``url`` (a file result), with this client's retries and timeouts, or
        in one attempt within ``timeout`` seconds. With ``save_to``, the bytes are written to
        that file as they arrive, at most ``max_bytes`` of them (a partial file is removed),
        and their count returned."""
        if save_to is None:
            data: bytes = self.request(fetch_call(url, timeout))
            return data
        try:
            with open(save_to, "wb") as file:
                written: int = self.request(fetch_call(url, save_to=file, max_bytes=max_bytes))
        except BaseException:
            Path(save_to).unlink(missing_ok=True)
            raise
        return written

    def _perform(self, command: Any) -> Any:
        kind = type(command)
        if kind is Send:
            if command.timeout is None:
                return self.http_client.send(command.request, stream=True)
            ends_at = SEND_ENDS_AT.set(time.monotonic() + command.timeout)
            try:
                return self.http_client.send(command.request, stream=True)
            finally:
                SEND_ENDS_AT.reset(ends_at)
        if kind is Next:
            return next(command.iterator, None)
        if kind is Sleep:
            return self.retry.sleep(command.seconds)
        if kind is Write:
            if command.restart:
                command.file.seek(0)
                command.file.truncate()
            return command.file.write(command.data)
        if kind is Close:
            if command.body is not None:
                return close_reply(command.target, command.body)
            close = getattr(command.target, "close", None)
            return close() if close is not None else None
        if kind is Acquire:
            if not command.slots.acquire(timeout=command.timeout):
                raise TimeoutError(f"no concurrency slot within {command.timeout:.2f} s")
            return None
        return command.perform()  # a command of its own (a WebSocket's)

    def stream_type(self) -> Any:
        from aigateway._streams.streams import Stream

        return Stream


class AsyncPipeline(Pipeline):
    """The async driver (asyncio and trio), over an `httpx.AsyncClient`."""

    http_client: AsyncHTTPClient
    asynchronous = True
    body_pieces = staticmethod(adecoded_body)
    streamed_response_type = AsyncStreamedResponse

    async def request(self, call: APICall[Any]) -> Any:
        """Run a call's flow to its result (or error)."""
        flow = self.flow(call)
        try:
            command = next(flow)
            while True:
                try:
                    outcome = await self._perform(command)
                except BaseException as exc:  # the flow classifies it, or cleans up and re-raises
                    command = flow.throw(exc)
                else:
                    command = flow.send(outcome)
        except StopIteration as done:
            return done.value

    @overload
    async def fetch(self, url: str, *, timeout: float | None = None) -> bytes: ...

    @overload
    async def fetch(self, url: str, *, save_to: str | os.PathLike[str], max_bytes: int) -> int: ...

    async def fetch(
        self,
        url: str,
        *,
        timeout: float | None = None,
        save_to: str | os.PathLike[str] | None = None,
        max_bytes: int | None = None,
    ) -> bytes | int:
        """`SyncPipeline.fetch` for async code (the file written from a worker thread)."""
        if save_to is None:
            data: bytes = await self.request(fetch_call(url, timeout))
            return data
        import anyio

        try:
            async with await anyio.open_file(save_to, "wb") as file:
                call = fetch_call(url, save_to=file, max_bytes=max_bytes)
                written: int = await self.request(call)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await anyio.Path(save_to).unlink(missing_ok=True)
            raise
        return written

    async def _perform(self, command: Any) -> Any:
        kind = type(command)
        if kind is Send:
            if self.loop_guard is not None and self.loop_guard.other() is not None:
                raise other_loop_error(command.request, "the http client was first used there")
            if command.timeout is None:
                return await self.http_client.send(command.request, stream=True)
            import anyio

            with anyio.fail_after(command.timeout):
                return await self.http_client.send(command.request, stream=True)
        if kind is Next:
            if command.timeout is None:
                return await anext(command.iterator, None)
            import anyio

            with anyio.fail_after(command.timeout):
                return await anext(command.iterator, None)
        if kind is Sleep:
            return await self.retry.async_sleep(command.seconds)
        if kind is Write:
            if command.restart:
                await command.file.seek(0)
                await command.file.truncate()
            return await command.file.write(command.data)
        if kind is Close:
            if command.body is not None:
                return await aclose_reply(command.target, command.body)
            import anyio

            close = getattr(command.target, "aclose", None) or command.target.close
            with anyio.CancelScope(shield=True):
                return await close()
        if kind is Acquire:
            if command.timeout is None:
                return await command.slots.acquire()
            import anyio

            with anyio.fail_after(command.timeout):
                return await command.slots.acquire()
        return await command.aperform()  # a command of its own (a WebSocket's)

    def stream_type(self) -> Any:
        from aigateway._streams.streams import AsyncStream

        return AsyncStream


def fetch_call(
    url: str, timeout: float | None = None, *, save_to: Any = None, max_bytes: int | None = None
) -> APICall[bytes]:
    """A GET of a file result's URL (the key goes only to the gateway's own host); with a
    ``timeout``, one attempt within it (showing a result in a notebook must not hang); with
    ``save_to``, an open file the body is written to, at most ``max_bytes`` of it."""
    options: RequestOptions = {"extra_headers": {"Accept": "*/*"}}
    if timeout is not None:
        options = {**options, "timeout": timeout, "max_retries": 0}
    return APICall("GET", url, parse=bytes, options=options, save_to=save_to, max_bytes=max_bytes)
