"""Griffe extensions for the API reference: they make the documented signatures say what a
user passes, where the source spells it for the checkers or for lazy loading."""

from __future__ import annotations

import ast
import dataclasses
from typing import Any

import griffe


class LazyResources(griffe.Extension):
    """The clients' resources (``chat = LazyResource(module, class, doc)``) are documented as
    attributes with the doc string given to them (`ClientTwins` gives each client its type)."""

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
        attr.value = None
        attr.labels.add("resource")


class ClientTwins(griffe.Extension):
    """`Client` and `AsyncClient` inherit their constructor and resources from one base,
    ``BaseClient[Pipeline, HTTPClient, Transport]``: each client is documented with its own
    copy, the base's type parameters replaced by the client's type arguments
    (``http_client: httpx.Client | None``) and each resource, a ``LazyResource[Chat,
    AsyncChat]``, shown as the class that client has (``chat: Chat``, ``chat: AsyncChat``).
    Everywhere in the package, the private type aliases in annotations (``SyncHTTPClient``,
    ``URL``, ``TimeoutTypes``, ...) are shown as what they stand for (``httpx.Client |
    httpx2.Client``): a reader cannot look them up."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        if pkg.name != "aigateway":
            return
        base = pkg["_client.base.BaseClient"]
        generic = next(b for b in base.bases if isinstance(b, griffe.ExprSubscript))
        type_parameters = [str(element) for element in _elements(generic.slice)]
        for name in ("Client", "AsyncClient"):
            client = pkg[f"_client.clients.{name}"]
            subscript = next(b for b in client.bases if isinstance(b, griffe.ExprSubscript))
            arguments = _elements(subscript.slice)
            mapping = dict(zip(type_parameters, arguments, strict=True))
            asynchronous = str(arguments[0]) == "AsyncPipeline"
            init = base.members["__init__"]
            copy = griffe.Function(
                "__init__",
                lineno=init.lineno,
                endlineno=init.endlineno,
                returns=init.returns,
                parameters=griffe.Parameters(
                    *(
                        griffe.Parameter(
                            parameter.name,
                            annotation=_expanded(_substituted(parameter.annotation, mapping), pkg),
                            kind=parameter.kind,
                            default=parameter.default,
                        )
                        for parameter in init.parameters
                    )
                ),
            )
            client.set_member("__init__", copy)
            if init.docstring is not None:
                copy.docstring = _docstring(init.docstring, copy)
            for member in list(base.members.values()):
                if "resource" not in member.labels:
                    continue
                annotation = member.annotation
                if isinstance(annotation, griffe.ExprSubscript):
                    annotation = _elements(annotation.slice)[int(asynchronous)]
                resource = griffe.Attribute(
                    member.name,
                    lineno=member.lineno,
                    endlineno=member.endlineno,
                    annotation=annotation,
                )
                resource.labels |= member.labels
                client.set_member(member.name, resource)
                if member.docstring is not None:
                    resource.docstring = _docstring(member.docstring, resource)
        _expand_aliases(pkg, pkg)


def _expand_aliases(owner: griffe.Object, pkg: griffe.Module) -> None:
    """Every annotation of ``owner``'s members (parameters, returns, attributes, properties),
    recursively, with the private type aliases replaced by what they stand for."""
    for member in owner.members.values():
        if member.is_alias:  # an import: documented where it is defined
            continue
        if isinstance(member, griffe.Function):
            for parameter in member.parameters:
                parameter.annotation = _expanded(parameter.annotation, pkg)
            member.returns = _expanded(member.returns, pkg)
        elif isinstance(member, griffe.Attribute):
            if str(member.annotation) != "TypeAlias":
                member.annotation = _expanded(member.annotation, pkg)
        elif isinstance(member, (griffe.Class, griffe.Module)):
            _expand_aliases(member, pkg)


def _expanded(annotation: Any, pkg: griffe.Module) -> Any:
    return _flat_union(_without_aliases(annotation, pkg))


def _docstring(docstring: griffe.Docstring, parent: griffe.Object) -> griffe.Docstring:
    return griffe.Docstring(
        docstring.value,
        parent=parent,
        parser=docstring.parser,
        parser_options=docstring.parser_options,
    )


def _elements(expression: Any) -> list[Any]:
    return list(expression.elements) if isinstance(expression, griffe.ExprTuple) else [expression]


def _substituted(expression: Any, mapping: dict[str, Any]) -> Any:
    """``expression`` with the names in ``mapping`` replaced by their values."""
    if isinstance(expression, griffe.ExprName):
        return mapping.get(expression.name, expression)
    if isinstance(expression, griffe.Expr) and dataclasses.is_dataclass(expression):
        changes = {
            field.name: _substituted(getattr(expression, field.name), mapping)
            for field in dataclasses.fields(expression)
        }
        return dataclasses.replace(expression, **changes)
    if isinstance(expression, list):
        return [_substituted(item, mapping) for item in expression]
    return expression


def _without_aliases(expression: Any, pkg: griffe.Module) -> Any:
    """``expression`` with every name of a type alias in a private module of ``pkg`` (``X:
    TypeAlias = ...``) replaced by its value, spelled ``A | B`` (``Union[A, "B"]`` included),
    recursively."""
    if isinstance(expression, griffe.ExprName):
        target = _private_alias(expression.canonical_path, pkg)
        if target is None:
            return expression
        value = ast.parse(str(target.value), mode="eval").body
        written = griffe.safe_get_annotation(_as_bar_union(value), parent=target.parent)
        return _without_aliases(_dotted_as_text(written), pkg)
    if isinstance(expression, griffe.Expr) and dataclasses.is_dataclass(expression):
        changes = {
            field.name: _without_aliases(getattr(expression, field.name), pkg)
            for field in dataclasses.fields(expression)
            if field.name != "parent"
        }
        return dataclasses.replace(expression, **changes)
    if isinstance(expression, list):
        return [_without_aliases(item, pkg) for item in expression]
    return expression


def _dotted_as_text(expression: Any) -> Any:
    """``expression`` with each dotted name (``httpx.Client``) as plain text: the reference
    would show a cross-reference by its last part only (``Client | Client``)."""
    if isinstance(expression, griffe.ExprAttribute):
        return str(expression)
    if isinstance(expression, griffe.ExprBinOp):
        return griffe.ExprBinOp(
            _dotted_as_text(expression.left), expression.operator, _dotted_as_text(expression.right)
        )
    return expression


def _flat_union(expression: Any) -> Any:
    """``A | (B | C) | None`` as ``A | B | C | None``, what an alias replaced inside a union leaves."""
    if not (isinstance(expression, griffe.ExprBinOp) and expression.operator == "|"):
        return expression

    def members(part: Any) -> list[Any]:
        if isinstance(part, griffe.ExprBinOp) and part.operator == "|":
            return members(part.left) + members(part.right)
        return [part]

    first, *rest = members(expression)
    for member in rest:
        first = griffe.ExprBinOp(first, "|", member)
    return first


def _private_alias(path: str, pkg: griffe.Module) -> griffe.Attribute | None:
    """The type alias at ``path`` (``aigateway._stacks.URL``), if it is one in a private module."""
    module, _, name = path.rpartition(".")
    if not module.startswith(f"{pkg.name}.") or "._" not in f".{module.removeprefix(pkg.name)}":
        return None
    try:
        target = pkg[f"{module.removeprefix(pkg.name + '.')}.{name}"]
    except (KeyError, griffe.AliasResolutionError):
        return None
    if isinstance(target, griffe.Attribute) and str(target.annotation) == "TypeAlias":
        return target
    return None


def _as_bar_union(node: ast.expr) -> ast.expr:
    """``Union[A, "B"]`` as ``A | B`` (the quotes only defer an import)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return _as_bar_union(ast.parse(node.value, mode="eval").body)
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id == "Union"
    ):
        elements = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        union = _as_bar_union(elements[0])
        for element in elements[1:]:
            union = ast.BinOp(left=union, op=ast.BitOr(), right=_as_bar_union(element))
        return union
    if isinstance(node, ast.BinOp):
        return ast.BinOp(left=_as_bar_union(node.left), op=node.op, right=_as_bar_union(node.right))
    return node


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


class WrittenOnceForTwins(griffe.Extension):
    """What a resource writes once for its sync and async classes is shown as the sync class
    has it (the reference documents the sync classes): a method made by ``@endpoint``, a
    function describing its call (``-> APICall[Result]``), returning what calling it gives
    (``-> Result``); a view made by ``twin_view(Sync, Async)`` as an attribute of type
    ``Sync``."""

    def on_function_instance(
        self, *, node: ast.AST | griffe.ObjectNode, func: griffe.Function, **kwargs: Any
    ) -> None:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return
        if not any(
            isinstance(decorator, ast.Name) and decorator.id == "endpoint"
            for decorator in node.decorator_list
        ):
            return
        if isinstance(func.returns, griffe.ExprSubscript) and str(func.returns.left) == "APICall":
            func.returns = func.returns.slice

    def on_attribute_instance(
        self, *, node: ast.AST | griffe.ObjectNode, attr: griffe.Attribute, **kwargs: Any
    ) -> None:
        if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Call):
            return
        call = node.value
        if isinstance(call.func, ast.Name) and call.func.id == "twin_view" and call.args:
            attr.annotation = griffe.safe_get_annotation(call.args[0], parent=attr.parent)
            attr.value = None


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
