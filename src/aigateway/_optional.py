"""Optional extras: import them when a feature needs them, with an error that says how to install
them.

aigateway is not on the package index (and packages there with other names install a module
called ``aigateway`` too), so the error never says ``pip install 'aigateway[extra]'``: it names
the extra's own packages, read from the installed aigateway's metadata so that they cannot drift
from ``pyproject.toml``, and the line that installs the extra in a checkout.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import re
import shlex
from types import ModuleType

__all__ = ["extra_requirements", "require"]

_EXTRA_MARKER = re.compile(r"""\bextra\s*==\s*["']([^"']+)["']""")


def require(module: str, extra: str, feature: str) -> ModuleType:
    """Import ``module``, or raise ImportError naming the packages of the extra that brings it
    for ``feature``: to install when the package is missing, to upgrade when it is there but
    fails to import (a version too old or too new, or one of its own dependencies missing)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        package = module.split(".")[0]
        if _is_missing(exc, package):
            message = (
                f"{feature} needs the optional package {package!r}: "
                f"{_install_hint(extra, upgrade=False)}"
            )
        else:
            message = (
                f"{feature} needs the optional package {package!r}, which is installed but "
                f"failed to import ({exc}): {_install_hint(extra, upgrade=True)}"
            )
        raise ImportError(message, name=exc.name) from exc


def extra_requirements(extra: str) -> list[str]:
    """The requirements (``'uvicorn>=0.30'``) the installed aigateway lists for ``extra``;
    empty when aigateway's metadata is not there (run from a source tree) or lacks the extra."""
    try:
        requires = importlib.metadata.requires("aigateway") or []
    except importlib.metadata.PackageNotFoundError:
        return []
    found = []
    for line in requires:
        requirement, _, marker = line.partition(";")
        if extra in _EXTRA_MARKER.findall(marker):
            found.append(requirement.strip())
    return found


def _install_hint(extra: str, *, upgrade: bool) -> str:
    """The lines that install (or upgrade) ``extra``'s packages wherever the user is: the
    packages themselves, and the extra in a checkout of aigateway (the only line left when the
    metadata is missing, which means aigateway runs from a source tree)."""
    option = "--upgrade " if upgrade else ""
    checkout = f"`python -m pip install {option}-e '.[{extra}]'`"
    requirements = extra_requirements(extra)
    if not requirements:
        return f"in a checkout of aigateway, {checkout} installs the {extra!r} extra"
    packages = " ".join(shlex.quote(requirement) for requirement in requirements)
    direct = f"`python -m pip install {option}{packages}`"
    if upgrade:
        return (
            f"{direct} installs the versions aigateway supports "
            f"(or, in a checkout of aigateway, {checkout})"
        )
    return f"install it with {direct} (or, in a checkout of aigateway, {checkout})"


def _is_missing(error: ImportError, package: str) -> bool:
    """Whether ``error`` says ``package`` is not installed, rather than that it (or a module
    it needs, or one of its modules that an older version lacks) failed to import."""
    return isinstance(error, ModuleNotFoundError) and error.name in (None, package)
