"""A mkdocs hook that fills the API reference's generated parts.

``<!-- params: chat.completions.create -->`` becomes the table of that method's keywords, read
from the TypedDict that defines them (and checks them); ``<!-- errors -->`` becomes the tree of
exception classes. Both follow the code without anyone editing the page.
"""

from __future__ import annotations

import contextlib
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from aigateway._reference import (
    ErrorNode,
    client_resources,
    error_tree,
    method_params,
    param_fields,
)

PARAMS = re.compile(r"^<!-- params: ([\w.]+) -->$", re.MULTILINE)
ERRORS = re.compile(r"^<!-- errors -->$", re.MULTILINE)
RESOURCES = re.compile(r"^<!-- resources -->$", re.MULTILINE)


def resources_section() -> str:
    """Every resource of the client: its class's doc, then each public method (with its
    keywords' table when it takes ``**params``)."""
    parts = []
    for path, cls in client_resources():
        methods = [
            name
            for name, member in vars(cls).items()
            if not name.startswith("_") and (callable(member) or name.startswith("with_"))
        ]
        if not any(callable(vars(cls)[name]) for name in methods):
            continue  # a namespace such as client.chat: its resources follow
        twin = f"Async{cls.__name__}"
        parts.append(
            f"### `client.{path}`\n\n"
            f"::: {cls.__module__}.{cls.__name__}\n"
            "    options:\n      show_root_heading: false\n      members: false\n\n"
            f"On `AsyncClient`: `{twin}`, the same methods as coroutines.\n"
        )
        for name in methods:
            parts.append(
                f"::: {cls.__module__}.{cls.__name__}.{name}\n"
                f'    options:\n      heading_level: 4\n      heading: "client.{path}.{name}"\n'
                f'      toc_label: "{path}.{name}"\n'
            )
            if callable(vars(cls)[name]):
                with contextlib.suppress(LookupError):  # no keywords beyond its signature
                    parts.append(params_table(f"{path}.{name}"))
    return "\n".join(parts)


def params_table(path: str) -> str:
    """The markdown table of the keywords of ``client.<path>``."""
    lines = [
        "| Keyword | Type | Limits | Default | Description |",
        "| --- | --- | --- | --- | --- |",
    ]
    for field in param_fields(method_params(path)):
        cells = [
            f"`{field.name}`",
            _cell(field.type),
            _cell(field.limits),
            "required" if field.required else "—",
            _cell(field.doc),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return (
        "\n".join(lines)
        + "\n\n— : not sent, so the gateway's default (for the per-call options, the client's setting) applies.\n"
    )


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def errors_list(node: ErrorNode | None = None, depth: int = 0) -> str:
    """The exception classes as a nested list, each with when it is raised."""
    node = node or error_tree()
    also = f" (also a `{'`, `'.join(node.also)}`)" if node.also else ""
    line = f"{'    ' * depth}- `{node.name}`{also}: {node.summary}\n"
    return line + "".join(errors_list(child, depth + 1) for child in node.children)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    markdown = RESOURCES.sub(lambda match: resources_section(), markdown)
    markdown = PARAMS.sub(lambda match: params_table(match.group(1)), markdown)
    return ERRORS.sub(lambda match: errors_list(), markdown)
