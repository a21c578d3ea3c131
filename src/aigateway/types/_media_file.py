"""`MediaFile`: a result that is a file at a URL, to read, save or show in a notebook."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Union, cast

from pydantic import BaseModel, PrivateAttr

from aigateway._display import card, data_uri, guarded, media_html
from aigateway.errors import APIResponseValidationError
from aigateway.types.files import decode_data_url

if TYPE_CHECKING:
    import os

__all__ = ["DISPLAY_FETCH_TIMEOUT", "Fetch", "MediaFile"]


Fetch = Union[Callable[[str], bytes], Callable[[str], Awaitable[bytes]]]
"""How a file result gets its bytes: ``fetch(url)``, blocking or awaitable (the pipeline of the
client that made the call, with its retries, timeouts and connection pool)."""


class MediaFile(BaseModel):
    """A result that is a file at a URL (``data:`` or ``http(s)``): read it, save it, show it.

    ``read()`` and ``save(path)`` fetch an http URL with the `Client` that made the call (its
    timeout, retries and connection pool; the API key goes only to the gateway's own host);
    results of an `AsyncClient` use ``await aread()`` / ``await asave(path)``. ``data:`` URLs
    decode locally. The bytes are kept after the first read; ``save`` streams them to the file
    instead (up to its ``max_bytes``), keeping nothing in memory. Showing a result in a notebook
    fetches them once, within `DISPLAY_FETCH_TIMEOUT`, from a `Client` only; its plain repr
    never fetches.
    """

    _url_field: ClassVar[str] = "url"
    _media_kind: ClassVar[str] = "file"
    _fetch: Fetch | None = PrivateAttr(default=None)
    _content: bytes | None = PrivateAttr(default=None)
    _not_shown: str | None = PrivateAttr(default=None)

    @property
    def file_url(self) -> str:
        """The URL of the file."""
        url: str = getattr(self, self._url_field)
        return url

    def bind(self, fetch: Fetch) -> None:
        """Fetch this file with ``fetch(url)``, a function returning its bytes or an awaitable
        of them (done for you on results a client returned)."""
        self._fetch = fetch

    def __getstate__(self) -> dict[Any, Any]:
        """Pickled without the client it fetches with (a connection, and the API key): an
        unpickled result keeps the bytes already read and is bound again with `bind`."""
        state = super().__getstate__()
        private = state.get("__pydantic_private__")
        if private and private.get("_fetch") is not None:
            state["__pydantic_private__"] = {**private, "_fetch": None}
        return state

    def _decoded(self) -> bytes | None:
        try:
            decoded = decode_data_url(self.file_url)
        except ValueError as exc:
            raise APIResponseValidationError(
                f"the {self._url_field} of this result is a malformed data: URL ({exc})",
                body=self.file_url.encode(),
            ) from None
        return None if decoded is None else decoded[0]

    def _fetcher(self, want_async: bool) -> Any:
        fetch = self._fetch
        if fetch is None:
            raise TypeError(
                f"this result is not bound to a client, so {self.file_url!r} cannot be fetched; "
                "call result.bind(fetch) first"
            )
        if inspect.iscoroutinefunction(fetch) != want_async:
            maker, use = (
                ("a Client", "result.read() / save()")
                if want_async
                else ("an AsyncClient", "await result.aread() / asave()")
            )
            raise TypeError(f"this result came from {maker}; use {use}")
        return fetch

    def read(self) -> bytes:
        """The file's bytes (fetched once, then kept)."""
        if self._content is None:
            decoded = self._decoded()
            if decoded is None:
                decoded = self._fetcher(want_async=False)(self.file_url)
            self._content = decoded
        return self._content

    async def aread(self) -> bytes:
        """The file's bytes, for results of an `AsyncClient` (fetched once, then kept)."""
        if self._content is None:
            decoded = self._decoded()
            if decoded is None:
                decoded = await self._fetcher(want_async=True)(self.file_url)
            self._content = decoded
        return self._content

    def save(self, path: str | os.PathLike[str], *, max_bytes: int | None = None) -> Path:
        """Write the file to ``path``; returns the path.

        Fetched by a client, the file goes to ``path`` as it arrives, never whole in memory, up
        to ``max_bytes`` (decompressed; None: the client's limit for downloads, 2 GiB): past
        that the connection is closed, no file is left and `ResponseTooLargeError` is raised.
        Bytes already here (read before, a ``data:`` URL) are written as they are."""
        target = Path(path)
        fetch = self._file_fetch(want_async=False)
        if fetch is None:
            target.write_bytes(self.read())
        else:
            fetch(self.file_url, save_to=target, max_bytes=max_bytes)
        return target

    async def asave(self, path: str | os.PathLike[str], *, max_bytes: int | None = None) -> Path:
        """`save` for results of an `AsyncClient`."""
        fetch = self._file_fetch(want_async=True)
        if fetch is None:
            import anyio

            await anyio.Path(path).write_bytes(await self.aread())
        else:
            await fetch(self.file_url, save_to=path, max_bytes=max_bytes)
        return Path(path)

    def _file_fetch(self, want_async: bool) -> Any:
        """The fetch that writes the file as it arrives (a client's), when its bytes are still
        to be fetched; None when they are here, or when ``fetch`` (bound by the caller)
        returns bytes only."""
        if self._content is not None or self._decoded() is not None:
            return None
        fetch = self._fetcher(want_async)
        return fetch if "save_to" in inspect.signature(fetch).parameters else None

    def _available_bytes(self) -> bytes | None:
        """The bytes if they are here already (read before, or a ``data:`` URL), else None."""
        if self._content is not None:
            return self._content
        try:
            return self._decoded()
        except APIResponseValidationError:  # a repr must not raise: fall back to the URL
            return None

    def _display_bytes(self) -> bytes | None:
        """The bytes to show: here already, or fetched once on first display (from a `Client`,
        within `DISPLAY_FETCH_TIMEOUT`); None, with ``_not_shown`` saying why, otherwise."""
        content = self._available_bytes()
        if content is not None or self._not_shown is not None:
            return content
        fetch = self._fetch
        if fetch is None:
            self._not_shown = "not fetched: bind(fetch) it, then call result.read()"
        elif inspect.iscoroutinefunction(fetch):  # cannot be awaited from a repr
            self._not_shown = "not fetched: call await result.aread()"
        else:
            try:
                self._content = _fetch_briefly(cast("Callable[..., bytes]", fetch), self.file_url)
            except Exception as exc:  # a repr must not raise
                self._not_shown = f"not fetched ({type(exc).__name__}): call result.read()"
        return self._content

    def _media_html(self) -> str:
        """The file inline (from its bytes), or a link and why it is not shown."""
        content = self._display_bytes()
        src = (
            self.file_url
            if content is None
            else data_uri(_mime_of(content, self._media_kind), content)
        )
        return media_html(self._media_kind, src, self.file_url, self._not_shown)

    @guarded
    def _repr_html_(self) -> str | None:
        return card(self, [], body=self._media_html())


DISPLAY_FETCH_TIMEOUT = 5.0
"""Seconds a notebook waits for a media result's bytes on first display (one attempt)."""


def _fetch_briefly(fetch: Callable[..., bytes], url: str) -> bytes:
    """``fetch(url)``, within `DISPLAY_FETCH_TIMEOUT` when ``fetch`` takes a timeout."""
    if "timeout" in inspect.signature(fetch).parameters:
        return fetch(url, timeout=DISPLAY_FETCH_TIMEOUT)
    return fetch(url)


def _mime_of(content: bytes, kind: str) -> str:
    from aigateway.types.files import sniff_mime

    mime = sniff_mime(content)
    return f"{kind}/*" if mime == "application/octet-stream" else mime
