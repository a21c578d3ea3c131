"""A mkdocs hook that fills the API reference's generated parts.

``<!-- resource: chat.completions -->`` becomes the section of ``client.chat.completions``: its
class's doc, then each public method with the table of its keywords, read from the TypedDict
that defines (and checks) them. ``<!-- errors -->`` becomes the tree of exception classes,
then a section for each. Both follow the code without anyone editing the pages, and the build fails when a resource of the
client is on no page, or on two.
"""

from __future__ import annotations

import contextlib
import re
import sys
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

HOOKS = Path(__file__).resolve().parent
sys.path[:0] = [str(HOOKS), str(HOOKS.parents[1] / "src")]  # reference_data, then aigateway

from reference_data import (  # noqa: E402
    ErrorNode,
    client_resources,
    error_tree,
    method_params,
    param_fields,
)

RESOURCE = re.compile(r"^<!-- resource: ([\w.]+) -->$", re.MULTILINE)
ERRORS = re.compile(r"^<!-- errors -->$", re.MULTILINE)

placed: dict[str, str] = {}
"""Resource path -> the page it was placed on, in this build."""


def documented_resources() -> dict[str, type]:
    """The resources that get a section: those with methods (``client.chat`` only holds
    ``completions``, which has its own)."""
    return {
        path: cls
        for path, cls in client_resources()
        if any(callable(member) for name, member in public_members(cls))
    }


def public_members(cls: type) -> list[tuple[str, Any]]:
    """A resource's methods, then its ``with_*`` views, in the order its module defines them:
    the class's own, then those of the class holding the methods written once for it and its
    async twin (``_WebMethods`` for ``Web`` and ``AsyncWeb``)."""
    own = [klass for klass in cls.__mro__ if klass.__module__ == cls.__module__]
    names = dict.fromkeys(name for klass in own for name in vars(klass))
    members = [(name, getattr(cls, name)) for name in names if not name.startswith("_")]
    methods = [(name, member) for name, member in members if callable(member)]
    views = [(name, member) for name, member in members if name.startswith("with_")]
    return methods + views


def resource_section(path: str) -> str:
    """The section of ``client.<path>``: the class's doc, then each public member (with its
    keywords' table when it takes ``**params``)."""
    cls = documented_resources().get(path)
    if cls is None:
        raise PluginError(f"<!-- resource: {path} -->: client.{path} is not a resource")
    parts = [
        f"## `client.{path}`\n\n"
        f"::: {cls.__module__}.{cls.__name__}\n"
        "    options:\n      show_root_heading: false\n      members: false\n\n"
        f"On `AsyncClient`: `Async{cls.__name__}`, the same methods as coroutines.\n"
    ]
    for name, member in public_members(cls):
        parts.append(
            f"::: {cls.__module__}.{cls.__name__}.{name}\n"
            f'    options:\n      heading_level: 3\n      heading: "client.{path}.{name}"\n'
            f'      toc_label: "{path}.{name}"\n'
        )
        if callable(member):
            with contextlib.suppress(LookupError):  # no keywords beyond its signature
                parts.append(params_table(f"{path}.{name}"))
    return "\n".join(parts)


def params_table(path: str) -> str:
    """The table of the keywords of ``client.<path>``: name, type and limits, description."""
    lines = [
        '<div class="keywords" markdown>',
        "",
        "| Keyword | Type and limits | Description |",
        "| --- | --- | --- |",
    ]
    for field in param_fields(method_params(path)):
        name = f"`{field.name}`" + (" (required)" if field.required else "")
        kind = _cell(field.type) + (f"<br>*{_cell(field.limits)}*" if field.limits else "")
        lines.append(f"| {name} | {kind} | {_cell(field.doc)} |")
    lines += ["", "</div>", ""]
    return (
        "\n".join(lines)
        + "\nA keyword not given is not sent, so the gateway's default (for the per-call options,"
        " the client's setting) applies.\n"
    )


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def errors_list(node: ErrorNode | None = None, depth: int = 0) -> str:
    """The exception classes as a nested list, each with when it is raised."""
    node = node or error_tree()
    also = f" (also a `{'`, `'.join(node.also)}`)" if node.also else ""
    line = f"{'    ' * depth}- `{node.name}`{also}: {node.summary}\n"
    return line + "".join(errors_list(child, depth + 1) for child in node.children)


def errors_section() -> str:
    """The tree of exception classes, then each class documented, in the tree's order."""

    def classes(node: ErrorNode) -> list[ErrorNode]:
        return [node] + [found for child in node.children for found in classes(child)]

    tree = error_tree()
    documented = "\n".join(f"::: {node.module}.{node.name}\n" for node in classes(tree))
    return f"{errors_list(tree)}\n## Error classes\n\n{documented}"


def on_pre_build(**kwargs: Any) -> None:
    placed.clear()


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    def place(match: re.Match[str]) -> str:
        path = match.group(1)
        if path in placed:
            raise PluginError(
                f"client.{path} is on two pages: {placed[path]} and {page.file.src_uri}"
            )
        placed[path] = page.file.src_uri
        return resource_section(path)

    markdown = RESOURCE.sub(place, markdown)
    return ERRORS.sub(lambda match: errors_section(), markdown)


def on_post_build(**kwargs: Any) -> None:
    missing = sorted(set(documented_resources()) - set(placed))
    if missing:
        raise PluginError(
            "resources on no reference page (add <!-- resource: PATH --> to one): "
            + ", ".join(f"client.{path}" for path in missing)
        )
