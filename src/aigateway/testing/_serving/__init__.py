"""The mock gateway's front doors: how requests reach its sans-io core, each given its state.

In-process: ``transport.py`` (`MockTransport`, for httpx clients, sync and async), whose
delivery faults and pacing ``delivery.py`` acts out as httpx errors and mock-clock waits, and
``websocket_inprocess.py`` (the ``/v1/stream`` WebSocket without a socket). Over sockets:
``asgi.py`` (the ASGI app), ``server.py`` (``serve()`` on uvicorn) and ``connections.py`` (what
a connection may hold). ``websocket.py`` is the WebSocket session both share, without I/O.
"""
