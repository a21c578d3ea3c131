"""The API reference follows the code: parameter tables come from the TypedDicts, the error
tree from the exception classes, and headings name only public paths."""

from __future__ import annotations

import importlib.util
import inspect
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import get_type_hints

import pytest

import aigateway
from aigateway._reference import client_resources, error_tree, method_params, param_fields
from aigateway.types.chat_params import ChatCompletionCreateParams
from aigateway.types.service_params import ImageGenerateParams

ROOT = Path(__file__).resolve().parents[1]


def load_hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "reference_hook", ROOT / "docs/hooks/reference.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rows_are_the_fields_of_the_definition() -> None:
    assert method_params("chat.completions.create") is ChatCompletionCreateParams
    assert method_params("images.generate") is ImageGenerateParams
    rows = param_fields(ChatCompletionCreateParams)
    assert sorted(row.name for row in rows) == sorted(get_type_hints(ChatCompletionCreateParams))
    assert [row.name for row in rows if row.required] == ["model", "messages"]
    assert all(row.doc for row in rows), [row.name for row in rows if not row.doc]


def test_limits_come_from_the_checks() -> None:
    rows = {row.name: row for row in param_fields(ChatCompletionCreateParams)}
    assert rows["temperature"].limits == "0 to 2"
    assert rows["temperature"].type == "float"
    assert "at most 4 items" in rows["stop"].limits
    assert "needs logprobs" in rows["top_logprobs"].limits
    table = load_hook().params_table("chat.completions.create")
    assert "| `temperature` | float | 0 to 2 | — |" in table
    assert "| `model` | str |  | required |" in table


def test_every_method_taking_keywords_gets_a_table() -> None:
    hook = load_hook()
    tables = 0
    for path, cls in client_resources():
        for name, member in vars(cls).items():
            if name.startswith("_") or not callable(member):
                continue
            signature = inspect.signature(member, follow_wrapped=False)
            takes_keywords = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
            if takes_keywords or hasattr(member, "__params_type__"):
                assert hook.params_table(f"{path}.{name}").count("\n|") >= 2, f"{path}.{name}"
                tables += 1
    assert tables >= 20


def test_error_tree_holds_every_public_error() -> None:
    names: list[str] = []

    def walk(node: object) -> None:
        names.append(node.name)  # type: ignore[attr-defined]
        for child in node.children:  # type: ignore[attr-defined]
            walk(child)

    walk(error_tree())
    public = {
        name
        for name in aigateway.__all__
        if isinstance(getattr(aigateway, name), type)
        and issubclass(getattr(aigateway, name), aigateway.AIGatewayError)
    }
    assert public <= set(names)
    assert len(names) == len(set(names))
    listing = load_hook().errors_list()
    assert "    - `APIStatusError`: The gateway answered with a non-2xx status." in listing


@pytest.mark.parametrize("client_class", [aigateway.Client, aigateway.AsyncClient])
def test_client_docstring_describes_every_constructor_parameter(client_class: type) -> None:
    doc = inspect.getdoc(client_class) or ""
    args = doc.split("Args:\n", 1)[1]
    described = re.findall(r"^    (\w+):", args, re.MULTILINE)
    assert described == list(inspect.signature(client_class).parameters)


def test_built_reference_has_only_public_paths_in_headings(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--quiet",
            "--site-dir",
            str(tmp_path),
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    page = (tmp_path / "reference/index.html").read_text()
    headings = re.findall(r"<h[1-6][^>]*>(.*?)</h[1-6]>", page, re.DOTALL)
    assert len(headings) > 100
    assert not [h for h in headings if "aigateway._" in h or re.search(r"\b_[a-z]\w*\.", h)]
    for expected in (
        "with_options",
        "remaining_credits",
        "client.chat.completions.create",
        "images",
    ):
        assert any(expected in heading for heading in headings), expected
    assert "Keyword</th>" in page
    assert "0 to 2" in page
