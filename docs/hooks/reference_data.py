"""The parameters of a method and the error tree, as plain rows for the API reference.

The docs' build hook (reference.py, beside this file) renders these as tables, so the
reference follows the TypedDicts (the one definition of every keyword, its limits and its
docs) and the exception classes by itself. It reads the installed package and is not part of
it: only the docs build and tests/package/test_reference.py use it.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import textwrap
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, get_args, get_origin, get_type_hints

import annotated_types
from pydantic import AfterValidator
from pydantic.fields import FieldInfo
from typing_extensions import NotRequired, Required, Unpack

__all__ = [
    "ErrorNode",
    "ParamField",
    "client_resources",
    "error_tree",
    "method_params",
    "param_fields",
    "public_module",
]


@dataclass(frozen=True)
class ParamField:
    """One keyword of a method: its name, type, limits, whether it is required, and its doc."""

    name: str
    type: str
    limits: str
    required: bool
    doc: str


@dataclass(frozen=True)
class ErrorNode:
    """An exception class, what its docstring says of when it is raised, and its subclasses."""

    name: str
    module: str
    """The module it is imported from (`public_module`)."""
    summary: str
    children: tuple[ErrorNode, ...]
    also: tuple[str, ...] = ()
    """Its other base classes (it is listed under its first)."""


def method_params(path: str) -> type:
    """The TypedDict of the keywords of ``client.<path>`` (``"chat.completions.create"``).

    The path is followed from `aigateway.Client` through its resources, so it names a method
    as a user calls it.
    """
    from aigateway._client.clients import Client

    *resources, method_name = path.split(".")
    owner: Any = Client
    for name in resources:
        attribute = inspect.getattr_static(owner, name)
        owner = _resource_class(owner, name, attribute)
    method = getattr(owner, method_name)
    params_type = getattr(method, "__params_type__", None)
    if params_type is None:
        params_type = _unpacked(method)
    if params_type is None:
        raise LookupError(f"client.{path} takes no **params: Unpack[...]")
    return params_type


def client_resources() -> list[tuple[str, type]]:
    """Every resource of `aigateway.Client` as ``(path, class)``, in the order the client
    defines them, nested ones (``chat.completions``) after their parent."""
    from aigateway._client.clients import Client

    found: list[tuple[str, type]] = []

    def visit(owner: type, prefix: str) -> None:
        inherited = (name for cls in reversed(owner.__mro__) for name in vars(cls))
        for name in dict.fromkeys(inherited):  # the clients' resources are their base's
            if name.startswith("_") or name.startswith("with_"):
                continue
            attribute = inspect.getattr_static(owner, name)
            try:
                resource = _resource_class(owner, name, attribute)
            except (LookupError, KeyError, TypeError, NameError):
                continue
            if isinstance(resource, type) and resource.__module__.startswith("aigateway.resources"):
                found.append((prefix + name, resource))
                visit(resource, prefix + name + ".")

    visit(Client, "")
    return found


def _resource_class(owner: type, name: str, attribute: object) -> type:
    module = getattr(attribute, "_module", None)
    if module is not None:  # a LazyResource of the client
        found: type = getattr(
            importlib.import_module(f"aigateway.resources.{module}"),
            attribute._class_name,  # type: ignore[attr-defined]
        )
        return found
    getter = getattr(attribute, "fget", None) or getattr(attribute, "func", None)
    if getter is not None:  # a property or cached_property returning a resource
        returned: type = get_type_hints(getter)["return"]
        return returned
    raise LookupError(f"{owner.__name__}.{name} is not a resource")


def _unpacked(method: Callable[..., Any]) -> type | None:
    hints = get_type_hints(method, include_extras=True)
    for parameter in inspect.signature(method, follow_wrapped=False).parameters.values():
        hint = hints.get(parameter.name)
        if parameter.kind is parameter.VAR_KEYWORD and get_origin(hint) is Unpack:
            unpacked: type = get_args(hint)[0]
            return unpacked
    return None


def param_fields(params_type: type) -> list[ParamField]:
    """The keywords a TypedDict defines, required ones first, each with its type, its limits
    (from the pydantic metadata that the checks use) and its attribute docstring."""
    hints = get_type_hints(params_type, include_extras=True)
    docs = _field_docs(params_type)
    rows = []
    for name, hint in hints.items():
        required = name in getattr(params_type, "__required_keys__", ())
        if get_origin(hint) in (Required, NotRequired):
            required = get_origin(hint) is Required
            hint = get_args(hint)[0]
        rows.append(
            ParamField(name, type_text(hint), limits_text(hint), required, docs.get(name, ""))
        )
    return [row for row in rows if row.required] + [row for row in rows if not row.required]


def _field_docs(params_type: type) -> dict[str, str]:
    """Attribute docstrings (a string right after a field) of the class and its bases."""
    docs: dict[str, str] = {}
    for cls in _typeddict_bases(params_type):
        try:
            source = textwrap.dedent(inspect.getsource(cls))
        except (OSError, TypeError):
            continue
        body = ast.parse(source).body[0]
        assert isinstance(body, ast.ClassDef)
        for field, following in zip(body.body, body.body[1:], strict=False):
            if (
                isinstance(field, ast.AnnAssign)
                and isinstance(field.target, ast.Name)
                and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                docs.setdefault(
                    field.target.id, " ".join(inspect.cleandoc(following.value.value).split())
                )
    return docs


def _typeddict_bases(cls: type) -> Iterator[type]:
    yield cls
    for base in getattr(cls, "__orig_bases__", ()):
        if isinstance(base, type) and base is not dict and hasattr(base, "__annotations__"):
            yield from _typeddict_bases(base)


def type_text(hint: Any) -> str:
    """A type as a reader writes it: ``float``, ``str | list[str]``, ``'auto' | 'none'``."""
    origin = get_origin(hint)
    if origin is typing.Annotated:
        return type_text(get_args(hint)[0])
    if origin in (Required, NotRequired):
        return type_text(get_args(hint)[0])
    if origin in (typing.Union, types.UnionType):
        return " | ".join(dict.fromkeys(type_text(arg) for arg in get_args(hint)))
    if origin is typing.Literal:
        return " | ".join(repr(value) for value in get_args(hint))
    if hint is type(None) or hint is None:
        return "None"
    if hint is Any:
        return "Any"
    if origin is not None:
        args = ", ".join(type_text(arg) for arg in get_args(hint))
        name = getattr(origin, "__name__", str(origin))
        return f"{name}[{args}]" if args else name
    return getattr(hint, "__name__", str(hint).replace("typing.", ""))


def limits_text(hint: Any) -> str:
    """The limits the checks apply to a type, in words (``0 to 2``; ``at most 4 items``)."""
    return "; ".join(_limits(hint))


def _limits(hint: Any, prefix: str = "") -> list[str]:
    origin = get_origin(hint)
    found: list[str] = []
    if origin is typing.Annotated:
        base, *metadata = get_args(hint)
        found += [prefix + text for text in _metadata_limits(base, metadata)]
        found += _limits(base, prefix)
    elif origin in (typing.Union, types.UnionType):
        for arg in get_args(hint):
            if get_origin(arg) is typing.Annotated:
                found += _limits(arg, prefix or f"{type_text(arg)}: ")
            else:
                found += _limits(arg, prefix)
    elif origin is list:
        found += _limits(get_args(hint)[0], "items: ")
    elif origin is dict:
        key, value = get_args(hint)
        found += _limits(key, "keys: ") + _limits(value, "values: ")
    return list(dict.fromkeys(found))


def _metadata_limits(base: Any, metadata: list[Any]) -> list[str]:
    items: list[Any] = []
    for entry in metadata:
        items.extend(entry.metadata if isinstance(entry, FieldInfo) else [entry])
    bounds: dict[str, Any] = {}
    texts: list[str] = []
    for item in items:
        if isinstance(item, annotated_types.Ge):
            bounds["low"] = item.ge
        elif isinstance(item, annotated_types.Gt):
            texts.append(f"more than {item.gt}")
        elif isinstance(item, annotated_types.Le):
            bounds["high"] = item.le
        elif isinstance(item, annotated_types.Lt):
            texts.append(f"less than {item.lt}")
        elif isinstance(item, annotated_types.MinLen):
            bounds["min_len"] = item.min_length
        elif isinstance(item, annotated_types.MaxLen):
            bounds["max_len"] = item.max_length
        elif getattr(item, "pattern", None):
            texts.append(f"matches `{item.pattern}`")
        elif isinstance(item, AfterValidator) and item.func.__doc__:
            texts.append(" ".join(item.func.__doc__.split()))
    if "low" in bounds and "high" in bounds:
        texts.insert(0, f"{bounds['low']} to {bounds['high']}")
    elif "low" in bounds:
        texts.insert(0, f"at least {bounds['low']}")
    elif "high" in bounds:
        texts.insert(0, f"at most {bounds['high']}")
    unit = "characters" if base is str else "items"
    low, high = bounds.get("min_len"), bounds.get("max_len")
    if low is not None and high is not None:
        texts.append(f"{low} to {high} {unit}")
    elif low is not None:
        texts.append("not empty" if low == 1 else f"at least {low} {unit}")
    elif high is not None:
        texts.append(f"at most {high} {unit}")
    return texts


def error_tree(root: type[BaseException] | None = None) -> ErrorNode:
    """The exception classes of `aigateway.errors` under ``root`` (`AIGatewayError`)."""
    from aigateway import errors

    root = root or errors.AIGatewayError
    children = sorted(
        (
            sub
            for sub in root.__subclasses__()
            if sub.__module__.startswith("aigateway.") and sub.__bases__[0] is root
        ),
        key=lambda sub: inspect.getsourcelines(sub)[1],
    )
    summary = " ".join(inspect.cleandoc(root.__doc__ or "").split("\n\n")[0].split())
    also = tuple(
        base.__name__
        for base in root.__bases__[1:]
        if issubclass(base, errors.AIGatewayError) or base.__module__ == "builtins"
    )
    children_nodes = tuple(error_tree(child) for child in children)
    return ErrorNode(root.__name__, public_module(root), summary, children_nodes, also)


def public_module(cls: type) -> str:
    """The module a user imports ``cls`` from: the one defining it when that is public, else
    ``aigateway`` or a public module of the defining one's package that exports it."""
    if not any(part.startswith("_") for part in cls.__module__.split(".")):
        return cls.__module__
    package = cls.__module__.rpartition(".")[0]
    candidates = ["aigateway"] + [
        f"{package}.{module.name}"
        for module in pkgutil.iter_modules(importlib.import_module(package).__path__)
        if not module.name.startswith("_")
    ]
    for candidate in candidates:
        module = importlib.import_module(candidate)
        if cls.__name__ in getattr(module, "__all__", ()) and getattr(module, cls.__name__) is cls:
            return candidate
    raise LookupError(f"{cls.__module__}.{cls.__name__} is exported by no public module")
