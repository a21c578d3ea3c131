"""``import aigateway`` stays cheap: no mock, CLI, websockets, tqdm or pydantic models loaded."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = (
    "aigateway.testing",
    "tenacity",  # only on a retry
    "anyio",  # only for async sleeps and max_concurrency
    "aigateway.cli",
    "websockets",
    "tqdm",
    "uvicorn",
    "aigateway.types",
    "pydantic",
)
LIGHT = {"aigateway.types", "aigateway.types.rate_limits"}
"""Loaded by the client and the errors: the types package's lazy names and the rate-limit
headers; no reply model and no pydantic."""


def loaded_after(code: str) -> set[str]:
    script = f"import sys, json\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_import_loads_nothing_heavy() -> None:
    modules = loaded_after("import aigateway")
    heavy = sorted(m for m in modules if m.startswith(HEAVY) and m not in LIGHT)
    assert heavy == []


def test_creating_a_client_still_loads_no_mock() -> None:
    modules = loaded_after(
        "import aigateway\nc = aigateway.Client(api_key='k', base_url='http://x.test/v1')\nc.close()"
    )
    assert not [m for m in modules if m.startswith(("aigateway.testing", "aigateway.cli"))]


def test_lazy_names_resolve() -> None:
    import aigateway

    assert aigateway.ChatCompletion.__name__ == "ChatCompletion"
    assert aigateway.Stream.__name__ == "Stream"
    assert aigateway.RunResult.__name__ == "RunResult"
    assert set(aigateway.__all__) <= set(dir(aigateway)) | {
        "ChatCompletion",
        "ChatCompletionChunk",
        "Message",
        "Model",
        "ModelList",
        "Stream",
        "AsyncStream",
        "RunResult",
    }


def checked_imports(package: Path) -> dict[str, str]:
    """What a package's ``if TYPE_CHECKING:`` block imports: name -> module (``X as X``)."""
    tree = ast.parse(package.read_text(encoding="utf-8"))
    block = next(
        node
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    )
    found: dict[str, str] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom), ast.unparse(node)
        for alias in node.names:
            assert alias.asname == alias.name, f"{alias.name}: import it as itself (X as X)"
            found[alias.name] = f"{node.module}"
    return found


def public_table(package: str) -> dict[str, str]:
    """A lazy package's one list of names: name -> the (absolute) module defining it."""
    if package == "aigateway":
        from aigateway._exports import EXPORTS

        return EXPORTS
    table: dict[str, str] = importlib.import_module(package)._LAZY
    return {name: importlib.util.resolve_name(module, package) for name, module in table.items()}


@pytest.mark.parametrize("package", ["aigateway", "aigateway.types"])
def test_the_public_names_are_one_list(package: str) -> None:
    """Each lazy package's table is its one list of names: ``__all__`` is its names, each
    loads from the module that defines it, and the imports type checkers see are the same."""
    module = importlib.import_module(package)
    table = public_table(package)
    assert [name for name in module.__all__ if name != "__version__"] == list(table)
    assert checked_imports(Path(str(module.__file__))) == table
    for name, home in table.items():
        value = getattr(importlib.import_module(home), name)
        if inspect.isclass(value) or inspect.isfunction(value):  # not a type alias
            assert value.__module__ == home, f"{name} is defined in {value.__module__}"
        assert getattr(module, name) is value


def test_from_aigateway_import_client_loads_no_pydantic() -> None:
    """What users write first: the clients' classes need neither pydantic nor the types."""
    modules = loaded_after("from aigateway import AsyncClient, Client")
    assert sorted(m for m in modules if m.startswith(HEAVY) and m not in LIGHT) == []


def test_a_plain_chat_call_loads_only_what_it_uses() -> None:
    """One non-streamed chat call with no fallbacks, tracing, budget or retry loads none of
    their modules, nor streams, sockets or the mock (what a fresh process pays for its first
    completion)."""
    modules = loaded_after(
        """
import httpx
import aigateway
REPLY = {"id": "c1", "object": "chat.completion", "created": 0, "model": "m", "choices": [
    {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]}
transport = httpx.MockTransport(lambda request: httpx.Response(200, json=REPLY))
with aigateway.Client(api_key="k", base_url="http://x.test/v1", transport=transport) as client:
    reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert reply.text == "hi"
"""
    )
    unused = (
        "aigateway._pipeline.fallbacks",
        "aigateway.types.fallbacks",
        "aigateway._pipeline.stream_usage",
        "aigateway._pipeline.observer",
        "aigateway._pipeline.retry_strategies",
        "aigateway._streams",
        "aigateway.testing",
        "aigateway.integrations",
        "tenacity",
        "websockets",
    )
    assert sorted(m for m in modules if m.startswith(unused)) == []


def test_a_chat_call_builds_only_what_it_uses() -> None:
    """The chat resource imports no request models, no parse helpers and no other resource's
    types; no reply validator is built at import, and a call builds the one of the reply it
    will parse (the garbage collector paused), not the other."""
    script = """
import json, sys
import aigateway
from aigateway.resources import chat
from aigateway.types.chat import ChatCompletion, ChatCompletionChunk
client = aigateway.Client(api_key="k", base_url="http://x.test/v1")
client.chat.completions
built = {"resource": [ChatCompletion.__pydantic_complete__, ChatCompletionChunk.__pydantic_complete__]}
chat.build_create_call({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
built["call"] = [ChatCompletion.__pydantic_complete__, ChatCompletionChunk.__pydantic_complete__]
chat.build_create_call({"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True})
built["stream"] = [ChatCompletion.__pydantic_complete__, ChatCompletionChunk.__pydantic_complete__]
print(json.dumps({"modules": sorted(sys.modules), "built": built}))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    report = json.loads(out.stdout.splitlines()[-1])
    unneeded = ("aigateway.types.requests", "aigateway.helpers", "aigateway.types.models")
    assert [m for m in report["modules"] if m.startswith(unneeded)] == []
    assert report["built"] == {
        "resource": [False, False],
        "call": [True, False],
        "stream": [True, True],
    }


def test_types_names_load_on_first_use() -> None:
    import aigateway.types as types

    for name in types.__all__:
        assert getattr(types, name) is not None, name
    assert set(types.__all__) <= set(dir(types))
    assert types.ChatCompletionCreateRequest.__module__ == "aigateway.types.requests"
    with pytest.raises(AttributeError, match="NoSuchType"):
        types.NoSuchType  # noqa: B018


def test_the_collector_pause_leaves_the_collector_as_it_found_it() -> None:
    import gc

    from aigateway._lazy import collector_paused

    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():  # nested: the outer one turns it back on
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError, match="a failed build"), collector_paused():
        raise ValueError("a failed build")
    assert gc.isenabled()
    gc.disable()  # a program that runs without the collector keeps it off
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_first_chat_call_pauses_the_collector_while_it_builds() -> None:
    """Building the request's and the reply's validators runs with the collector off."""
    script = """
import gc, json
import aigateway
from aigateway.resources import chat
states = []
real = chat.TypeAdapter
chat.TypeAdapter = lambda tp: (states.append(gc.isenabled()), real(tp))[1]
from aigateway.types.chat import ChatCompletion
rebuild = ChatCompletion.model_rebuild
ChatCompletion.model_rebuild = lambda: (states.append(gc.isenabled()), rebuild())[1]
chat.build_create_call({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
print(json.dumps({"states": states, "after": gc.isenabled()}))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.splitlines()[-1]) == {"states": [False, False], "after": True}
