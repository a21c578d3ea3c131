"""The compatibility suite: the frameworks users test with, driven against the served mock.

Each test serves a fresh `MockGateway` with ``strict_fields=True`` on a real local socket, so
a body field the mock does not know fails the flow (a user running their framework against a
strict mock would see that 400). The frameworks come from the ``compat`` extra; without one, its
tests skip, saying how to install it (under CI, which installs it, they fail instead). Nothing here may reach beyond this machine: sockets connect to loopback only (see
`_loopback_only`), and the frameworks' own downloads and telemetry are turned off below,
before any of them is imported.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from aigateway.testing import MockGateway

from . import _loopback_only

OFFLINE = {
    # litellm fetches its model price list from the internet at import unless told not to
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_TELEMETRY": "False",
    # LangSmith traces only when asked; make sure the environment does not ask
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "HF_HUB_OFFLINE": "1",
}
os.environ.update(OFFLINE)


@pytest.fixture
def anyio_backend() -> str:
    """The frameworks run on asyncio only."""
    return "asyncio"


@pytest.fixture
def thread_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """An event loop set as this thread's for a test's sync calls, closed after it.

    Some frameworks' sync calls run on the thread's event loop and make one when there is
    none, which nobody closes (pydantic-ai's ``run_sync``; litellm's ``completion`` for its
    own logging): pytest reports such a loop as a resource leak.
    """
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        yield loop
    finally:
        asyncio.set_event_loop(None)
        loop.close()


@pytest.fixture(autouse=True)
def loopback_only() -> Iterator[None]:
    """Sockets reach loopback only while the test runs; fail a test whose framework tried
    anything else, even when it swallowed the refusal."""
    with _loopback_only.loopback_only() as refused:
        yield
    assert not refused, f"the test tried to reach beyond this machine: {refused}"


@dataclass
class Served:
    """A mock gateway served on a local port: its base URL, its key, what it was sent."""

    gateway: MockGateway
    url: str

    @property
    def api_key(self) -> str:
        return self.gateway.api_key

    def chat_bodies(self) -> list[dict[str, Any]]:
        """The JSON bodies of the chat completions requests answered, oldest first."""
        bodies = []
        for request in self.gateway.requests:
            if request.path.endswith("/chat/completions"):
                assert not request.body_cut, "raise max_logged_body_bytes for this test"
                bodies.append(json.loads(request.body))
        return bodies


@pytest.fixture
def served() -> Iterator[Served]:
    """A fresh mock with unknown fields refused, served on 127.0.0.1 for one test."""
    gateway = MockGateway(seed=3, strict_fields=True, max_logged_body_bytes=1024 * 1024)
    with gateway.serve() as url:
        yield Served(gateway, url)
