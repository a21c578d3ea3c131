"""``import aigateway`` stays cheap: no mock, CLI, websockets, tqdm or pydantic models loaded."""

from __future__ import annotations

import json
import subprocess
import sys

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
