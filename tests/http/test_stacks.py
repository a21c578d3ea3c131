"""The HTTP stack seam (`aigateway._stacks`): which library an object belongs to, the
exceptions of every loaded stack, the stack of the client's own pools, and httpx2 standing in
for httpx (``httpx2.alias_httpx()``)."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import httpx
import httpx2
import pytest

import aigateway
from aigateway import _stacks
from aigateway._stacks import Stack, failure_kind, get, loaded, own_stack, stack_of

STACKS = {"httpx": httpx, "httpx2": httpx2}


@pytest.fixture(params=sorted(STACKS))
def stack(request: pytest.FixtureRequest) -> Stack:
    return get(request.param)


def test_get_gives_one_stack_per_library() -> None:
    for name, module in STACKS.items():
        stack = get(name)
        assert stack is get(name)
        assert (stack.name, stack.module, stack.Client) == (name, module, module.Client)
    assert get("httpx").core_name == "httpcore"
    assert get("httpx2").core_name == "httpcore2"
    with pytest.raises(
        ValueError, match=r"unknown HTTP stack 'requests': use one of httpx, httpx2"
    ):
        get("requests")


def test_stack_of_finds_the_library_of_instances_classes_and_subclasses(stack: Stack) -> None:
    module = stack.module

    class OwnTransport(module.BaseTransport):  # type: ignore[name-defined,misc]
        pass

    request = module.Request("GET", "http://x.test/")
    for obj in (
        module.Client,
        module.AsyncClient(),
        module.MockTransport(lambda r: module.Response(200)),
        OwnTransport(),
        request,
        module.Response(200, request=request),
        module.Timeout(3.0),
        module.ReadTimeout("slow"),
    ):
        assert stack_of(obj) is stack, obj
    for other in (object(), "httpx", 3, Exception("x"), type):
        assert stack_of(other) is None


def test_stack_of_does_not_trust_the_classes_module_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """The openai package rewrites ``__module__`` of the httpx2 classes it exports."""
    monkeypatch.setattr(httpx2.BaseTransport, "__module__", "openai")
    monkeypatch.setattr(httpx.Client, "__module__", "somewhere_else")

    class Transport(httpx2.BaseTransport):
        pass

    assert stack_of(Transport()) is get("httpx2")
    assert stack_of(httpx.Client) is get("httpx")


def test_a_class_written_once_is_made_one_of_each_stack() -> None:
    class Body:
        def __iter__(self) -> Iterator[bytes]:
            yield b"x"

    made = {name: get(name).subclass(Body, "SyncByteStream") for name in STACKS}
    for name, cls in made.items():
        assert cls is get(name).subclass(Body, "SyncByteStream")  # made once
        assert issubclass(cls, STACKS[name].SyncByteStream)
        assert issubclass(cls, Body)
        assert cls.stack is get(name)  # type: ignore[attr-defined]
        assert stack_of(cls()) is get(name)
        assert cls.__name__ == "Body"
    response = httpx2.Response(200, stream=made["httpx2"]())  # type: ignore[arg-type]
    assert response.read() == b"x"


def test_the_aiohttp_transport_and_the_core_are_the_stacks_own(stack: Stack) -> None:
    transport = stack.aiohttp_transport()
    assert issubclass(transport, stack.AsyncBaseTransport)
    assert stack_of(transport) is stack
    assert stack.core().__name__ == stack.core_name


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        ("ConnectTimeout", "timeout"),
        ("ReadTimeout", "timeout"),
        ("WriteTimeout", "timeout"),
        ("PoolTimeout", "timeout"),
        ("ConnectError", "connection"),
        ("ReadError", "connection"),
        ("WriteError", "connection"),
        ("RemoteProtocolError", "connection"),
        ("LocalProtocolError", "connection"),
        ("ProxyError", "connection"),
        ("UnsupportedProtocol", "connection"),
        ("DecodingError", "decoding"),
        ("InvalidURL", None),
    ],
)
def test_failure_kinds_are_the_same_on_both_stacks(error: str, kind: str | None) -> None:
    for module in STACKS.values():
        assert failure_kind(getattr(module, error)("x")) == kind, (module, error)


def test_failure_kinds_of_plain_python_errors() -> None:
    assert failure_kind(TimeoutError()) == "timeout"
    assert failure_kind(ConnectionResetError()) == "connection"
    assert failure_kind(ValueError()) is None


def test_the_errors_of_every_loaded_stack_are_joined_by_kind() -> None:
    assert loaded() == (get("httpx"), get("httpx2"))
    errors = _stacks.loaded_errors()
    assert errors.timeout == (httpx.TimeoutException, httpx2.TimeoutException)
    assert errors.read == (httpx.HTTPError, httpx.StreamError, httpx2.HTTPError, httpx2.StreamError)
    with pytest.raises(errors.read):
        raise httpx2.StreamClosed()


def test_httpx2_loaded_after_the_seam_is_seen() -> None:
    """A tuple of exceptions built when aigateway loads would miss httpx2 imported later."""
    script = """
        import sys
        from aigateway import _stacks
        assert "httpx2" not in sys.modules
        assert [s.name for s in _stacks.loaded()] == ["httpx"]
        assert _stacks.failure_kind(ValueError()) is None
        import httpx2
        assert [s.name for s in _stacks.loaded()] == ["httpx", "httpx2"]
        assert _stacks.failure_kind(httpx2.ReadTimeout("x")) == "timeout"
        print("ok")
    """
    assert run_python(script) == "ok"


def test_alias_httpx_makes_the_two_stacks_one() -> None:
    script = """
        import httpx2
        httpx2.alias_httpx()
        import httpx
        from aigateway import _stacks
        stack = _stacks.get("httpx")
        assert stack is _stacks.get("httpx2") and stack.name == "httpx2", stack
        assert stack.core_name == "httpcore2"
        assert _stacks.loaded() == (stack,)
        assert _stacks.stack_of(httpx.Client) is stack
        assert _stacks.failure_kind(httpx.ReadTimeout("x")) == "timeout"
        print("ok")
    """
    assert run_python(script) == "ok"


def test_httpx2_missing_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "httpx2", None)
    monkeypatch.setattr(_stacks, "_stacks", {"httpx": get("httpx")})
    with pytest.raises(ImportError, match=r"an httpx2 client needs the optional package 'httpx2'"):
        get("httpx2")


def test_own_stack_is_the_default_unless_the_environment_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(_stacks.STACK_ENV, raising=False)
    assert own_stack() is get(_stacks.DEFAULT_STACK) is get("httpx")
    monkeypatch.setenv(_stacks.STACK_ENV, " HTTPX2 ")
    assert own_stack() is get("httpx2")
    monkeypatch.setenv(_stacks.STACK_ENV, "aiohttp")
    with pytest.raises(ValueError, match=r"AIGATEWAY_HTTP_STACK='aiohttp' .* httpx, httpx2"):
        own_stack()


def run_python(script: str) -> str:
    """What ``script`` prints, run by a new Python process (it must succeed)."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


HTTP_LIBRARIES = frozenset({"httpx", "httpx2", "httpcore", "httpcore2", "httpx_aiohttp"})
SPEAKING_HTTP = {
    "aigateway._stacks": "the seam: the stacks, their classes and errors, the type aliases",
    "aigateway._http.clients": "the SDK's own httpx client classes (their cookie jar)",
    "aigateway.testing._serving.transport": "the mock's in-process transport for httpx",
    "aigateway.testing._serving.transport_httpx2": "the same for httpx2",
    "aigateway.testing._record.cassette": "the cassette transport for httpx",
    "aigateway.testing._record.cassette_httpx2": "the same for httpx2",
}
"""The only modules that name an HTTP library (docs/architecture.md, "The HTTP stack")."""


def libraries_named(path: Path) -> set[str]:
    """The HTTP libraries ``path`` imports anywhere (top level, functions, ``TYPE_CHECKING``)
    or names to an importer (``require("httpcore2", ...)``, ``import_module("httpx")``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            found.add(node.module or "")
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", getattr(node.func, "attr", None))
            in ("require", "import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.add(node.args[0].value)
    return {name.partition(".")[0] for name in found} & HTTP_LIBRARIES


def test_only_the_modules_that_speak_http_name_an_http_library() -> None:
    package = Path(aigateway.__file__).parent
    naming = {}
    for path in sorted(package.rglob("*.py")):
        module = ".".join(("aigateway", *path.relative_to(package).with_suffix("").parts))
        libraries = libraries_named(path)
        if libraries:
            naming[module.removesuffix(".__init__")] = libraries
    assert set(naming) <= set(SPEAKING_HTTP), sorted(set(naming) - set(SPEAKING_HTTP))
    assert "aigateway._stacks" in naming  # the scan sees what it looks for


def test_the_scan_sees_every_way_of_naming_a_library(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import httpx2\n"
        "def f():\n    from httpcore import URL\n    return require('httpx_aiohttp.httpx2', 'x', 'y')\n"
        "import importlib\nimportlib.import_module('httpcore2')\n"
        "from . import httpx\nimport httpxlike\n"
    )
    assert libraries_named(source) == {"httpx2", "httpcore", "httpx_aiohttp", "httpcore2"}
