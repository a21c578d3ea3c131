"""``import aigateway`` stays cheap: no mock, CLI, websockets, tqdm or pydantic models loaded."""

from __future__ import annotations

import json
import subprocess
import sys

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


def loaded_after(code: str) -> set[str]:
    script = f"import sys, json\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_import_loads_nothing_heavy() -> None:
    modules = loaded_after("import aigateway")
    heavy = sorted(m for m in modules if m.startswith(HEAVY))
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


def test_from_aigateway_import_client_loads_no_pydantic() -> None:
    """What users write first: the clients' classes need neither pydantic nor the types."""
    modules = loaded_after("from aigateway import AsyncClient, Client")
    assert sorted(m for m in modules if m.startswith(HEAVY)) == []


def test_a_chat_call_builds_only_what_it_uses() -> None:
    """The chat resource imports no request models, no parse helpers and no other resource's
    types, and no reply validator is built before a reply of that type is parsed."""
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
ChatCompletion.model_validate_json('{"id": "c", "choices": []}')
built["parsed"] = [ChatCompletion.__pydantic_complete__, ChatCompletionChunk.__pydantic_complete__]
print(json.dumps({"modules": sorted(sys.modules), "built": built}))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    report = json.loads(out.stdout.splitlines()[-1])
    unneeded = ("aigateway.types.requests", "aigateway.helpers", "aigateway.types.models")
    assert [m for m in report["modules"] if m.startswith(unneeded)] == []
    assert report["built"] == {
        "resource": [False, False],
        "call": [False, False],
        "parsed": [True, False],
    }


def test_types_names_load_on_first_use() -> None:
    import aigateway.types as types

    for name in types.__all__:
        assert getattr(types, name) is not None, name
    assert set(types.__all__) <= set(dir(types))
    assert types.ChatCompletionCreateRequest.__module__ == "aigateway.types.requests"
    with pytest.raises(AttributeError, match="NoSuchType"):
        types.NoSuchType  # noqa: B018
