"""``client.discovery``: the site-root files read and typed, served and in-process, sync and
async; unknown fields kept, a missing file, an HTML page where JSON belongs, a prefixed base."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from aigateway import APIResponseValidationError, AsyncClient, Client, NotFoundError
from aigateway.testing import MockGateway
from aigateway.types.discovery import (
    AgentCard,
    AIPluginManifest,
    LlmsTxt,
    McpServerCard,
    parse_llms_txt,
)

from ..conftest import resolve

pytestmark = pytest.mark.anyio

METHODS = ("llms_txt", "llms_full_txt", "agent_card", "mcp_server_card", "ai_plugin_manifest")
PATHS = {
    "llms_txt": "/llms.txt",
    "llms_full_txt": "/llms-full.txt",
    "agent_card": "/agent.json",
    "mcp_server_card": "/.well-known/mcp.json",
    "ai_plugin_manifest": "/.well-known/ai-plugin.json",
}


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, str]]:
    gateway = MockGateway(seed=3)
    with gateway.serve() as url:
        yield url, gateway.api_key


@contextlib.asynccontextmanager
async def opened(client: Client | AsyncClient) -> AsyncIterator[Client | AsyncClient]:
    try:
        yield client
    finally:
        await resolve(client.close())


def make_client(kind: str, **options: Any) -> Client | AsyncClient:
    options.setdefault("api_key", "sk-test")
    options.setdefault("max_retries", 0)
    return Client(**options) if kind == "sync" else AsyncClient(**options)


def transport(handler: Callable[[httpx.Request], httpx.Response]) -> httpx.MockTransport:
    return httpx.MockTransport(handler)


async def read(client: Client | AsyncClient, method: str) -> Any:
    return await resolve(getattr(client.discovery, method)())


def extras(model: BaseModel) -> list[str]:
    """The unknown fields anywhere in a model tree (empty when every field is typed)."""
    found = [f"{type(model).__name__}.{name}" for name in model.model_extra or {}]
    for name in type(model).model_fields:
        value = getattr(model, name)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, BaseModel):
                found += extras(item)
    return found


def check_mock_files(files: dict[str, Any], root: str) -> None:
    llms: LlmsTxt = files["llms_txt"]
    assert isinstance(llms, LlmsTxt)
    assert llms.title == "Unified AI Gateway (mock)"
    assert llms.summary
    assert "chat models" in llms.summary
    assert llms.details
    assert "Authorization" in llms.details
    assert [s.name for s in llms.sections] == ["API", "Models", "Services", "Optional"]
    models = llms.section("models")
    assert models is not None
    assert "gpt-4o" in [link.title for link in models.links]
    api = llms.section("API")
    assert api is not None
    assert api.links[0].url == f"{root}/v1/chat/completions"
    assert api.links[0].description
    assert "POST /v1/chat/completions" in api.links[0].description
    assert f"{root}/agent.json" in [link.url for link in llms.links]
    assert str(llms) == llms.text
    assert llms.text.startswith("# Unified AI Gateway")

    full: LlmsTxt = files["llms_full_txt"]
    assert full.title == llms.title
    assert "Endpoints" in [s.name for s in full.sections]
    errors = full.section("Errors")
    assert errors is not None
    assert "insufficient credits" in errors.content
    assert "```json" in full.text

    card: AgentCard = files["agent_card"]
    assert isinstance(card, AgentCard)
    assert card.url == f"{root}/v1"
    assert card.documentation_url == f"{root}/llms-full.txt"
    assert card.provider is not None
    assert card.provider.url == root
    assert card.capabilities.streaming is True
    assert card.capabilities.push_notifications is False
    assert "bearer" in card.security_schemes
    assert card.security == [{"bearer": []}]
    skills = {skill.id: skill for skill in card.skills}
    assert skills["chat:gpt-4o"].input_modes == ["text/plain", "image/*"]
    assert "vision" in skills["chat:gpt-4o"].tags
    assert any(skill_id.startswith("service:") for skill_id in skills)

    mcp: McpServerCard = files["mcp_server_card"]
    assert isinstance(mcp, McpServerCard)
    assert mcp.name == "aigateway-mock"
    assert mcp.website_url == f"{root}/llms.txt"
    assert mcp.authentication is not None
    assert mcp.authentication.schemes == ["bearer"]
    chat = mcp.tool("chat_completion")
    assert chat is not None
    assert "messages" in chat.input_schema["properties"]
    assert chat.meta == {"http": {"method": "POST", "url": f"{root}/v1/chat/completions"}}
    assert any((tool.name or "").startswith("run_") for tool in mcp.tools)

    plugin: AIPluginManifest = files["ai_plugin_manifest"]
    assert isinstance(plugin, AIPluginManifest)
    assert plugin.name_for_model == "unified_ai_gateway"
    assert plugin.auth is not None
    assert plugin.auth.authorization_type == "bearer"
    assert plugin.api is not None
    assert plugin.api.url == f"{root}/v1"

    for name in ("agent_card", "mcp_server_card", "ai_plugin_manifest", "llms_txt"):
        assert extras(files[name]) == [], name  # every field the mock serves is typed


async def test_every_file_of_the_mock_in_process(kind: str) -> None:
    gateway = MockGateway(seed=3)
    client = gateway.client() if kind == "sync" else gateway.async_client()
    async with opened(client):
        files = {method: await read(client, method) for method in METHODS}
        root = str(client.base_url).removesuffix("/v1/")
    check_mock_files(files, root)


async def test_every_file_of_the_served_mock(kind: str, served: tuple[str, str]) -> None:
    url, key = served
    async with opened(make_client(kind, api_key=key, base_url=url)) as client:
        files = {method: await read(client, method) for method in METHODS}
    check_mock_files(files, url.removesuffix("/v1"))


async def test_a_prefixed_base_url_keeps_its_prefix(kind: str) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path.endswith(".txt"):
            return httpx.Response(200, text="# Title\n")
        return httpx.Response(200, json={})

    base = "http://host.test/prefix/v1"
    async with opened(make_client(kind, base_url=base, transport=transport(handler))) as client:
        for method in METHODS:
            await read(client, method)
    assert [str(r.url) for r in seen] == [
        f"http://host.test/prefix{path}" for path in PATHS.values()
    ]
    # the gateway's own host: the key goes along, as on every call
    assert all(r.headers["authorization"] == "Bearer sk-test" for r in seen)
    assert seen[0].headers["accept"].startswith("text/plain")
    assert seen[2].headers["accept"].startswith("application/json")


@pytest.mark.parametrize("method", METHODS)
async def test_a_missing_file_is_not_found_naming_it(kind: str, method: str) -> None:
    nothing = transport(lambda request: httpx.Response(404))
    client = make_client(kind, base_url="http://host.test/v1", transport=nothing)
    async with opened(client):
        with pytest.raises(NotFoundError) as raised:
            await read(client, method)
    assert raised.value.status_code == 404
    assert f"http://host.test{PATHS[method]}" in str(raised.value)


async def test_a_missing_file_on_the_mock_is_not_found(kind: str) -> None:
    gateway = MockGateway(seed=3)
    base = gateway.base_url.rstrip("/").removesuffix("/v1") + "/nested/v1"
    client = make_client(kind, base_url=base, transport=gateway.transport())
    async with opened(client):
        with pytest.raises(NotFoundError, match=r"nested/llms\.txt") as raised:
            await read(client, "llms_txt")
    assert raised.value.status_code == 404


@pytest.mark.parametrize("method", ["agent_card", "mcp_server_card", "ai_plugin_manifest"])
async def test_html_where_json_belongs_is_a_validation_error(kind: str, method: str) -> None:
    page = "<!DOCTYPE html><html><body>Welcome</body></html>"
    html = transport(lambda request: httpx.Response(200, html=page))
    client = make_client(kind, base_url="http://host.test/v1", transport=html)
    async with opened(client):
        with pytest.raises(APIResponseValidationError) as raised:
            await read(client, method)
    assert raised.value.text == page
    assert PATHS[method] in str(raised.value)


async def test_an_html_page_is_not_an_llms_txt(kind: str) -> None:
    page = "\n  <html lang='en'><head><title>Home</title></head></html>"
    html = transport(lambda request: httpx.Response(200, html=page))
    client = make_client(kind, base_url="http://host.test/v1", transport=html)
    async with opened(client):
        with pytest.raises(APIResponseValidationError, match="HTML") as raised:
            await read(client, "llms_txt")
    assert raised.value.text == page


async def test_json_that_is_not_an_object_is_a_validation_error(kind: str) -> None:
    listing = transport(lambda request: httpx.Response(200, json=["not", "a", "card"]))
    client = make_client(kind, base_url="http://host.test/v1", transport=listing)
    async with opened(client):
        with pytest.raises(APIResponseValidationError):
            await read(client, "agent_card")


VARIANTS: dict[str, dict[str, Any]] = {
    "/agent.json": {
        "name": "Other agent",
        "version": 2,
        "protocolVersion": "0.3.0",
        "preferredTransport": "JSONRPC",
        "supportsAuthenticatedExtendedCard": True,
        "capabilities": {"streaming": False, "extensions": [{"uri": "x"}]},
        "skills": [{"id": "s", "examples": ["hi"], "rating": 5}],
    },
    "/.well-known/mcp.json": {
        "$schema": "https://static.modelcontextprotocol.io/schemas/server.schema.json",
        "serverInfo": {"name": "srv", "version": "1.0"},
        "protocolVersion": "2025-06-18",
        "remotes": [{"type": "streamable-http", "url": "https://host.test/mcp", "headers": []}],
        "tools": [{"name": "t", "annotations": {"readOnlyHint": True}, "icon": "i.png"}],
        "prompts": [{"name": "p"}],
    },
    "/.well-known/ai-plugin.json": {
        "schema_version": "v1",
        "auth": {"type": "oauth", "client_url": "https://host.test/auth", "scope": "read"},
        "api": {"type": "openapi", "url": "https://host.test/openapi.yaml"},
        "logo_url": "https://host.test/logo.png",
        "x_vendor": {"tier": "gold"},
    },
}


async def test_other_servers_variants_parse_and_keep_unknown_fields(kind: str) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=VARIANTS[request.url.path])

    client = make_client(kind, base_url="http://host.test/v1", transport=transport(handler))
    async with opened(client):
        card = await read(client, "agent_card")
        mcp = await read(client, "mcp_server_card")
        plugin = await read(client, "ai_plugin_manifest")
    assert card.version == "2"
    assert card.protocol_version == "0.3.0"
    assert card.model_extra == {"supportsAuthenticatedExtendedCard": True}
    assert card.capabilities.model_extra == {"extensions": [{"uri": "x"}]}
    assert card.skills[0].examples == ["hi"]
    assert card.skills[0].model_extra == {"rating": 5}
    assert card.url is None
    assert card.skills[0].tags == []

    assert mcp.name is None
    assert mcp.server_info == {"name": "srv", "version": "1.0"}
    assert mcp.remotes[0].type == "streamable-http"
    assert mcp.remotes[0].model_extra == {"headers": []}
    assert mcp.model_extra["$schema"].endswith("server.schema.json")
    assert mcp.tool("t").annotations == {"readOnlyHint": True}
    assert mcp.tool("t").model_extra == {"icon": "i.png"}
    assert mcp.prompts == [{"name": "p"}]

    assert plugin.auth.type == "oauth"
    assert plugin.auth.model_extra["scope"] == "read"
    assert plugin.api.type == "openapi"
    assert plugin.model_extra == {"x_vendor": {"tier": "gold"}}
    assert json.loads(plugin.model_dump_json(by_alias=True))["x_vendor"] == {"tier": "gold"}


async def test_options_are_checked_and_extra_headers_win(kind: str) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, text="plain words, no structure")

    client = make_client(kind, base_url="http://host.test/v1", transport=transport(handler))
    async with opened(client):
        with pytest.raises(TypeError, match=r"discovery\.llms_txt\(\).*'timeot'.*'timeout'"):
            await resolve(client.discovery.llms_txt(timeot=3))  # type: ignore[call-arg]
        assert seen == []
        text = await resolve(client.discovery.llms_txt(extra_headers={"Accept": "text/markdown"}))
    assert seen[0].headers["accept"] == "text/markdown"
    assert text.text == "plain words, no structure"
    assert text.title is None
    assert text.sections == []
    assert text.details == text.text


# -- the llms.txt reader --------------------------------------------------------------------


def test_llms_txt_follows_the_format() -> None:
    parsed = parse_llms_txt(
        "\ufeff# FastHTML\n\n> A library\n> for web apps.\n\nNotes here.\n\n"
        "## Docs\n\n- [Quick start](https://x.test/start.md): the basics\n"
        '* [Ref](https://x.test/ref.md "title")\n- [Bare](https://x.test/bare)\n'
        "Some prose.\n\n## Optional\n\n- [More](https://x.test/more.md): extras\n"
    )
    assert parsed.title == "FastHTML"
    assert parsed.summary == "A library for web apps."
    assert parsed.details == "Notes here."
    docs = parsed.section("Docs")
    assert docs is not None
    assert [(link.title, link.url, link.description) for link in docs.links] == [
        ("Quick start", "https://x.test/start.md", "the basics"),
        ("Ref", "https://x.test/ref.md", None),
        ("Bare", "https://x.test/bare", None),
    ]
    assert "Some prose." in docs.content
    assert [link.title for link in parsed.links] == ["Quick start", "Ref", "Bare", "More"]
    assert parsed.section("missing") is None


def test_llms_txt_headings_inside_code_are_text() -> None:
    parsed = parse_llms_txt("# T\n\n## Real\n\n```\n## not a section\n- [x](y)\n```\n")
    assert [s.name for s in parsed.sections] == ["Real"]
    assert parsed.sections[0].links == []
    assert "## not a section" in parsed.sections[0].content


def test_llms_txt_of_bytes_that_are_not_utf8_is_still_text() -> None:
    parsed = parse_llms_txt(b"# Caf\xe9\n")
    assert parsed.title == "Caf\ufffd"
