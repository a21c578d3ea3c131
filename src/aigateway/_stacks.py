"""The HTTP stacks aigateway speaks, as one seam: httpx (the default) and httpx2, its fork.

The two libraries have the same public API but distinct classes: an object of one is never
accepted by the other (an ``httpx.Request`` sent by an ``httpx2.Client`` fails, an
``httpx.Timeout`` given to httpx2 breaks later), so everything handed to a client must come
from that client's stack. Only this module and the modules that speak HTTP (`_http/`, the
mock's transports and cassette) import the libraries; the rest of the package asks here.

The API (small and stable; the client side and the mock's transports use only this):

* `Stack`: what aigateway uses of one library: ``name`` (``"httpx"`` or ``"httpx2"``),
  ``module`` (its top module, for any public name: ``stack.module.ReadTimeout``), the classes
  the package builds or checks (``stack.Request``, ``stack.Response``, ``stack.Client``, ...),
  ``errors`` (`StackErrors`, the exception classes by kind), ``core()`` (httpcore or
  httpcore2, imported on first use), ``aiohttp_transport()`` (httpx-aiohttp's transport
  for this stack) and ``subclass(mixin, "SyncByteStream")`` (a class written once, made a
  subclass of one of the stack's classes, or of a class given, per stack and once).
* `get` (``get("httpx2")``): the stack of that name, imported on first use; httpx2 missing is
  an ImportError naming the ``httpx2`` extra.
* `stack_of` (``stack_of(obj)``): the stack a client, transport, request, response, timeout
  or exception belongs to (an instance or a class), or None; one dict lookup per type.
* `loaded`: the stacks imported so far, by anyone: httpx, and httpx2 once something
  imported it (one stack when ``httpx2.alias_httpx()`` made ``import httpx`` return httpx2).
* `loaded_errors`, `read_failures` and `failure_kind`: the exceptions of every loaded stack,
  looked up when asked (a tuple built at import would miss httpx2, which may load later):
  what a timeout, a lost connection, an undecodable body and a failed read are, whatever the
  stack. An ``except read_failures():`` clause calls it only when an exception arrives.
* `DEFAULT_STACK`: the stack of the clients and pools aigateway makes itself when given none;
  the one place to switch it. `STACK_ENV` (``AIGATEWAY_HTTP_STACK``) overrides it for a
  process, read when a client is made (`own_stack`).
* Type aliases, unions of both libraries' classes (``Request``, ``Response``, ``Headers``,
  ``URL``, ``Timeout``, ``SyncHTTPClient``, ``AsyncHTTPClient``, ``HTTPClient``,
  ``SyncTransport``, ``AsyncTransport``), for annotations: at run time httpx2's half is a
  forward reference, so using them imports no httpx2.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, TypeVar, Union

import httpx

from aigateway._optional import require

if TYPE_CHECKING:
    import httpx2

Request: TypeAlias = Union[httpx.Request, "httpx2.Request"]
Response: TypeAlias = Union[httpx.Response, "httpx2.Response"]
Headers: TypeAlias = Union[httpx.Headers, "httpx2.Headers"]
URL: TypeAlias = Union[httpx.URL, "httpx2.URL"]
Timeout: TypeAlias = Union[httpx.Timeout, "httpx2.Timeout"]
SyncHTTPClient: TypeAlias = Union[httpx.Client, "httpx2.Client"]
"""An ``httpx.Client`` or an ``httpx2.Client``."""
AsyncHTTPClient: TypeAlias = Union[httpx.AsyncClient, "httpx2.AsyncClient"]
"""An ``httpx.AsyncClient`` or an ``httpx2.AsyncClient``."""
HTTPClient: TypeAlias = Union[SyncHTTPClient, AsyncHTTPClient]
SyncTransport: TypeAlias = Union[httpx.BaseTransport, "httpx2.BaseTransport"]
"""An ``httpx.BaseTransport`` or an ``httpx2.BaseTransport``."""
AsyncTransport: TypeAlias = Union[httpx.AsyncBaseTransport, "httpx2.AsyncBaseTransport"]
"""An ``httpx.AsyncBaseTransport`` or an ``httpx2.AsyncBaseTransport``."""

__all__ = [
    "DEFAULT_STACK",
    "STACK_ENV",
    "STACK_NAMES",
    "Stack",
    "StackErrors",
    "failure_kind",
    "get",
    "loaded",
    "loaded_errors",
    "own_stack",
    "read_failures",
    "stack_of",
]

DEFAULT_STACK: Final = "httpx"
"""The stack of the clients and pools aigateway makes when given none (the one place to
switch it; the mock's ``transport()`` follows it)."""
STACK_ENV: Final = "AIGATEWAY_HTTP_STACK"
"""``AIGATEWAY_HTTP_STACK=httpx2`` makes a process's own pools httpx2's (read per client)."""
STACK_NAMES: Final = ("httpx", "httpx2")

T = TypeVar("T")
Failure = Literal["timeout", "connection", "decoding"]
ExceptionTypes = tuple[type[Exception], ...]


@dataclass(frozen=True)
class StackErrors:
    """A stack's exceptions by kind (tuples, for ``except`` and ``isinstance``); `loaded_errors`
    joins those of every loaded stack."""

    timeout: ExceptionTypes
    """No reply, or no bytes, in time (``TimeoutException``)."""
    transport: ExceptionTypes
    """Anything that went wrong on the connection, timeouts included (``TransportError``)."""
    decoding: ExceptionTypes
    """A body whose ``Content-Encoding`` lies (``DecodingError``)."""
    read: ExceptionTypes
    """What reading a reply's body may raise (``HTTPError``, ``StreamError``)."""

    def __add__(self, other: StackErrors) -> StackErrors:
        return StackErrors(
            self.timeout + other.timeout,
            self.transport + other.transport,
            self.decoding + other.decoding,
            self.read + other.read,
        )


@dataclass(frozen=True, eq=False)
class Stack:
    """What aigateway uses of one HTTP library (`get` and `stack_of` hand them out: one per
    library, compared by identity)."""

    name: str
    """``"httpx"`` or ``"httpx2"``: the library's own name (httpx2's when it stands in for
    httpx through ``httpx2.alias_httpx()``)."""
    module: ModuleType
    """The library's top module: any public name of it, ``stack.module.ReadTimeout``."""
    errors: StackErrors
    Request: type[httpx.Request] | type[httpx2.Request]
    Response: type[httpx.Response] | type[httpx2.Response]
    Headers: type[httpx.Headers] | type[httpx2.Headers]
    URL: type[httpx.URL] | type[httpx2.URL]
    Timeout: type[httpx.Timeout] | type[httpx2.Timeout]
    Client: type[httpx.Client] | type[httpx2.Client]
    AsyncClient: type[httpx.AsyncClient] | type[httpx2.AsyncClient]
    BaseTransport: type[httpx.BaseTransport] | type[httpx2.BaseTransport]
    AsyncBaseTransport: type[httpx.AsyncBaseTransport] | type[httpx2.AsyncBaseTransport]
    SyncByteStream: type[httpx.SyncByteStream] | type[httpx2.SyncByteStream]
    AsyncByteStream: type[httpx.AsyncByteStream] | type[httpx2.AsyncByteStream]
    core_name: str
    """Its connection pools' library: ``"httpcore"`` or ``"httpcore2"``."""
    aiohttp_module: str
    """The module of httpx-aiohttp's transport for this stack."""
    _subclasses: dict[tuple[type, str | type], type] = field(default_factory=dict, repr=False)

    @classmethod
    def of_module(cls, module: ModuleType) -> Stack:
        """The stack of an imported library module (``httpx`` or ``httpx2``)."""
        name = module.__name__
        m: Any = module
        errors = StackErrors(
            timeout=(m.TimeoutException,),
            transport=(m.TransportError,),
            decoding=(m.DecodingError,),
            read=(m.HTTPError, m.StreamError),
        )
        return cls(
            name=name,
            module=module,
            errors=errors,
            Request=m.Request,
            Response=m.Response,
            Headers=m.Headers,
            URL=m.URL,
            Timeout=m.Timeout,
            Client=m.Client,
            AsyncClient=m.AsyncClient,
            BaseTransport=m.BaseTransport,
            AsyncBaseTransport=m.AsyncBaseTransport,
            SyncByteStream=m.SyncByteStream,
            AsyncByteStream=m.AsyncByteStream,
            core_name="httpcore" if name == "httpx" else "httpcore2",
            aiohttp_module="httpx_aiohttp.transport" if name == "httpx" else "httpx_aiohttp.httpx2",
        )

    def core(self) -> ModuleType:
        """httpcore or httpcore2, the library of this stack's connection pools."""
        return self._import(self.core_name, "the sync client's own transport")

    def aiohttp_transport(self) -> Any:
        """httpx-aiohttp's ``AiohttpTransport`` class for this stack (the async pool on
        asyncio); an ImportError naming the extra when that version of it is missing."""
        return self._import(self.aiohttp_module, "the async client's pool").AiohttpTransport

    def subclass(self, mixin: type[T], base: str | type) -> type[T]:
        """``mixin`` made a subclass of this stack's class named ``base`` (``"SyncByteStream"``,
        ``"BaseTransport"``, ...) or of the class ``base`` (one built on this stack), made once
        per stack: what is written once for both stacks (a body, a transport) but must be of
        the stack whose client uses it. The class's ``stack`` attribute is this stack."""
        key = (mixin, base)
        made = self._subclasses.get(key)
        if made is None:
            bases = (mixin, getattr(self.module, base) if isinstance(base, str) else base)
            made = self._subclasses.setdefault(
                key, type(mixin.__name__, bases, {"__module__": mixin.__module__, "stack": self})
            )
        return made

    def _import(self, module: str, feature: str) -> ModuleType:
        if self.name == "httpx":  # httpx's modules are aigateway's own dependencies
            return importlib.import_module(module)
        return require(module, "httpx2", f"{feature} on httpx2")

    def __repr__(self) -> str:
        return f"<HTTP stack {self.name}>"


_stacks: dict[str, Stack] = {}
"""The stacks built so far, by the library's own name."""
_by_type: dict[type, Stack | None] = {}
"""`stack_of`'s answers, by type."""
_owners: dict[type, Stack] = {}
"""Every public class of each stack built so far (its ``__all__``), and the stack."""


def _stack_of_module(module: ModuleType) -> Stack:
    stack = _stacks.get(module.__name__)
    if stack is None:
        stack = Stack.of_module(module)
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name, None)
            if isinstance(value, type):
                _owners.setdefault(value, stack)
        stack = _stacks.setdefault(module.__name__, stack)
    return stack


def get(name: str) -> Stack:
    """The stack named ``name`` (one of `STACK_NAMES`), importing it; httpx2 missing is an
    ImportError saying how to install the ``httpx2`` extra. ValueError for another name."""
    if name == "httpx":
        return _stack_of_module(httpx)  # httpx2 itself when alias_httpx() ran first
    if name == "httpx2":
        stack = _stacks.get("httpx2")
        if stack is None:
            stack = _stack_of_module(require("httpx2", "httpx2", "an httpx2 client"))
        return stack
    raise ValueError(f"unknown HTTP stack {name!r}: use one of {', '.join(STACK_NAMES)}")


def own_stack() -> Stack:
    """The stack of the pools a client makes itself: `STACK_ENV` when set, else
    `DEFAULT_STACK`. Read when a client is made; ValueError naming the allowed values."""
    name = os.environ.get(STACK_ENV, "").strip().lower() or DEFAULT_STACK
    if name not in STACK_NAMES:
        raise ValueError(
            f"{STACK_ENV}={name!r} is not an HTTP stack aigateway speaks: use one of "
            f"{', '.join(STACK_NAMES)}"
        )
    return get(name)


def stack_of(obj: object) -> Stack | None:
    """The stack ``obj`` (or the class ``obj``) belongs to: the library that defines it or one
    of its bases (a user's ``httpx.BaseTransport`` subclass is httpx's), None when neither."""
    cls = obj if isinstance(obj, type) else type(obj)
    try:
        return _by_type[cls]
    except KeyError:
        pass
    _current()  # the stack of every library loaded is built, with its classes
    # By the classes themselves, not their __module__, which others rewrite (the openai
    # package sets it to "openai" on the httpx2 classes it exports).
    found = next((_owners[base] for base in cls.__mro__ if base in _owners), None)
    _by_type[cls] = found
    return found


_loaded: tuple[object, tuple[Stack, ...], StackErrors, ExceptionTypes] | None = None
"""What `loaded` found last: the httpx2 module it saw (None: not imported), the stacks, their
joined errors and `read_failures`."""


def loaded() -> tuple[Stack, ...]:
    """The stacks imported so far, by anyone (an exception of httpx2 can only come from an
    httpx2 object, so httpx2 is loaded before one can arrive); httpx first."""
    return _current()[1]


def loaded_errors() -> StackErrors:
    """The exceptions of every loaded stack, joined by kind."""
    return _current()[2]


def read_failures() -> ExceptionTypes:
    """What reading a reply's body may raise but our own errors, whatever its stack: a
    stack's ``HTTPError`` or ``StreamError`` (a cut, a stall, a bad encoding), or `OSError`."""
    return _current()[3]


def _current() -> tuple[object, tuple[Stack, ...], StackErrors, ExceptionTypes]:
    global _loaded
    second = sys.modules.get("httpx2")
    if second is not None and not hasattr(second, "AsyncClient"):
        second = None  # being imported in another thread: nothing of it can have been raised
    if _loaded is None or _loaded[0] is not second:
        stacks = [get("httpx")]
        if second is not None and second is not httpx:
            stacks.append(_stack_of_module(second))
        errors = stacks[0].errors
        for stack in stacks[1:]:
            errors = errors + stack.errors
        _loaded = (second, tuple(stacks), errors, (*errors.read, OSError))
    return _loaded


def failure_kind(exc: BaseException) -> Failure | None:
    """What a failure of sending a request or reading its reply is, whatever its stack:
    ``"timeout"`` (a stack's ``TimeoutException``, or `TimeoutError`), ``"connection"`` (any
    other ``TransportError``, or `OSError`), ``"decoding"`` (a ``DecodingError``); None for
    anything else."""
    errors = loaded_errors()
    if isinstance(exc, (errors.timeout, TimeoutError)):
        return "timeout"
    if isinstance(exc, (errors.transport, OSError)):
        return "connection"
    if isinstance(exc, errors.decoding):
        return "decoding"
    return None
