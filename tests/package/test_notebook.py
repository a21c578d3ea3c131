"""examples/notebook.ipynb runs in a real kernel and shows tables and images, without errors
or warnings."""

from __future__ import annotations

import importlib.util
import os
from typing import Any

import pytest

from .._paths import ROOT, SRC

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")
pytest.importorskip("ipykernel")

NOTEBOOK = ROOT / "examples" / "notebook.ipynb"


def outputs_of(notebook: Any) -> list[dict[str, Any]]:
    return [output for cell in notebook.cells for output in cell.get("outputs", [])]


def test_the_notebook_has_no_stored_outputs() -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    assert outputs_of(notebook) == []


def run(notebook: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # the kernel's debugger notice
    client = nbclient.NotebookClient(notebook, timeout=30, kernel_name="python3")
    client.execute(cwd=str(NOTEBOOK.parent))


@pytest.mark.timeout(60)
def test_the_notebook_runs_and_shows_tables_and_images(monkeypatch: pytest.MonkeyPatch) -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    run(notebook, monkeypatch)
    outputs = outputs_of(notebook)
    assert not [o for o in outputs if o["output_type"] == "error"]
    stderr = "".join(o["text"] for o in outputs if o.get("name") == "stderr")
    assert "Warning" not in stderr
    shown = [o.get("data", {}) for o in outputs if "data" in o]
    assert any("<table" in data.get("text/html", "") for data in shown)
    assert any("image/png" in data for data in shown)
    assert any("Check the API key" in data.get("text/html", "") for data in shown)
    pages = "".join(data.get("text/html", "") for data in shown)
    assert "the last 16 of " in pages  # the stream's cut text, marked
    assert ">failed</td>" in pages  # the batch's table
    assert "NotFoundError: model &#x27;gpt-4o-minii&#x27;" in pages
    if importlib.util.find_spec("ipywidgets") is None:
        assert "6/6" in stderr  # the batch's text bar, without tqdm's ipywidgets warning


@pytest.mark.timeout(60)
def test_the_notebook_runs_without_tqdm(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the ``progress`` extra the batch runs with no bar, and nothing else changes."""
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    hide = "import sys\n\nsys.modules['tqdm'] = None  # as if not installed"
    notebook.cells.insert(0, nbformat.v4.new_code_cell(hide))
    run(notebook, monkeypatch)
    outputs = outputs_of(notebook)
    assert not [o for o in outputs if o["output_type"] == "error"]
    assert not [o for o in outputs if o.get("name") == "stderr"]  # no bar, no warning
    assert any(">failed</td>" in o.get("data", {}).get("text/html", "") for o in outputs)
