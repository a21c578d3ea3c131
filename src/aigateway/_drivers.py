"""The two drivers of the request path: they run a call's flow, performing the I/O it asks for.

`SyncPipeline` blocks, `AsyncPipeline` awaits (on asyncio or trio); everything else, every
decision of a call, is the shared logic of `aigateway._http.Pipeline`. A driver sends each
command's outcome back into the flow, or throws in what the I/O raised, so the flow classifies
failures and cleans up (closing replies, giving back slots) the same way for both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx

from ._commands import Acquire, Body, Close, Next, Read, Send, Sleep
from ._http import APICall, Pipeline

if TYPE_CHECKING:
    from .types.chat_params import RequestOptions

__all__ = ["AsyncPipeline", "SyncPipeline", "fetch_call"]


class SyncPipeline(Pipeline):
    """The blocking driver, over an `httpx.Client`."""

    http_client: httpx.Client

    def request(self, call: APICall[Any]) -> Any:
        """Run a call's flow to its result (or error)."""
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

    def fetch(self, url: str, *, timeout: float | None = None) -> bytes:
        """The bytes at ``url`` (a file result), with this client's retries and timeouts, or
        in one attempt within ``timeout`` seconds."""
        data: bytes = self.request(fetch_call(url, timeout))
        return data

    def _perform(self, command: Any) -> Any:
        kind = type(command)
        if kind is Send:
            return self.http_client.send(command.request, stream=command.stream)
        if kind is Next:
            return next(command.iterator, None)
        if kind is Sleep:
            return self.retry.sleep(command.seconds)
        if kind is Body:
            response = command.response
            return response.iter_bytes() if command.decoded else response.iter_raw()
        if kind is Read:
            return command.response.read()
        if kind is Close:
            close = getattr(command.target, "close", None)
            return close() if close is not None else None
        if kind is Acquire:
            return command.slots.acquire()
        return command.perform()  # a command of its own (a WebSocket's)

    def stream_type(self) -> Any:
        from ._streaming import Stream

        return Stream

    def streamed_response_type(self) -> Any:
        from ._response import StreamedResponse

        return StreamedResponse


class AsyncPipeline(Pipeline):
    """The async driver (asyncio and trio), over an `httpx.AsyncClient`."""

    http_client: httpx.AsyncClient
    asynchronous = True

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

    async def fetch(self, url: str, *, timeout: float | None = None) -> bytes:
        """The bytes at ``url`` (a file result), with this client's retries and timeouts, or
        in one attempt within ``timeout`` seconds."""
        data: bytes = await self.request(fetch_call(url, timeout))
        return data

    async def _perform(self, command: Any) -> Any:
        kind = type(command)
        if kind is Send:
            return await self.http_client.send(command.request, stream=command.stream)
        if kind is Next:
            if command.timeout is None:
                return await anext(command.iterator, None)
            import anyio

            with anyio.fail_after(command.timeout):
                return await anext(command.iterator, None)
        if kind is Sleep:
            return await self.retry.async_sleep(command.seconds)
        if kind is Body:
            response = command.response
            return response.aiter_bytes() if command.decoded else response.aiter_raw()
        if kind is Read:
            return await command.response.aread()
        if kind is Close:
            import anyio

            close = getattr(command.target, "aclose", None) or command.target.close
            with anyio.CancelScope(shield=True):
                return await close()
        if kind is Acquire:
            return await command.slots.acquire()
        return await command.aperform()  # a command of its own (a WebSocket's)

    def stream_type(self) -> Any:
        from ._streaming import AsyncStream

        return AsyncStream

    def streamed_response_type(self) -> Any:
        from ._response import AsyncStreamedResponse

        return AsyncStreamedResponse


def fetch_call(url: str, timeout: float | None = None) -> APICall[bytes]:
    """A GET of a file result's URL (the key goes only to the gateway's own host); with a
    ``timeout``, one attempt within it (showing a result in a notebook must not hang)."""
    options: RequestOptions = {"extra_headers": {"Accept": "*/*"}}
    if timeout is not None:
        options = {**options, "timeout": timeout, "max_retries": 0}
    return APICall("GET", url, parse=bytes, options=options)
