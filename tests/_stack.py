"""The HTTP library the client's tests hand the client: httpx, or httpx2 on the lane
``AIGATEWAY_HTTP_STACK=httpx2`` (the client's own pools are then httpx2's, and a response,
timeout or transport a test gives it must be of the same library)."""

from __future__ import annotations

import importlib
from types import ModuleType

from aigateway._stacks import own_stack


def stack_name() -> str:
    """``"httpx"`` or ``"httpx2"``: the stack of the pools the client makes itself."""
    return own_stack().name


http: ModuleType = importlib.import_module(stack_name())
"""httpx or httpx2, per the lane: ``http.Response(...)``, ``http.MockTransport(...)``."""
core: ModuleType = own_stack().core()
"""httpcore or httpcore2: the connection pools under the client's own."""
