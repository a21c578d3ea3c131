"""The discovery documents at the site root: served and in-process, their content types, and
contents made from the gateway's catalogue, services and host."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from aigateway.testing import MockGateway, ModelSpec, ServiceSpec
from aigateway.testing._routes.discovery import ENDPOINTS

TEXT = "text/plain; charset=utf-8"
DOCUMENTS = {
    "/llms.txt": TEXT,
    "/llms-full.txt": TEXT,
    "/agent.json": "application/json",
    "/.well-known/mcp.json": "application/json",
    "/.well-known/ai-plugin.json": "application/json",
}
IN_PROCESS_ROOT = "http://mock.aigateway.local"


def in_process(gateway: MockGateway) -> httpx.Client:
    return httpx.Client(transport=gateway.transport(), base_url=IN_PROCESS_ROOT)


def model_ids(path: str, reply: httpx.Response) -> list[str]:
    """The chat model ids a document lists, read from its structure."""
    if path.endswith(".txt"):
        section = reply.text.split("## Models\n", 1)[1].split("\n## ", 1)[0]
        return re.findall(r"^(?:- \[|### )([^\]\n]+)", section, re.MULTILINE)
    document = reply.json()
    if path == "/agent.json":
        return [s["id"].removeprefix("chat:") for s in document["skills"] if s["id"][:5] == "chat:"]
    if path == "/.well-known/mcp.json":
        (chat,) = [tool for tool in document["tools"] if tool["name"] == "chat_completion"]
        ids: list[str] = chat["inputSchema"]["properties"]["model"]["enum"]
        return ids
    text = document["description_for_model"]
    return text.split("model one of ", 1)[1].split(". Services", 1)[0].split(", ")


@pytest.fixture
def served_root(gateway: MockGateway) -> Iterator[str]:
    with gateway.serve() as url:
        yield url.removesuffix("/v1")


def test_each_document_over_http_without_a_key(gateway: MockGateway, served_root: str) -> None:
    ids = [spec.id for spec in gateway.catalogue.specs()]
    with httpx.Client(base_url=served_root) as http:
        for path, content_type in DOCUMENTS.items():
            reply = http.get(path)
            assert reply.status_code == 200, path
            assert reply.headers["content-type"] == content_type, path
            assert model_ids(path, reply) == ids, path
            assert f"{served_root}/v1" in reply.text, path  # links to where it was reached
            if content_type != TEXT:
                json.loads(reply.content)
            assert http.post(path).status_code == 405
        keyed = http.get("/llms.txt", headers={"Authorization": f"Bearer {gateway.api_key}"})
        assert keyed.text == http.get("/llms.txt").text  # a key changes nothing
    assert gateway.charges == []


@pytest.mark.parametrize("path", DOCUMENTS)
def test_each_document_in_process_follows_the_catalogue(gateway: MockGateway, path: str) -> None:
    with in_process(gateway) as http:
        before = http.get(path)
        assert before.headers["content-type"] == DOCUMENTS[path]
        assert "gpt-4o" in model_ids(path, before)
        del gateway.catalogue["gpt-4o"]
        gateway.catalogue.add(ModelSpec("acme-chat-1", "acme", 1_700_000_000))
        after = http.get(path)
    ids = model_ids(path, after)
    assert "gpt-4o" not in ids
    assert ids[-1] == "acme-chat-1"
    assert ids == [spec.id for spec in gateway.catalogue.specs()]
    assert f"{IN_PROCESS_ROOT}/v1" in after.text


@pytest.mark.parametrize("path", DOCUMENTS)
def test_documents_are_stable(path: str) -> None:
    with in_process(MockGateway(seed=1)) as one, in_process(MockGateway(seed=2)) as two:
        assert one.get(path).content == one.get(path).content == two.get(path).content


def test_llms_txt_follows_the_llmstxt_convention(gateway: MockGateway) -> None:
    with in_process(gateway) as http:
        text = http.get("/llms.txt").text
    lines = text.splitlines()
    assert lines[0] == "# Unified AI Gateway (mock)"
    assert lines[2].startswith("> ")
    assert "11 chat models" in lines[2]
    assert [line for line in lines if line.startswith("#")] == [
        "# Unified AI Gateway (mock)", "## API", "## Models", "## Services", "## Optional",
    ]  # fmt: skip
    links = re.findall(r"^- \[([^\]]+)\]\((\S+)\)(?:: .+)?$", text, re.MULTILINE)
    assert len(links) == len([line for line in lines if line.startswith("- ")])
    assert (f"{IN_PROCESS_ROOT}/llms-full.txt") in [url for _, url in links]
    assert "- [gpt-4o](http://mock.aigateway.local/v1/models/gpt-4o): openai; 0.005 " in text
    assert "flux-schnell (0.003 credits per image)" in text


def test_llms_full_txt_holds_every_service_and_its_inputs(gateway: MockGateway) -> None:
    gateway.services.add(ServiceSpec("acme/search", "search", price=0.25))
    with in_process(gateway) as http:
        text = http.get("/llms-full.txt").text
    for section in ("Authentication", "Endpoints", "Errors", "Credits and limits", "Services"):
        assert f"\n## {section}\n" in text
    for spec in gateway.services.specs():
        assert f"- `{spec.id}`: " in text
    assert "- `acme/search`: 0.25 credits per request" in text
    schemas = re.findall(r"```json\n(.+)\n```", text)
    assert len(schemas) == len({spec.category for spec in gateway.services.specs()})
    image = json.loads(schemas[0])
    assert image["required"] == ["prompt"]


def test_mcp_card_has_a_tool_per_operation_and_category(gateway: MockGateway) -> None:
    with in_process(gateway) as http:
        card = http.get("/.well-known/mcp.json").json()
    tools = {tool["name"]: tool for tool in card["tools"]}
    categories = {spec.category for spec in gateway.services.specs()}
    assert set(tools) == {"chat_completion", "list_models"} | {f"run_{c}" for c in categories}
    for tool in tools.values():
        assert tool["description"]
        assert tool["inputSchema"]["type"] == "object"
        assert tool["_meta"]["http"]["url"].startswith(f"{IN_PROCESS_ROOT}/v1/")
    run_image = tools["run_image"]["inputSchema"]
    assert run_image["properties"]["model"]["enum"] == gateway.services.of_category("image")
    assert run_image["required"] == ["model", "inputs"]
    assert "$defs" in tools["run_storage"]["inputSchema"]  # refs still resolve from the root
    assert tools["chat_completion"]["inputSchema"]["required"] == ["model", "messages"]
    assert card["capabilities"] == {"tools": {"listChanged": False}}


def test_agent_card_and_plugin_manifest_have_their_public_shapes(gateway: MockGateway) -> None:
    with in_process(gateway) as http:
        agent = http.get("/agent.json").json()
        plugin = http.get("/.well-known/ai-plugin.json").json()
    for field in ("name", "description", "url", "version", "capabilities", "skills"):
        assert agent[field], field
    assert agent["url"] == f"{IN_PROCESS_ROOT}/v1"
    skills = {skill["id"]: skill for skill in agent["skills"]}
    assert "0.005 credits per 1K input tokens" in skills["chat:gpt-4o"]["description"]
    assert "vision" in skills["chat:gpt-4o"]["tags"]
    assert "vision" not in skills["chat:gpt-3.5-turbo"]["tags"]
    assert "flux-schnell" in skills["service:image"]["tags"]
    assert plugin["schema_version"] == "v1"
    assert re.fullmatch(r"[A-Za-z0-9_]{1,64}", plugin["name_for_model"])
    assert plugin["auth"] == {"type": "user_http", "authorization_type": "bearer"}
    assert "twilio/sms" in plugin["description_for_model"]


@pytest.mark.parametrize("host", ['evil.example"><script>', "a b", "", "x" * 300 + "/path"])
def test_a_strange_host_header_falls_back_to_the_gateway_base_url(host: str) -> None:
    gateway = MockGateway()
    with in_process(gateway) as http:
        reply = http.get("/llms.txt", headers={"host": host})
    assert reply.status_code == 200
    assert f"{IN_PROCESS_ROOT}/v1/chat/completions" in reply.text
    assert "<script>" not in reply.text


def test_a_category_without_a_json_schema_still_gets_documents(gateway: MockGateway) -> None:
    def plan(ctx: Any) -> dict[str, Any]:
        return {}

    gateway.add_service_category("callback", inputs=Callable[[], None], plan=plan)
    gateway.services.add(ServiceSpec("acme/hook", "callback", price=0.001))
    with in_process(gateway) as http:
        card = http.get("/.well-known/mcp.json").json()
        assert "acme/hook" in http.get("/llms-full.txt").text
    (tool,) = [tool for tool in card["tools"] if tool["name"] == "run_callback"]
    assert tool["inputSchema"]["properties"]["inputs"] == {"type": "object"}


def test_every_endpoint_the_documents_name_is_served(gateway: MockGateway) -> None:
    """Without a key, each answers 401 (a route no one serves would be a 404)."""
    with httpx.Client(transport=gateway.transport(), base_url=gateway.base_url) as http:
        for endpoint in ENDPOINTS:
            path = endpoint.path.format(model_id="gpt-4o", file_id="file_x")
            assert http.request(endpoint.method, path).status_code == 401, endpoint
