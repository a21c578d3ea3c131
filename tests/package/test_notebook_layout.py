"""Cards and tables keep each label, header and short cell on one line in JupyterLab and the
classic Notebook, 1280 px wide.

What every kind of object shows in a notebook goes into a notebook's outputs; nbconvert's
``lab`` and ``classic`` templates turn it into a page carrying that front end's own stylesheet
(the rules on ``.jp-RenderedHTMLCommon`` and ``.jp-OutputArea-output``, or ``.rendered_html``,
that a card must survive). Headless Chromium, Debian's ``chromium``, opens the page
(tests/package/_browser.py): a script in the page measures every label and cell, and a screenshot
is kept beside the page. The templates' script addresses are blanked: nothing is fetched.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aigateway import AuthenticationError, RateLimitError, run_batch
from aigateway.testing import MockGateway

from .._integrations import import_integration
from ._browser import measure

SCREENS = [("lab", 1280), ("lab", 930), ("classic", 1280)]
"""Each front end in a 1280 px window; in JupyterLab with its file browser open the outputs
are as wide as in a 930 px window without it."""
HEIGHT = 6000
"""Tall enough that the screenshot holds every output (and no scrollbar narrows the page)."""

MEASURE = """<pre id="layout" hidden></pre><script>
(() => {
  const lines = (element) => {
    const range = document.createRange();
    range.selectNodeContents(element);
    const tops = new Set();
    for (const rect of range.getClientRects()) if (rect.width > 0) tops.add(Math.round(rect.top));
    return tops.size;
  };
  const oneLine = '.aigateway th, .aigateway td:not(:last-child)';
  const labels = [...document.querySelectorAll(oneLine)].map((label) => {
    const value = label.scope === 'row' ? label.nextElementSibling : null;
    return {
      text: label.textContent,
      lines: lines(label),
      right: label.getBoundingClientRect().right,
      valueLeft: value === null ? null : value.getBoundingClientRect().left,
    };
  });
  const overflowing = [...document.querySelectorAll('.aigateway')]
    .filter((shown) => shown.getBoundingClientRect().right > window.innerWidth)
    .map((shown) => shown.textContent.slice(0, 80));
  const brokenMidWord = [...document.querySelectorAll('.aigateway pre')]
    .filter((text) => getComputedStyle(text).wordBreak === 'break-all').length;
  document.getElementById('layout').textContent =
    JSON.stringify({width: window.innerWidth, labels, overflowing, brokenMidWord});
})();
</script>"""


def shown_objects() -> list[tuple[str, dict[str, str]]]:
    """``(source, {mime type: content})`` of every kind of card and table, as a notebook gets
    them: a reply, a chunk, a stream cut to its tail, a chat stream, a parsed reply, models,
    a service result, a batch with a failed item, errors and a client."""
    from pydantic import BaseModel

    class City(BaseModel):
        name: str

    gateway = MockGateway(seed=1)
    messages = [{"role": "user", "content": "Hello"}]
    shown: list[tuple[str, Any]] = []
    with gateway.client() as client:
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages)
        shown.append(("reply", reply))
        gateway.enqueue_reply("A long answer that goes on. " * 40)
        stream = client.chat.completions.create(model="gpt-4o-mini", messages=messages, stream=True)
        chunks = list(stream)
        shown += [("chunks[3]", chunks[3]), ("stream", stream)]
        with client.chat.completions.stream(model="gpt-4o-mini", messages=messages) as chat:
            chat.get_final_completion()
        shown.append(("chat_stream", chat))
        gateway.enqueue_reply('{"name": "Oslo"}')
        parsed = client.chat.completions.parse(
            model="gpt-4o-mini", messages=messages, response_format=City
        )
        shown.append(("parsed", parsed))
        models = client.models.list()
        shown += [("models", models), ("models[0]", models[0])]
        shown.append(("speech", client.audio.speech(model="tts-1", text="hello")))
        items = [
            {"model": "gpt-4o-mini", "messages": messages},
            {"id": "typo", "model": "gpt-4o-minii", "messages": messages},
        ]
        shown.append(("results", run_batch(client, items, progress=False)))
        with (
            gateway.client(api_key="wrong", max_retries=0) as bad_client,
            pytest.raises(AuthenticationError) as refused,
        ):
            bad_client.chat.completions.create(model="gpt-4o-mini", messages=messages)
        gateway.faults.fail(429, retry_after=7)
        with pytest.raises(RateLimitError) as limited:
            client.with_options(max_retries=0).chat.completions.create(
                model="gpt-4o-mini", messages=messages
            )
        shown += [("error", refused.value), ("rate_limited", limited.value), ("client", client)]
        return [
            (source, {"text/html": obj._repr_html_(), "text/plain": repr(obj)})
            for source, obj in shown
        ]


def notebook_page(template: str, outputs: list[tuple[str, dict[str, str]]]) -> str:
    """The page nbconvert's ``template`` makes of a notebook with these outputs, its script
    addresses blanked, the measuring script at its end."""
    nbformat = import_integration("nbformat", "dev")
    nbconvert = import_integration("nbconvert", "dev")
    cells = []
    for count, (source, data) in enumerate(outputs, start=1):
        cell = nbformat.v4.new_code_cell(source, execution_count=count)
        cell.outputs = [nbformat.v4.new_output("execute_result", data=data, execution_count=count)]
        cells.append(cell)
    notebook = nbformat.v4.new_notebook(cells=cells)
    config = nbconvert.exporters.html.Config()
    for name in ("require_js_url", "jquery_url", "mathjax_url", "mermaid_js_url"):
        setattr(config.HTMLExporter, name, "data:,")
    exporter = nbconvert.HTMLExporter(template_name=template, config=config)
    page, _ = exporter.from_notebook_node(notebook)
    assert "</body>" in page
    return str(page).replace("</body>", MEASURE + "</body>")


@pytest.fixture(scope="module")
def outputs() -> list[tuple[str, dict[str, str]]]:
    return shown_objects()


@pytest.mark.parametrize(("template", "width"), SCREENS)
def test_every_label_sits_on_one_line(
    template: str, width: int, outputs: list[tuple[str, dict[str, str]]], tmp_path: Path
) -> None:
    page = tmp_path / f"{template}-{width}.html"
    page.write_text(notebook_page(template, outputs), encoding="utf-8")
    [layout] = measure([page], width, HEIGHT, screenshot=True)
    assert layout["width"] == width
    labels = layout["labels"]
    names = {label["text"] for label in labels}
    for two_words in (
        "finish reason",
        "remaining credits",
        "what to do",
        "request id",
        "context window",
        "text shown",
        "credits spent",
        "last rate limit",
    ):
        assert two_words in names
    wrapped = [label["text"] for label in labels if label["lines"] > 1]  # an empty cell: 0
    assert wrapped == [], f"labels or short cells on more than one line in {template}: {wrapped}"
    overlapping = [
        label["text"]
        for label in labels
        if label["valueLeft"] is not None and label["valueLeft"] < label["right"]
    ]
    assert overlapping == [], f"labels running into their values in {template}: {overlapping}"
    assert layout["overflowing"] == []
    assert layout["brokenMidWord"] == 0
    assert page.with_suffix(".png").read_bytes().startswith(b"\x89PNG")  # to look at
