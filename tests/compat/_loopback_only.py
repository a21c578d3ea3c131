"""Sockets may reach this machine's loopback addresses only, and look up no other name.

The frameworks under test reach for the internet on their own (litellm's model price list,
telemetry): `install` makes every other connection and every name lookup beyond
``localhost`` fail at once with `PermissionError`, before any packet leaves (a DNS query
included), and records it in `REFUSED`, so a test sees the attempt even when the framework
swallows the error. Kept free of imports from the test suite: the ``llm`` subprocess runs this
file as its ``sitecustomize``.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

REFUSED: list[str] = []
"""Every address or name refused, in order."""


def is_loopback(host: object) -> bool:
    """Whether ``host`` (an address or a name, as ``connect`` or ``getaddrinfo`` take it)
    is this machine's loopback."""
    if host is None or host in ("localhost", b"localhost"):
        return True
    text = host.decode() if isinstance(host, bytes) else str(host)
    try:
        return ipaddress.ip_address(text.split("%")[0]).is_loopback
    except ValueError:
        return False


def refuse_unless_loopback(host: object, what: object) -> None:
    if not is_loopback(host):
        REFUSED.append(repr(what))
        raise PermissionError(f"the compatibility tests reach loopback only, not {what!r}")


_ORIGINAL = {
    "getaddrinfo": (socket, socket.getaddrinfo),
    "connect": (socket.socket, socket.socket.connect),
    "connect_ex": (socket.socket, socket.socket.connect_ex),
}
_INHERITED = {name for name, (owner, _) in _ORIGINAL.items() if name not in vars(owner)}
"""The functions their owner inherits (`socket.socket`'s connects are `_socket.socket`'s):
uninstalling deletes the guard rather than leave a copy of the original in the owner."""


def _guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    refuse_unless_loopback(host, host)
    return _ORIGINAL["getaddrinfo"][1](host, *args, **kwargs)


def _guarded_connect(self: socket.socket, address: Any) -> None:
    if isinstance(address, tuple):  # an IP address; else a Unix socket's path, local
        refuse_unless_loopback(address[0], address)
    _ORIGINAL["connect"][1](self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> int:
    if isinstance(address, tuple):
        refuse_unless_loopback(address[0], address)
    return _ORIGINAL["connect_ex"][1](self, address)  # type: ignore[no-any-return]


_GUARDS = {
    "getaddrinfo": _guarded_getaddrinfo,
    "connect": _guarded_connect,
    "connect_ex": _guarded_connect_ex,
}


def install() -> None:
    """Refuse, from now on, every connection and name lookup beyond loopback."""
    for name, guard in _GUARDS.items():
        setattr(_ORIGINAL[name][0], name, guard)


def uninstall() -> None:
    """Put the standard library's functions back, as they were."""
    for name, (owner, original) in _ORIGINAL.items():
        if name not in _INHERITED:
            setattr(owner, name, original)
        elif name in vars(owner):
            delattr(owner, name)


@contextmanager
def loopback_only() -> Iterator[list[str]]:
    """Within the block, refuse everything beyond loopback; yields a list that holds, once
    the block ends, what was refused in it."""
    before = len(REFUSED)
    refused: list[str] = []
    install()
    try:
        yield refused
    finally:
        uninstall()
        refused.extend(REFUSED[before:])
