"""Work done on first use: public names that load when first asked for, and a pause of the
garbage collector around one-time builds.

``aigateway`` and ``aigateway.types`` list their names with the module each comes from; a name
is imported when first asked for and then kept in the package, so ``import aigateway`` stays
cheap and a later lookup is a plain attribute.
"""

from __future__ import annotations

import gc
import importlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

__all__ = ["collector_paused", "lazy_names"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector around one-time work: importing reply types and
    building validators allocate tens of thousands of objects that stay alive, and each
    collection they trigger scans everything the process holds, for nothing (about a tenth
    of a fresh process's first completion). Left as found if it was already off; nested uses
    leave it to the outermost."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def lazy_names(
    package: str, table: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, whose globals are ``namespace``:
    ``table`` maps each lazy name to the (relative) module defining it."""

    def __getattr__(name: str) -> Any:
        module_name = table.get(name)
        if module_name is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        with collector_paused():
            value = getattr(importlib.import_module(module_name, package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(namespace.get("__all__", ())))

    return __getattr__, __dir__
