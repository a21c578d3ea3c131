"""A griffe extension: the client's resources (``chat = LazyResource(module, class, doc)``)
are documented as attributes of their resource type, with the doc string given to them."""

from __future__ import annotations

import ast
from typing import Any

import griffe


class LazyResources(griffe.Extension):
    def on_attribute_instance(
        self, *, node: ast.AST | griffe.ObjectNode, attr: griffe.Attribute, **kwargs: Any
    ) -> None:
        if not isinstance(node, ast.AnnAssign) or not isinstance(node.value, ast.Call):
            return
        call = node.value
        if not (isinstance(call.func, ast.Name) and call.func.id == "LazyResource"):
            return
        doc = call.args[2] if len(call.args) > 2 else None
        if isinstance(doc, ast.Constant) and isinstance(doc.value, str):
            attr.docstring = griffe.Docstring(doc.value, parent=attr)
        if isinstance(attr.annotation, griffe.ExprSubscript):
            attr.annotation = attr.annotation.slice
        attr.value = None
        attr.labels.add("resource")
