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

The mock imports nothing of the client side but `aigateway.types` and `aigateway.errors` (only
`aigateway.testing._clients` hands out our own clients wired to it), so it serves any client,
the official ``openai`` SDK included. Its parts, top to bottom (each imports only those below
it, a contract of ``[tool.importlinter]``):

* ``_gateway.py``: `MockGateway`, the state composed with its front doors; ``_clients.py``;
  ``scorecard.py`` (``python -m aigateway.testing.scorecard``); ``_marker.py``, the support
  of the pytest plugin's ``aigateway`` marker;
* ``_serving/``: the front doors, given the state: the in-process transport for httpx and
  httpx2 and WebSocket (delivery faults acted out as the client library's errors), the ASGI
  app on uvicorn and what a connection may hold; ``_routes/``: what the gateway answers
  (chat and models, the services and their planners, discovery documents, the admin API);
  ``_record/``: record and replay of real exchanges (`CassetteTransport`);
* ``_core/``: the sans-io gateway: request and reply values, the state and `handle`, the
  router and what handlers get, accounts and credits, catalogues, files and stores, quotas,
  rate limits, idempotency, faults, pacing, clock, ids, the request log;
* ``_model/``: the seeded fake model behind chat; ``_sql/``: the sandboxed SQLite behind the
  database services.

`Httpx2MockTransport` and `Httpx2CassetteTransport`, the same for httpx2's clients, load when
first asked for (they need the ``httpx2`` extra); ``__all__`` lists them when httpx2 is
installed, so ``from aigateway.testing import *`` works without it.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING, Any

from aigateway._lazy import lazy_names
from aigateway._stacks import get
from aigateway.testing._core.accounts import Account, Charge, ChargeResult, Ledger
from aigateway.testing._core.catalogue import Catalogue, ModelSpec, default_catalogue
from aigateway.testing._core.clock import MockClock
from aigateway.testing._core.context import (
    Plan,
    RequestContext,
    ServiceCategory,
    ServiceContext,
    refuse,
)
from aigateway.testing._core.faults import FaultPlan
from aigateway.testing._core.idempotency import IdempotencyStore
from aigateway.testing._core.quotas import Quota, QuotaExceeded, Quotas
from aigateway.testing._core.rate_limits import PRESETS as RATE_LIMIT_PRESETS
from aigateway.testing._core.rate_limits import RateLimiter, RateLimits
from aigateway.testing._core.services import (
    FileStore,
    ServiceCatalogue,
    ServiceSpec,
    ServiceStores,
    default_services,
)
from aigateway.testing._core.wire import MockRequest, MockResponse, error_response, json_response
from aigateway.testing._gateway import MockGateway
from aigateway.testing._model.engine import ScriptedReply
from aigateway.testing._record.cassette import CassetteError, CassetteTransport
from aigateway.testing._serving.connections import ConnectionLimits
from aigateway.testing._serving.transport import MockTransport

if TYPE_CHECKING:
    from aigateway.testing._record.cassette_httpx2 import (
        Httpx2CassetteTransport as Httpx2CassetteTransport,
    )
    from aigateway.testing._serving.transport_httpx2 import (
        Httpx2MockTransport as Httpx2MockTransport,
    )

_HTTPX2_NAMES = {
    "Httpx2CassetteTransport": "aigateway.testing._record.cassette_httpx2",
    "Httpx2MockTransport": "aigateway.testing._serving.transport_httpx2",
}
_lazy_getattr, __dir__ = lazy_names(__name__, _HTTPX2_NAMES, globals())


def __getattr__(name: str) -> Any:
    if name in _HTTPX2_NAMES:
        get("httpx2")  # httpx2 missing: an ImportError naming the extra, not a bare one
    return _lazy_getattr(name)


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
if importlib.util.find_spec("httpx2") is not None:
    __all__ += sorted(_HTTPX2_NAMES)
