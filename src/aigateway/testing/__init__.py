"""A mock Unified AI Gateway for tests: in-process, stateful and deterministic.

`MockGateway` serves ``POST /chat/completions``, ``GET /models`` and ``GET /models/{id}``
exactly as the spec describes them (bodies, stream events, error bodies, headers), and every
non-chat service category on ``POST /run`` and ``POST /image/generate`` (the files they make at
``GET /files/{id}``), with accounts and credits, replaceable model and service catalogues and a
seeded fake model::

    import httpx
    from aigateway.testing import MockGateway

    gateway = MockGateway(seed=1)
    with httpx.Client(transport=gateway.transport(), base_url=gateway.base_url,
                      headers={"Authorization": f"Bearer {gateway.api_key}"}) as http:
        reply = http.post("/chat/completions", json={
            "model": "gpt-4o", "messages": [{"role": "user", "content": "Hi"}]}).json()
    assert gateway.credits() < 20

The core imports nothing of the client side but `aigateway.types` and `aigateway.errors`, so
it serves any client, the official ``openai`` SDK included.
"""

from __future__ import annotations

from ._accounts import Account, Charge, ChargeResult, Ledger
from ._catalogue import Catalogue, ModelSpec, default_catalogue
from ._clock import MockClock
from ._gateway import MockGateway
from ._services import FileStore, ServiceCatalogue, ServiceSpec, ServiceStores, default_services
from ._transport import MockTransport
from ._wire import MockRequest, MockResponse

__all__ = [
    "Account",
    "Catalogue",
    "Charge",
    "ChargeResult",
    "Ledger",
    "MockClock",
    "MockGateway",
    "MockRequest",
    "MockResponse",
    "MockTransport",
    "ModelSpec",
    "ServiceCatalogue",
    "ServiceSpec",
    "ServiceStores",
    "FileStore",
    "default_catalogue",
    "default_services",
]
