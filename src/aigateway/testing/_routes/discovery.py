"""The gateway's public discovery documents, at the site root, made from what it serves.

======================================  ============================================================
``GET /llms.txt``                       the llmstxt.org summary: the API's endpoints, the chat
                                        models with prices, the services, links to the rest
``GET /llms-full.txt``                  the same in full: authentication, errors, credits and
                                        limits, every model, every service with its input schema
``GET /agent.json``                     an agent card (the A2A shape): one skill per chat model and
                                        per service category
``GET /.well-known/mcp.json``           a server card (the MCP shape): the API's operations as tools
                                        with JSON-Schema inputs, each naming its HTTP call in
                                        ``_meta.http``
``GET /.well-known/ai-plugin.json``     a plugin manifest (the ChatGPT-plugin shape)
======================================  ============================================================

No key is needed: they are public. Each is built on each request from the catalogue, the
services and the host the request came to (its ``Host`` header), so it follows catalogue
changes and its links work from wherever the gateway is reached; the same gateway reached at
the same host gives the same bytes. The endpoints they describe are listed once, in
`ENDPOINTS`.
"""

from __future__ import annotations

import copy
import functools
import json
import re
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter

from aigateway._version import __version__
from aigateway.testing._core.accounts import FREE_TIER_CREDITS, to_decimal
from aigateway.testing._core.catalogue import ModelSpec, model_object
from aigateway.testing._core.context import RequestContext
from aigateway.testing._core.router import Router
from aigateway.testing._core.services import ServiceSpec
from aigateway.testing._core.wire import JSON_CONTENT_TYPE, MockResponse
from aigateway.types.chat_params import ChatCompletionRequest

__all__ = ["DOCUMENTS", "ENDPOINTS", "Endpoint", "add_discovery_routes"]

TITLE = "Unified AI Gateway (mock)"
TEXT_CONTENT_TYPE = "text/plain; charset=utf-8"
_HOST = re.compile(r"^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$")


@dataclass(frozen=True)
class Endpoint:
    """One operation of the API, as the documents describe it; ``path`` is relative to /v1."""

    method: str
    path: str
    title: str
    summary: str


ENDPOINTS = (
    Endpoint(
        "POST",
        "/chat/completions",
        "Chat completions",
        "OpenAI-compatible chat: streaming (server-sent events), tools, vision and JSON mode",
    ),
    Endpoint(
        "GET",
        "/models",
        "List models",
        "the chat models, with prices (credits per 1K tokens) and capabilities",
    ),
    Endpoint("GET", "/models/{model_id}", "Retrieve a model", "one chat model, by id"),
    Endpoint(
        "POST",
        "/run",
        "Run a service",
        'any non-chat service: {"model": "<service id>", "inputs": {...}}',
    ),
    Endpoint(
        "POST",
        "/image/generate",
        "Generate an image",
        'an image service: {"model", "prompt", "size": "<width>x<height>"}',
    ),
    Endpoint(
        "GET",
        "/files/{file_id}",
        "Download a file",
        "a file a service made, for the key whose call made it",
    ),
)


@dataclass(frozen=True)
class _Site:
    """What every document is made from."""

    root: str
    """The site root the request came to, e.g. ``http://127.0.0.1:8000``."""
    models: list[ModelSpec]
    services: dict[str, list[ServiceSpec]]
    """The services by category, in catalogue order."""
    schemas: dict[str, dict[str, Any]]
    """The JSON Schema of each category's ``inputs``."""

    @property
    def base(self) -> str:
        return self.root + "/v1"

    def summary(self) -> str:
        services = sum(len(specs) for specs in self.services.values())
        return (
            f"One OpenAI-compatible API at {self.base}: {_count(len(self.models), 'chat model')} "
            f"on /chat/completions and {_count(services, 'service')} in "
            f"{_count(len(self.services), 'category', 'categories')} on /run, billed in credits."
        )


def _site(ctx: RequestContext) -> _Site:
    host = ctx.request.headers.get("host", "")
    if _HOST.match(host):
        root = f"http://{host}"
    else:
        parts = urllib.parse.urlsplit(ctx.base_url)
        root = f"{parts.scheme}://{parts.netloc}"
    services: dict[str, list[ServiceSpec]] = {}
    for spec in ctx.services.specs():
        services.setdefault(spec.category, []).append(spec)
    categories = ctx.service_categories
    schemas = {
        name: _schema(categories[name].inputs) if name in categories else {"type": "object"}
        for name in services
    }
    return _Site(root, ctx.catalogue.specs(), services, schemas)


@functools.lru_cache(maxsize=128)
def _cached_schema(inputs: Any) -> str:
    return json.dumps(TypeAdapter(inputs).json_schema())


def _schema(inputs: Any) -> dict[str, Any]:
    """The JSON Schema of a category's inputs (any object when pydantic cannot write one)."""
    try:
        schema: dict[str, Any] = json.loads(_cached_schema(inputs))
    except Exception:  # an unhashable or exotic type a user registered
        return {"type": "object"}
    return schema


def _chat_schema() -> dict[str, Any]:
    return _schema(ChatCompletionRequest)


def _count(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else plural or word + 's'}"


def _credits(amount: float) -> str:
    return format(to_decimal(amount).normalize(), "f")


def _price(spec: ServiceSpec) -> str:
    return f"{_credits(spec.price)} credits per {spec.unit.replace('1k_', '1K ')}"


def _model_line(spec: ModelSpec) -> str:
    capabilities = [name for name, on in model_object(spec)["capabilities"].items() if on]
    return (
        f"{spec.owned_by}; {_credits(spec.input_price_per_1k)} credits per 1K input tokens, "
        f"{_credits(spec.output_price_per_1k)} per 1K output tokens; "
        f"{spec.context_window:,}-token context; {', '.join(capabilities)}"
    )


def _category_text(site: _Site, category: str) -> str:
    """What a category does, from its inputs' docstring (its name when there is none)."""
    text = site.schemas[category].get("description") or category
    return " ".join(str(text).replace("``", "`").split())


def _service_list(specs: list[ServiceSpec]) -> str:
    return ", ".join(f"{spec.id} ({_price(spec)})" for spec in specs)


# -- the documents -------------------------------------------------------------------------


def llms_txt(site: _Site) -> str:
    lines = [f"# {TITLE}", "", f"> {site.summary()}", ""]
    lines += [
        "The mock gateway bundled with the aigateway Python package, for tests: replies are "
        "generated, nothing leaves the machine, and calls are billed in mock credits. Every "
        "API call carries `Authorization: Bearer <API key>`.",
        "",
        "## API",
        "",
    ]
    lines += [
        f"- [{e.title}]({site.base}{e.path}): `{e.method} /v1{e.path}`, {e.summary}"
        for e in ENDPOINTS
    ]
    lines += ["", "## Models", ""]
    lines += [f"- [{m.id}]({site.base}/models/{m.id}): {_model_line(m)}" for m in site.models]
    lines += ["", "## Services", ""]
    lines += [
        f"- [{category}]({site.base}/run): {_service_list(specs)}"
        for category, specs in site.services.items()
    ]
    lines += ["", "## Optional", ""]
    lines += [
        f"- [Full reference]({site.root}/llms-full.txt): every model and service, their inputs, "
        "errors, credits and limits",
        f"- [Agent card]({site.root}/agent.json): the A2A agent card",
        f"- [MCP server card]({site.root}/.well-known/mcp.json): the operations as tools",
        f"- [Plugin manifest]({site.root}/.well-known/ai-plugin.json): the ChatGPT-plugin manifest",
    ]
    return "\n".join(lines) + "\n"


def llms_full_txt(site: _Site) -> str:
    chat_fields = ", ".join(f"`{name}`" for name in _chat_schema().get("properties", {}))
    host = site.root.partition("://")[2]
    lines = [f"# {TITLE}", "", f"> {site.summary()}", ""]
    lines += [
        "## Authentication",
        "",
        "Every API call carries `Authorization: Bearer <API key>`; a missing or unknown key is "
        "a 401 (`invalid_api_key`). Keys are per account, and so are credits and rate limits. "
        "These discovery files need no key.",
        "",
        "## Endpoints",
        "",
    ]
    for e in ENDPOINTS:
        lines += [f"### {e.method} {site.base}{e.path}", "", e.summary[0].upper() + e.summary[1:]]
        if e.path == "/chat/completions":
            lines += [
                "",
                f"Request fields: {chat_fields}. The same chat streams over the WebSocket "
                f"`ws://{host}/v1/stream` (the key as the subprotocol pair `Authorization`, "
                "`<API key>`).",
            ]
        lines.append("")
    lines += [
        "## Errors",
        "",
        'Errors are JSON: `{"error": {"message", "type", "code", "param"}}`, `param` naming the '
        "offending field. 400 invalid request; 401 missing or invalid key; 402 insufficient "
        "credits; 404 unknown model, service or path; 405 wrong method; 409 an idempotency key "
        "reused with another body; 429 rate limited (`Retry-After`, `X-RateLimit-Limit`, "
        "`X-RateLimit-Remaining`, `X-RateLimit-Reset`); 500 and 503 are worth retrying with "
        "exponential backoff.",
        "",
        "## Credits and limits",
        "",
        f"A new account has {_credits(FREE_TIER_CREDITS)} credits. Chat is billed per 1K input "
        "and per 1K output tokens, services per unit; a call the balance does not cover is a "
        "402 and costs nothing. Replies carry `_remaining_credits`, and `_balance_warning` is "
        "true below 10 credits. Rate limits are per key; replies carry `X-RateLimit-*`.",
        "",
        "## Models",
        "",
    ]
    for m in site.models:
        lines += [f"### {m.id}", "", f"- {_model_line(m)}", ""]
    lines += ["## Services", ""]
    for category, specs in site.services.items():
        lines += [f"### {category}", "", _category_text(site, category), ""]
        lines += [f"- `{spec.id}`: {_price(spec)}" for spec in specs]
        schema = json.dumps(site.schemas[category], separators=(",", ":"))
        lines += ["", "Inputs (JSON Schema):", "", "```json", schema, "```", ""]
    return "\n".join(lines)


def agent_json(site: _Site) -> dict[str, Any]:
    skills: list[dict[str, Any]] = []
    for m in site.models:
        entry = model_object(m)
        on = [name for name, flag in entry["capabilities"].items() if flag]
        skills.append(
            {
                "id": f"chat:{m.id}",
                "name": f"Chat with {m.id}",
                "description": f"POST {site.base}/chat/completions with model {m.id}: "
                f"{_model_line(m)}",
                "tags": ["chat", m.owned_by, *on],
                "inputModes": ["text/plain", "image/*"] if m.vision else ["text/plain"],
                "outputModes": ["text/plain", "application/json"],
            }
        )
    for category, specs in site.services.items():
        skills.append(
            {
                "id": f"service:{category}",
                "name": category,
                "description": f"POST {site.base}/run: {_category_text(site, category)} "
                f"Services: {_service_list(specs)}",
                "tags": ["service", category, *(spec.id for spec in specs)],
            }
        )
    return {
        "name": TITLE,
        "description": site.summary(),
        "url": site.base,
        "version": __version__,
        "provider": {"organization": "aigateway (mock)", "url": site.root},
        "documentationUrl": f"{site.root}/llms-full.txt",
        "capabilities": {"streaming": True, "pushNotifications": False},
        "securitySchemes": {
            "bearer": {"type": "http", "scheme": "bearer", "description": "an API key"}
        },
        "security": [{"bearer": []}],
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["text/plain", "application/json"],
        "skills": skills,
    }


def _tool(
    name: str, description: str, schema: dict[str, Any], method: str, url: str
) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "inputSchema": schema,
        "_meta": {"http": {"method": method, "url": url}},
    }


def mcp_json(site: _Site) -> dict[str, Any]:
    chat = _chat_schema()
    chat.setdefault("properties", {})["model"] = {
        "type": "string",
        "enum": [m.id for m in site.models],
    }
    tools = [
        _tool(
            "chat_completion",
            "Chat with a model (OpenAI chat completions). Models: "
            + "; ".join(f"{m.id} ({_model_line(m)})" for m in site.models),
            chat,
            "POST",
            f"{site.base}/chat/completions",
        ),
        _tool(
            "list_models",
            "The chat models with their prices and capabilities.",
            {"type": "object", "properties": {}},
            "GET",
            f"{site.base}/models",
        ),
    ]
    for category, specs in site.services.items():
        inputs = copy.deepcopy(site.schemas[category])
        definitions = inputs.pop("$defs", None)
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {
                "model": {"type": "string", "enum": [spec.id for spec in specs]},
                "inputs": inputs,
            },
            "required": ["model", "inputs"],
        }
        if definitions:
            schema["$defs"] = definitions
        description = f"{_category_text(site, category)} Services: {_service_list(specs)}"
        tools.append(_tool(f"run_{category}", description, schema, "POST", f"{site.base}/run"))
    return {
        "name": "aigateway-mock",
        "title": TITLE,
        "version": __version__,
        "description": site.summary()
        + " This card lists the gateway's HTTP operations as tools; the mock does not speak "
        "MCP's JSON-RPC, so each tool names its HTTP call in _meta.http.",
        "websiteUrl": f"{site.root}/llms.txt",
        "capabilities": {"tools": {"listChanged": False}},
        "authentication": {"required": True, "schemes": ["bearer"]},
        "tools": tools,
    }


def ai_plugin_json(site: _Site) -> dict[str, Any]:
    services = [spec.id for specs in site.services.values() for spec in specs]
    return {
        "schema_version": "v1",
        "name_for_human": TITLE,
        "name_for_model": "unified_ai_gateway",
        "description_for_human": site.summary(),
        "description_for_model": (
            f"An OpenAI-compatible gateway at {site.base}. Chat: POST /chat/completions, "
            f"model one of {', '.join(m.id for m in site.models)}. Services: POST /run with "
            f'{{"model", "inputs"}}, model one of {", ".join(services)}. Send the user\'s API key '
            f"as a bearer token. Full reference: {site.root}/llms-full.txt"
        ),
        "auth": {"type": "user_http", "authorization_type": "bearer"},
        "api": {"type": "http", "url": site.base, "documentation_url": f"{site.root}/llms.txt"},
    }


# -- serving them --------------------------------------------------------------------------


def _text(make: Callable[[_Site], str]) -> Callable[[RequestContext], MockResponse]:
    def handler(ctx: RequestContext) -> MockResponse:
        body = make(_site(ctx)).encode("utf-8")
        return MockResponse(200, {"content-type": TEXT_CONTENT_TYPE}, body)

    return handler


def _json(make: Callable[[_Site], dict[str, Any]]) -> Callable[[RequestContext], MockResponse]:
    def handler(ctx: RequestContext) -> MockResponse:
        body = json.dumps(make(_site(ctx)), indent=2, ensure_ascii=False).encode("utf-8")
        return MockResponse(200, {"content-type": JSON_CONTENT_TYPE}, body + b"\n")

    return handler


DOCUMENTS: dict[str, Callable[[RequestContext], MockResponse]] = {
    "/llms.txt": _text(llms_txt),
    "/llms-full.txt": _text(llms_full_txt),
    "/agent.json": _json(agent_json),
    "/.well-known/mcp.json": _json(mcp_json),
    "/.well-known/ai-plugin.json": _json(ai_plugin_json),
}
"""Each document's path and the route that answers it."""


def add_discovery_routes(router: Router) -> None:
    """Serve the discovery documents (``GET``, no key) on ``router``."""
    for path, handler in DOCUMENTS.items():
        router.add("GET", path, handler)
