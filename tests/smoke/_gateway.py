"""A stand-in gateway on 127.0.0.1 made of the standard library only, so the smoke suite runs
where aigateway is installed without extras (no uvicorn, no mock server).

Each request is recorded; replies are scripted per path (a queue, oldest first) and a path
with nothing scripted gets a fixed whole reply: a chat completion, a run result, a model list.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["CHAT_REPLY", "Reply", "Request", "StubGateway", "chunk", "sse"]

CHAT_REPLY = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o-mini",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
}
SEARCH_REPLY = {
    "id": "run_1",
    "object": "run",
    "created": 1,
    "model": "tavily/search",
    "category": "search",
    "output": {
        "query": "gateways",
        "results": [{"url": "https://example.org/", "title": "Example", "position": 1}],
    },
    "usage": {"unit": "request", "quantity": 1, "credits": 0.01},
}
MODELS_REPLY = {"object": "list", "data": [{"id": "gpt-4o-mini", "object": "model"}]}
DEFAULT_REPLIES: dict[str, Any] = {
    "/v1/chat/completions": CHAT_REPLY,
    "/v1/run": SEARCH_REPLY,
    "/v1/models": MODELS_REPLY,
}


@dataclass(frozen=True)
class Reply:
    """One scripted reply: a JSON body (or an event stream's bytes), a status and headers."""

    body: Any = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)

    def encoded(self) -> tuple[bytes, str]:
        """The body's bytes and their content type."""
        if isinstance(self.body, bytes):
            return self.body, "text/event-stream"
        return json.dumps(self.body).encode(), "application/json"


@dataclass(frozen=True)
class Request:
    """What the gateway received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def chunk(content: str, finish_reason: str | None = None) -> dict[str, Any]:
    """A ``chat.completion.chunk`` carrying ``content``."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": finish_reason}],
    }


def sse(*events: dict[str, Any]) -> Reply:
    """A whole event stream: each event as a ``data:`` line, then ``data: [DONE]``."""
    lines = [f"data: {json.dumps(event)}\n\n" for event in events]
    return Reply(("".join(lines) + "data: [DONE]\n\n").encode())


class StubGateway:
    """The server, started by ``with StubGateway() as gateway`` on a free port."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self._script: defaultdict[str, deque[Reply]] = defaultdict(deque)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def script(self, path: str, *replies: Reply) -> None:
        """Answer the next requests to ``/v1{path}`` with ``replies``, in order."""
        with self._lock:
            self._script[f"/v1{path}"].extend(replies)

    def paths(self) -> list[str]:
        """The paths requested so far, in order."""
        return [request.path for request in self.requests]

    def respond(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
            queued = self._script[request.path]
            if queued:
                return queued.popleft()
        if request.path in DEFAULT_REPLIES:
            return Reply(DEFAULT_REPLIES[request.path])
        return Reply({"error": {"message": "no such path", "type": "not_found"}}, 404)

    def __enter__(self) -> StubGateway:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def _handler_for(gateway: StubGateway) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as a client's pool expects

        def _serve(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {name.lower(): value for name, value in self.headers.items()}
            reply = gateway.respond(Request(self.command, self.path, headers, body))
            data, content_type = reply.encoded()
            self.send_response(reply.status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(data)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: pytest shows what the tests assert."""

    return Handler
