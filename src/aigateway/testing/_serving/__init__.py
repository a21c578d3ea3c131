"""The mock gateway's front doors: how requests reach its sans-io core, each given its state.

In-process: ``inprocess.py`` (the transport's core, for sync and async clients of httpx and
httpx2), given its library's base classes by ``transport.py`` (`MockTransport`, httpx) and
``transport_httpx2.py`` (`Httpx2MockTransport`), whose delivery faults and pacing
``delivery.py`` acts out as the client library's errors and mock-clock waits, and
``websocket_inprocess.py`` (the ``/v1/stream`` WebSocket without a socket). Over sockets:
``asgi.py`` (the ASGI app), ``server.py`` (``serve()`` on uvicorn) and ``connections.py`` (what
a connection may hold). ``websocket.py`` is the WebSocket session both share, without I/O.
"""
