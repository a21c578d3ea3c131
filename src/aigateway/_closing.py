"""``with`` and ``async with`` for objects that hold a connection: leaving the block closes.

Such objects (clients, streams, sockets, unread replies) refuse to be pickled, with an error
that says what to send instead: a connection cannot move to another process, and their
requests carry the API key.
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["AsyncClosing", "Closing"]


def refuse_pickling(holder: object) -> NoReturn:
    """The error for pickling an object that holds a connection."""
    name = type(holder).__name__
    raise TypeError(
        f"{name} cannot be pickled: it holds a connection to the gateway (and requests that "
        "carry the API key); pickle what it returned (replies, chunks, errors), and make a "
        "client in each process that needs one"
    )


class Closing:
    """``with obj:`` calls ``obj.close()`` on leaving, however the block ends."""

    def __reduce__(self) -> NoReturn:
        refuse_pickling(self)

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncClosing:
    """``async with obj:`` awaits ``obj.close()`` on leaving, however the block ends."""

    def __reduce__(self) -> NoReturn:
        refuse_pickling(self)

    async def close(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
