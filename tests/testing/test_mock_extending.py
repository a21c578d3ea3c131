"""Extending the mock without touching its internals: routes, service categories, reply
functions; and the layout that keeps it extensible (no import cycle)."""

from __future__ import annotations

import ast
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from typing_extensions import TypedDict

import aigateway.testing
from aigateway import BadRequestError, Client
from aigateway.testing import (
    MockGateway,
    MockResponse,
    Plan,
    RequestContext,
    ServiceContext,
    ServiceSpec,
    json_response,
    refuse,
)

HELLO = [{"role": "user", "content": "hi"}]


def http(gateway: MockGateway, key: str | None = None) -> httpx.Client:
    return httpx.Client(
        transport=gateway.transport(),
        base_url=gateway.base_url,
        headers={"Authorization": f"Bearer {key or gateway.api_key}"},
    )


def test_a_route_a_user_adds_gets_the_context_and_the_front_door() -> None:
    gateway = MockGateway(rate_limits="free_plan")  # 10 requests per minute
    seen: list[str] = []

    def echo(ctx: RequestContext) -> MockResponse:
        account = ctx.authenticate()
        if isinstance(account, MockResponse):
            return account
        body = ctx.json_object()
        if isinstance(body, MockResponse):
            return body
        seen.append(ctx.request_id)
        return json_response(200, {"echo": body, "account": account.id, "at": ctx.clock.now()})

    gateway.add_route("POST", "/v1/echo", echo)
    with http(gateway) as client:
        reply = client.post("/echo", json={"a": 1})
        assert reply.status_code == 200
        assert reply.json()["echo"] == {"a": 1}
        assert reply.headers["x-request-id"] == seen[0]
        assert "x-ratelimit-remaining" in reply.headers  # rate limits apply to it too
        assert client.post("/echo", content=b"not json").status_code == 400
        assert client.get("/echo").status_code == 405
        assert client.post("/echo", headers={"Authorization": "Bearer nope"}).status_code == 401


def test_a_prefix_route_gets_the_rest_of_the_path() -> None:
    gateway = MockGateway()
    gateway.add_route(
        "GET", "/v1/things/", lambda ctx: json_response(200, {"id": ctx.argument}), prefix=True
    )
    with http(gateway) as client:
        assert client.get("/things/a%2Fb").json() == {"id": "a/b"}
        assert client.get("/things").status_code == 404


class TranslateInputs(TypedDict):
    text: str
    target: str


def translate(ctx: ServiceContext) -> Plan:
    text: str = ctx.inputs["text"]
    if ctx.inputs["target"] not in {"fr", "de"}:
        raise refuse(
            400, f"{ctx.param('target')}: only fr and de", "bad_target", ctx.param("target")
        )
    done: list[str] = []
    return Plan(
        quantity=Decimal(len(text)),
        perform=lambda: {"text": text[::-1], "target": ctx.inputs["target"], "done": done},
    )


def test_a_service_category_a_user_adds_is_checked_billed_and_typed_errors_flow() -> None:
    gateway = MockGateway()
    gateway.add_service_category("translation", inputs=TranslateInputs, plan=translate)
    gateway.services.add(ServiceSpec("acme/translate", "translation", 0.001, "character"))
    with gateway.client(max_retries=0) as client:
        result = client.run("acme/translate", {"text": "bonjour", "target": "fr"})
        assert result.output["text"] == "ruojnob"
        assert result.usage is not None
        with pytest.raises(BadRequestError, match=r"inputs\.target: only fr and de"):
            client.run("acme/translate", {"text": "x", "target": "xx"})
        with pytest.raises(BadRequestError, match=r"inputs\.text"):
            client.run("acme/translate", {"target": "fr"})
    assert [charge.model for charge in gateway.charges] == ["acme/translate"]
    assert gateway.charges[0].amount == pytest.approx(0.007)


def test_a_planner_may_return_just_the_output() -> None:
    gateway = MockGateway()
    gateway.add_service_category(
        "echo", inputs=dict[str, Any], plan=lambda ctx: {"echoed": ctx.inputs}
    )
    gateway.services.add(ServiceSpec("acme/echo", "echo", 0.5))
    with gateway.client() as client:
        assert client.run("acme/echo", {"x": 1}).output == {"echoed": {"x": 1}}
    assert gateway.credits() == pytest.approx(19.5)


def test_a_reply_function_replaces_the_fake_model_and_is_billed() -> None:
    gateway = MockGateway()
    requests: list[Any] = []

    def reply(request: Any) -> Any:
        requests.append(request)
        if request.get("tools"):
            return [{"name": "lookup", "arguments": {"q": request["messages"][-1]["content"]}}]
        return f"you said {request['messages'][-1]['content']}"

    gateway.reply_with(reply)
    tool = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}
    with gateway.client() as client:
        assert client.chat.completions.create(model="gpt-4o", messages=HELLO).text == "you said hi"
        called = client.chat.completions.create(model="gpt-4o", messages=HELLO, tools=[tool])
        assert called.choices[0].message.tool_calls[0].function.parsed_arguments() == {"q": "hi"}
        with client.chat.completions.stream(model="gpt-4o", messages=HELLO) as stream:
            assert stream.get_final_completion().text == "you said hi"
        gateway.enqueue_reply("queued first")
        assert client.chat.completions.create(model="gpt-4o", messages=HELLO).text == "queued first"
        gateway.reply_with(None)
        assert client.chat.completions.create(model="gpt-4o", messages=HELLO).text != "you said hi"
    assert len(requests) == 3
    assert len(gateway.charges) == 5


def test_files_belong_to_their_account() -> None:
    gateway = MockGateway()
    other = gateway.create_account()
    with gateway.client() as client:
        image = client.images.generate(model="flux-schnell", prompt="x", size="8x8")
        assert image.read().startswith(b"\x89PNG")
    path = httpx.URL(image.image_url).path
    with http(gateway, other.key) as stranger:
        assert stranger.get(path.removeprefix("/v1")).status_code == 404
    with httpx.Client(transport=gateway.transport(), base_url=gateway.base_url) as anonymous:
        assert anonymous.get(path.removeprefix("/v1")).status_code == 401
    stranger_client = Client(
        api_key=other.key, base_url=gateway.base_url, transport=gateway.transport(), max_retries=0
    )
    with stranger_client, pytest.raises(BadRequestError, match=r"account's own"):
        stranger_client.run("whisper-1", {"audio": image.image_url})  # nor use it as an input


def _imports_within(package: Path, name: str) -> dict[str, set[str]]:
    """The modules of package ``name`` (at ``package``) and the modules of it each imports,
    wherever the import is: at the top, for type checkers only, or inside a function."""
    modules = {
        ".".join((name, *path.relative_to(package).with_suffix("").parts)).removesuffix(
            ".__init__"
        ): path
        for path in package.rglob("*.py")
    }
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:  # a submodule, or a name of the module
                    submodule = f"{node.module}.{alias.name}"
                    imported.add(submodule if submodule in modules else node.module)
        graph[module] = {target for target in imported if target in modules} - {module}
    return graph


def test_no_import_cycle_in_the_mock() -> None:
    graph = _imports_within(Path(aigateway.testing.__file__).parent, "aigateway.testing")
    assert "aigateway.testing._core.state" in graph["aigateway.testing._gateway"]  # it reads

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for name in graph.get(start, ()):
            if name == goal or (name not in seen and reaches(name, goal, seen | {name})):
                return True
        return False

    cycles = [name for name in graph if reaches(name, name, {name})]
    assert cycles == []
