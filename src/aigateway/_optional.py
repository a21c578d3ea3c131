"""Optional extras: import them when a feature needs them, with an error that names the extra."""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["require"]


def require(module: str, extra: str, feature: str) -> ModuleType:
    """Import ``module``, or raise ImportError saying which extra to install for ``feature``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"{feature} needs the optional package {module.split('.')[0]!r}: "
            f"install it with `pip install 'aigateway[{extra}]'`"
        ) from exc
