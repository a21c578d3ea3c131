"""Optional extras: import them when a feature needs them, with an error that names the extra."""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["require"]


def require(module: str, extra: str, feature: str) -> ModuleType:
    """Import ``module``, or raise ImportError naming the extra that brings it for ``feature``:
    to install when the package is missing, to upgrade when it is there but fails to import
    (a version too old or too new, or one of its own dependencies missing)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        package = module.split(".")[0]
        if _is_missing(exc, package):
            message = (
                f"{feature} needs the optional package {package!r}: "
                f"install it with `pip install 'aigateway[{extra}]'`"
            )
        else:
            message = (
                f"{feature} needs the optional package {package!r}, which is installed but "
                f"failed to import ({exc}): `pip install --upgrade 'aigateway[{extra}]'` "
                f"installs the versions aigateway supports"
            )
        raise ImportError(message, name=exc.name) from exc


def _is_missing(error: ImportError, package: str) -> bool:
    """Whether ``error`` says ``package`` is not installed, rather than that it (or a module
    it needs, or one of its modules that an older version lacks) failed to import."""
    return isinstance(error, ModuleNotFoundError) and error.name in (None, package)
