"""SQLite functions whose cost SQLite does not bound, replaced on the sandbox's connections.

SQLite stops a statement between two of its instructions (the sandbox's progress handler)
and refuses a value over its length limit, but one function call runs to its end, however
long that is: ``printf('%.*c', 1000000000, 'a')`` loops a billion times whatever the length
limit, and ``instr()``, ``replace()`` and two-argument ``trim()`` compare each position of a
string with the whole pattern (a megabyte of each: seconds to minutes). `install` registers
versions of these on a connection, each linear in its input:

* ``printf()`` and ``format()`` refuse a width or precision over the value limit, then let
  SQLite's own ``printf`` format on a private connection holding no data;
* ``instr()`` and ``replace()`` search with Python's ``str.find`` / ``str.replace`` (linear),
  and ``replace()`` refuses a result over the value limit before making it;
* ``trim()``, ``ltrim()`` and ``rtrim()`` with a set of characters test each character once.

A refusal raises `FunctionRefused` after handing its message to the connection's owner (a
SQLite error says only that a function failed).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from typing import Any

__all__ = ["FunctionRefused", "install"]

_FORMAT_SPEC = re.compile(r"%([-+ 0#!,]*)(\*|\d+)?(?:\.(\*|\d+))?l{0,2}(.?)", re.DOTALL)
_NO_ARGUMENT = frozenset(("%", "n", ""))
"""Conversions that take no argument (``%%``, ``%n``, a ``%`` ending the format)."""


class FunctionRefused(Exception):
    """A bounded function refused its arguments (the message went to the owner already)."""


def install(
    connection: sqlite3.Connection, max_value_bytes: int, refuse: Callable[[str], None]
) -> None:
    """Replace the unbounded functions of ``connection`` (see the module docstring).
    ``refuse(message)`` is told why a call was refused, just before it raises."""
    functions = _BoundedFunctions(max_value_bytes, refuse)
    for name in ("printf", "format"):
        connection.create_function(name, -1, functions.printf)
    connection.create_function("instr", 2, functions.instr, deterministic=True)
    connection.create_function("replace", 3, functions.replace, deterministic=True)
    for name, left, right in (("trim", True, True), ("ltrim", True, False), ("rtrim", False, True)):
        connection.create_function(name, 2, functions.trimmer(left, right), deterministic=True)


class _BoundedFunctions:
    def __init__(self, max_value_bytes: int, refuse: Callable[[str], None]) -> None:
        self.max_value_bytes = max_value_bytes
        self._refuse = refuse
        # SQLite's own printf and text conversions, on a connection that holds nothing
        self._formatter = sqlite3.connect(":memory:", check_same_thread=False)
        set_limit = getattr(self._formatter, "setlimit", None)  # Python 3.11 and later
        if set_limit is not None:
            set_limit(sqlite3.SQLITE_LIMIT_LENGTH, max_value_bytes)  # type: ignore[attr-defined]

    def refused(self, message: str) -> FunctionRefused:
        self._refuse(message)
        return FunctionRefused(message)

    def printf(self, *arguments: Any) -> Any:
        template = arguments[0] if arguments else None
        if isinstance(template, bytes):
            template = template.decode("utf-8", "replace")
        if isinstance(template, str):
            position = 1
            for match in _FORMAT_SPEC.finditer(template):
                for given in match.group(2, 3):
                    size = None if given is None else _as_int(given)
                    if given == "*":
                        size = _as_int(arguments[position]) if position < len(arguments) else 0
                        position += 1
                    if size is not None and abs(size) > self.max_value_bytes:
                        raise self.refused(
                            f"printf() and format() take widths and precisions up to "
                            f"{self.max_value_bytes}, not {size}"
                        )
                position += match.group(4) not in _NO_ARGUMENT
        return self._sqlite("printf", arguments)

    def instr(self, haystack: Any, needle: Any) -> int | None:
        if haystack is None or needle is None:
            return None
        if isinstance(haystack, bytes) and isinstance(needle, bytes):
            return haystack.find(needle) + 1
        return self._text(haystack).find(self._text(needle)) + 1

    def replace(self, value: Any, old: Any, new: Any) -> Any:
        if value is None or old is None or new is None:
            return None
        text, pattern, replacement = self._text(value), self._text(old), self._text(new)
        if not pattern:
            return value
        grows = len(replacement.encode()) - len(pattern.encode())
        size = len(text.encode()) + text.count(pattern) * max(0, grows)
        if size > self.max_value_bytes:
            raise self.refused(
                f"replace() would make a value of {size} bytes; at most {self.max_value_bytes}"
            )
        return text.replace(pattern, replacement)

    def trimmer(self, left: bool, right: bool) -> Callable[[Any, Any], str | None]:
        def trim(value: Any, characters: Any) -> str | None:
            if value is None or characters is None:
                return None
            text, removed = self._text(value), frozenset(self._text(characters))
            start, end = 0, len(text)
            while left and start < end and text[start] in removed:
                start += 1
            while right and end > start and text[end - 1] in removed:
                end -= 1
            return text[start:end]

        return trim

    def _text(self, value: Any) -> str:
        """``value`` as SQLite's text functions see it."""
        if isinstance(value, str):
            return value
        if isinstance(value, bytes):
            return value.decode("utf-8", "replace")
        return str(self._sqlite("CAST", (value,)))

    def _sqlite(self, function: str, arguments: tuple[Any, ...]) -> Any:
        if function == "CAST":
            sql = "SELECT CAST(? AS TEXT)"
        else:
            sql = f"SELECT {function}({', '.join('?' * len(arguments))})"
        try:
            return self._formatter.execute(sql, arguments).fetchone()[0]
        except sqlite3.Error as exc:
            raise self.refused(f"{function}(): {exc}") from None


_LEADING_INTEGER = re.compile(r"\s*[-+]?\d{1,19}")


def _as_int(value: Any) -> int:
    """``value`` as SQLite's printf reads a width (text and blobs by their leading number;
    any number beyond 64 bits as 2**63)."""
    if isinstance(value, bool | int):
        return int(value)
    if isinstance(value, float):
        return int(value) if abs(value) < 2**63 else 2**63
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value or "")
    match = _LEADING_INTEGER.match(text)
    if match is None:
        return 0
    if text[match.end() : match.end() + 1].isdigit():
        return 2**63
    return int(match.group())
