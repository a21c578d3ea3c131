"""The sans-io core of the mock gateway: a `MockRequest` in, a `MockResponse` out, no I/O.

``state.py`` holds what a gateway keeps and answers a request (`GatewayState.handle`);
``guard.py`` stands between a request and the router (body size, rate limits, idempotency);
``router.py`` picks the handler, which gets what ``context.py`` defines (`RequestContext`,
and for a service's planner `ServiceContext` and `Plan`). The parts of the state:
``accounts.py`` (keys and an exact credits ledger), ``billing.py`` (the credits fields and the
402), ``catalogue.py`` (models), ``services.py`` (services, their files and stores),
``quotas.py``, ``rate_limits.py``, ``idempotency.py``, ``faults.py``, ``pacing.py``,
``clock.py``, ``ids.py`` and ``request_log.py``; ``wire.py`` holds the request and reply
values and the error bodies. Imports nothing of the front doors, routes or `MockGateway`.
"""
