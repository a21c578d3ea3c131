"""Griffe extensions for the API reference: they make the documented signatures say what a
user passes, where the source spells it for the checkers or for lazy loading."""

from __future__ import annotations

import ast
from typing import Any

import griffe


class LazyResources(griffe.Extension):
    """The client's resources (``chat = LazyResource(module, class, doc)``) are documented as
    attributes of their resource type, with the doc string given to them."""

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


class KeywordSignatures(griffe.Extension):
    """A method decorated with ``@keyword_signature(Params, request=Request)`` is shown with
    the signature it is called with, ``(request: Request | None = None, /,
    **params: Unpack[Params])``, instead of its implementation's ``(*args: Any, **params:
    Any)``, which only its typed overloads (hidden from the reference) narrow."""

    def on_function_instance(
        self, *, node: ast.AST | griffe.ObjectNode, func: griffe.Function, **kwargs: Any
    ) -> None:
        owner = func.parent
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or owner is None:
            return
        call = next(
            (
                decorator
                for decorator in node.decorator_list
                if isinstance(decorator, ast.Call)
                and isinstance(decorator.func, ast.Name)
                and decorator.func.id == "keyword_signature"
            ),
            None,
        )
        if call is None or not call.args:
            return

        def annotation(tree: ast.expr) -> griffe.Expr | str | None:
            return griffe.safe_get_annotation(tree, parent=owner)

        unpacked = ast.Subscript(value=ast.Name(id="Unpack"), slice=call.args[0])
        request = next((kw.value for kw in call.keywords if kw.arg == "request"), None)
        kept = [
            parameter
            for parameter in func.parameters
            if parameter.kind
            not in (griffe.ParameterKind.var_positional, griffe.ParameterKind.var_keyword)
        ]
        if request is not None:
            if isinstance(request, ast.Constant) and isinstance(request.value, str):
                request = ast.Name(id=request.value)
            optional = ast.BinOp(left=request, op=ast.BitOr(), right=ast.Constant(value=None))
            kept = [
                griffe.Parameter(
                    parameter.name,
                    annotation=parameter.annotation,
                    kind=griffe.ParameterKind.positional_only,
                    default=parameter.default,
                )
                for parameter in kept
            ]
            kept.append(
                griffe.Parameter(
                    "request",
                    annotation=annotation(optional),
                    kind=griffe.ParameterKind.positional_only,
                    default="None",
                )
            )
        kept.append(
            griffe.Parameter(
                "params", annotation=annotation(unpacked), kind=griffe.ParameterKind.var_keyword
            )
        )
        func.parameters = griffe.Parameters(*kept)


class SpecialMethodsHidden(griffe.Extension):
    """Special methods (``__reduce__``, ``__iter__``) are how Python uses an object, not what
    a reader calls by name: like ``_private`` names, they stay out of the reference. The
    ``public`` filter (which honours modules' ``__all__``) would list them, on a class shown
    under its public name too, so they are dropped from the classes themselves."""

    def on_class_members(self, *, cls: griffe.Class, **kwargs: Any) -> None:
        special = [
            name
            for name in cls.members
            if name.startswith("__") and name.endswith("__") and name != "__init__"
        ]
        for name in special:
            cls.del_member(name)
