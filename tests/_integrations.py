"""Heavy integrations some tests need (a ``redis-server``, Ray, a browser): skipped with a
reason saying how to get them on a contributor's machine, a failure under CI, which installs
them all (``.ci/run``), so that a skip there never hides a test."""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import NoReturn

import pytest

__all__ = ["import_integration", "integration_missing"]


def integration_missing(what: str, how: str) -> NoReturn:
    """Skip the test (or the module, at import) because ``what`` is missing; fail under CI."""
    reason = f"needs {what}, which is not installed here: {how}"
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI installs it, so this is not skipped there)", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def import_integration(module: str, extra: str) -> ModuleType:
    """``module``, or a skip naming the extra that brings it (a failure under CI)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        integration_missing(module, f"python -m pip install -e '.[{extra}]' in the checkout")
