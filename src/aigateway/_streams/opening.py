"""`Opening`: what the async ``stream()`` and ``connect()`` return, a stream or socket not yet
opened, which the caller either ``await``\\ s or enters with ``async with``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, Generic, TypeVar

R = TypeVar("R")

__all__ = ["Opening"]


class Opening(Generic[R]):
    """A stream or socket being opened: ``async with`` it (closed on leaving), or ``await`` it.

    Nothing is sent until one of the two happens, so an unused opening leaves nothing behind.
    """

    def __init__(self, open_: Callable[[], Awaitable[R]]) -> None:
        self._open = open_
        self._opened: R | None = None

    def __await__(self) -> Generator[Any, None, R]:
        return self._open().__await__()

    async def __aenter__(self) -> R:
        self._opened = await self._open()
        entered: R = await self._opened.__aenter__()  # type: ignore[attr-defined]
        return entered

    async def __aexit__(self, *exc_info: object) -> None:
        """Leave the opened stream's (or socket's) ``async with``: it closes."""
        if self._opened is not None:
            await self._opened.__aexit__(*exc_info)  # type: ignore[attr-defined]
