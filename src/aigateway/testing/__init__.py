"""A mock Unified AI Gateway for tests: in-process, stateful and deterministic.

`MockGateway` serves ``POST /chat/completions``, ``GET /models`` and ``GET /models/{id}``
exactly as the API describes them (bodies, stream events, error bodies, headers), and every
non-chat service category on ``POST /run`` and ``POST /image/generate`` (the files they make at
``GET /files/{id}``), with accounts and credits, replaceable model and service catalogues, a
seeded fake model, per-key rate limits (``gateway.rate_limits``), idempotency keys and fault
injection (``gateway.faults``)::

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

from aigateway.testing._accounts import Account, Charge, ChargeResult, Ledger
from aigateway.testing._cassette import CassetteError, CassetteTransport
from aigateway.testing._catalogue import Catalogue, ModelSpec, default_catalogue
from aigateway.testing._clock import MockClock
from aigateway.testing._connections import ConnectionLimits
from aigateway.testing._engine import ScriptedReply
from aigateway.testing._faults import FaultPlan
from aigateway.testing._gateway import MockGateway
from aigateway.testing._idempotency import IdempotencyStore
from aigateway.testing._quotas import Quota, QuotaExceeded, Quotas
from aigateway.testing._ratelimits import PRESETS as RATE_LIMIT_PRESETS
from aigateway.testing._ratelimits import RateLimiter, RateLimits
from aigateway.testing._routes import RequestContext
from aigateway.testing._run import ServiceCategory
from aigateway.testing._service_context import Plan, ServiceContext, refuse
from aigateway.testing._services import (
    FileStore,
    ServiceCatalogue,
    ServiceSpec,
    ServiceStores,
    default_services,
)
from aigateway.testing._transport import MockTransport
from aigateway.testing._wire import MockRequest, MockResponse, error_response, json_response

__all__ = [
    "Account",
    "Catalogue",
    "CassetteError",
    "CassetteTransport",
    "RATE_LIMIT_PRESETS",
    "Charge",
    "ChargeResult",
    "ConnectionLimits",
    "FaultPlan",
    "IdempotencyStore",
    "Ledger",
    "MockClock",
    "MockGateway",
    "MockRequest",
    "MockResponse",
    "MockTransport",
    "ModelSpec",
    "Plan",
    "Quota",
    "QuotaExceeded",
    "Quotas",
    "RequestContext",
    "ScriptedReply",
    "ServiceCatalogue",
    "ServiceCategory",
    "ServiceContext",
    "ServiceSpec",
    "ServiceStores",
    "FileStore",
    "RateLimiter",
    "RateLimits",
    "default_catalogue",
    "default_services",
    "error_response",
    "json_response",
    "refuse",
]
