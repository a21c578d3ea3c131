"""`MockTransport`: the mock's in-process transport for httpx's clients, and the transport for
either HTTP library (`in_process_transport`, what ``MockGateway.transport`` gives).

``httpx.Client(transport=gateway.transport(), base_url=gateway.base_url)`` and the same with
``httpx.AsyncClient`` talk to the gateway without a socket; all the work is the core's
(`aigateway.testing._serving.inprocess`), which `Httpx2MockTransport` shares for httpx2.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import httpx

from aigateway._stacks import get
from aigateway.testing._serving.inprocess import InProcessTransport

if TYPE_CHECKING:
    from aigateway.testing._core.state import GatewayState
    from aigateway.testing._serving.transport_httpx2 import Httpx2MockTransport

__all__ = ["MockTransport", "StackName", "in_process_transport"]

StackName = Literal["httpx", "httpx2"]
"""The HTTP libraries the in-process transport serves (`aigateway._stacks.STACK_NAMES`)."""


class MockTransport(InProcessTransport, httpx.BaseTransport, httpx.AsyncBaseTransport):
    """Sends httpx requests to a mock gateway (`MockGateway.transport` makes one); works for
    both `httpx.Client` and `httpx.AsyncClient`. (`Httpx2MockTransport` is the same for
    httpx2's clients.)"""


def in_process_transport(state: GatewayState, stack: str) -> MockTransport | Httpx2MockTransport:
    """The transport of ``state``'s gateway for the clients of ``stack``: ValueError naming
    the stacks for another name, ImportError naming the extra when httpx2 is missing."""
    get(stack)
    if stack == "httpx2":
        from aigateway.testing._serving.transport_httpx2 import Httpx2MockTransport

        return Httpx2MockTransport(state)
    return MockTransport(state)
