"""Every public sync method has an async twin with the same signature, and the twin is async."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import pytest

import aigateway
import aigateway.resources

_SYNC_ONLY = {"__enter__", "__exit__", "close"}
_OPENINGS = {"stream", "connect"}
"""Async methods that return an `Opening`: awaitable and an async context manager."""  # async twins are __aenter__/__aexit__/async close


def twin_pairs() -> list[tuple[type, type]]:
    modules = [importlib.import_module("aigateway._client.clients")]
    for info in pkgutil.iter_modules(aigateway.resources.__path__):
        modules.append(importlib.import_module(f"aigateway.resources.{info.name}"))
    pairs = []
    for module in modules:
        for name, cls in vars(module).items():
            if (
                isinstance(cls, type)
                and name.startswith("Async")
                and cls.__module__ == module.__name__
            ):
                sync = getattr(module, name[len("Async") :], None)
                if isinstance(sync, type):
                    pairs.append((sync, cls))
    return pairs


def public_members(cls: type) -> dict[str, object]:
    return {
        name: member
        for name, member in inspect.getmembers(cls)
        if not name.startswith("_") or name in {"__init__"}
    }


def normalized(annotation: object) -> str:
    """Annotation text with the sync/async spelling differences removed."""
    text = (
        annotation
        if isinstance(annotation, str)
        else getattr(annotation, "__name__", repr(annotation))
    )
    text = re.sub(r"\b(Async|Sync)(?=[A-Z])", "", str(text))
    return text.replace("httpx.AsyncBaseTransport", "httpx.BaseTransport")


def test_the_discovery_finds_the_resources() -> None:
    names = {sync.__name__ for sync, _ in twin_pairs()}
    assert {"Client", "Completions", "Chat", "Models"} <= names


@pytest.mark.parametrize(("sync_cls", "async_cls"), twin_pairs(), ids=lambda c: c.__name__)
def test_async_twin_has_every_method_with_the_same_signature(
    sync_cls: type, async_cls: type
) -> None:
    sync_members = public_members(sync_cls)
    async_members = public_members(async_cls)
    for name, member in sync_members.items():
        if name in _SYNC_ONLY:
            continue
        assert name in async_members, f"{async_cls.__name__} lacks {name}"
        twin = async_members[name]
        if inspect.isfunction(member):
            sync_sig = inspect.signature(member)
            async_sig = inspect.signature(twin)  # type: ignore[arg-type]
            assert list(sync_sig.parameters) == list(async_sig.parameters), name
            for param_name, param in sync_sig.parameters.items():
                other = async_sig.parameters[param_name]
                assert param.kind == other.kind, (name, param_name)
                assert param.default == other.default or repr(param.default) == repr(
                    other.default
                ), (name, param_name)
                assert normalized(param.annotation) == normalized(other.annotation), (
                    name,
                    param_name,
                )
            if name in _OPENINGS:  # `async with x.stream(...)` and `await x.stream(...)` both work
                opening = inspect.signature(twin).return_annotation  # type: ignore[arg-type]
                assert str(opening).startswith("Opening["), (async_cls.__name__, name)
            elif name not in {"__init__", "with_options", "with_budget"}:  # copies, not calls
                assert inspect.iscoroutinefunction(twin), (
                    f"{async_cls.__name__}.{name} is not async"
                )
    if hasattr(sync_cls, "close"):  # closing and `async with` are async on the async side
        assert inspect.iscoroutinefunction(async_cls.close)
        assert inspect.iscoroutinefunction(async_cls.__aenter__)
        assert inspect.iscoroutinefunction(async_cls.__aexit__)
