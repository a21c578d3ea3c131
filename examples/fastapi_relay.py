"""Relay a chat stream to a browser as server-sent events, from FastAPI.

`GET /chat?q=...` answers with `text/event-stream`: one event per piece of text, then
`event: done` (or `event: error`). When the browser goes away, the upstream call is closed.
The app reads `AIGATEWAY_API_KEY` and `AIGATEWAY_BASE_URL`; to try it without a key, start the
bundled mock in a second terminal and paste the `export` lines it prints:

    aigateway mock serve --rate-limits unlimited --credits 1000

Then serve the app (uvicorn 0.32.1 or later; docs/relay.md says why) and open
http://127.0.0.1:8000/chat?q=Hello in a browser:

    uvicorn fastapi_relay:app --port 8000

`python fastapi_relay.py` serves it on a free port for one question and prints the events.
"""

import json
import logging
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from aigateway import AIGatewayError, AsyncClient

logger = logging.getLogger(__name__)


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncGenerator[dict[str, AsyncClient], None]:
    async with AsyncClient() as gateway:  # one client, one connection pool, for the app's life
        yield {"gateway": gateway}  # each request's `request.state.gateway`


app = FastAPI(lifespan=lifespan)


def event(data: object, name: str | None = None) -> bytes:
    """One server-sent event; its data as JSON, which keeps it on one line."""
    field = f"event: {name}\n" if name else ""
    return f"{field}data: {json.dumps(data)}\n\n".encode()


async def relay(gateway: AsyncClient, question: str) -> AsyncGenerator[bytes, None]:
    """The reply's text as events, then `done` or `error`. When the browser leaves, this
    generator is cancelled where it waits or closed where it yields; either way, leaving
    `async with stream` closes the call to the gateway."""
    try:
        stream = await gateway.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": question}], stream=True
        )
        async with stream:
            async for chunk in stream:
                text = chunk.choices[0].delta.content if chunk.choices else None
                if text:
                    yield event({"text": text})
    except AIGatewayError as error:  # the status is sent already: tell the browser in-band
        logger.warning("chat relay failed: %s", error)
        yield event({"error": type(error).__name__}, "error")
        return
    yield event({}, "done")


class EventStreamResponse(StreamingResponse):
    """Sends the events of a generator, and closes it however the response ends: also when
    the browser leaves while an event is being written, and the generator waits at a `yield`."""

    media_type = "text/event-stream"

    def __init__(self, events: AsyncGenerator[bytes, None]) -> None:
        # no caching, and no buffering by nginx: each event goes out as it comes
        super().__init__(events, headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        self.events = events

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self.events.aclose()


@app.get("/chat")
async def chat(request: Request, q: str) -> EventStreamResponse:
    return EventStreamResponse(relay(request.state.gateway, q))


def demo() -> None:
    """Serve the app on a free port, print the events of one question, stop."""
    import threading
    import time

    import httpx
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, port=0, log_level="warning"))
    serving = threading.Thread(target=server.run)
    serving.start()
    while not server.started and serving.is_alive():
        time.sleep(0.01)
    if not server.started:  # uvicorn has logged why (no AIGATEWAY_API_KEY set?)
        raise SystemExit(1)
    port = server.servers[0].sockets[0].getsockname()[1]
    url = f"http://127.0.0.1:{port}/chat"
    with httpx.stream("GET", url, params={"q": "Hello"}) as response:
        for line in response.iter_lines():
            if line:
                print(line)
    server.should_exit = True
    serving.join()


if __name__ == "__main__":
    demo()
