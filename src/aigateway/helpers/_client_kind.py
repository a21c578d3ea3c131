"""The one check that a helper got the kind of client it drives, made before anything is sent.

A sync helper given an `AsyncClient` would send nothing and hand back un-awaited coroutines;
an async helper given a `Client` would block the event loop on every call. A helper's sync
name is ``name`` and its async twin's ``a`` + ``name`` (``run_batch`` / ``arun_batch``), so
the error names the one to use.
"""

from __future__ import annotations

import inspect

__all__ = ["check_client_kind"]


def check_client_kind(
    client: object, helper: str, *, asynchronous: bool, call: object = None
) -> None:
    """Raise `TypeError` unless ``client`` is an `AsyncClient` (``asynchronous``) or a
    `Client` (not), naming the helper for the kind it is. A sync helper's ``call``, a function
    it calls with the client, must not be async either."""
    from aigateway._client.clients import AsyncClient, Client

    if asynchronous:
        if not isinstance(client, AsyncClient):
            twin = helper.removeprefix("a")
            hint = f": use {twin} with a Client" if isinstance(client, Client) else ""
            raise TypeError(f"{helper} takes an AsyncClient, not {_kind(client)}{hint}")
        return
    if not isinstance(client, Client):
        hint = f": use a{helper} with an AsyncClient" if isinstance(client, AsyncClient) else ""
        raise TypeError(f"{helper} takes a Client, not {_kind(client)}{hint}")
    if inspect.iscoroutinefunction(call):
        raise TypeError(f"{helper} cannot await call={call!r}: use a{helper} for an async call")


def _kind(client: object) -> str:
    name = type(client).__name__
    return f"an {name}" if name[:1] in "AEIOU" else f"a {name}"
