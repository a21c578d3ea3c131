"""aigateway's pytest plugin: fixtures, a marker and a network guard for the mock gateway.

pytest loads this module in every run of every project installed next to aigateway (the
``pytest11`` entry point ``aigateway``), so it lives outside the ``aigateway`` package, whose
import costs httpx and pydantic, and imports only pytest when it loads; the mock loads when a
test first asks for it, and with it the marker's support (`aigateway.testing._marker`: the
options checked, the gateway built). Turn it off with ``-p no:aigateway``.

Fixtures, each fresh per test:

* ``aigateway_mock``: a `MockGateway`, configured by the test's ``aigateway`` marker;
* ``aigateway_client``: a `Client` wired to it in-process, closed after the test;
* ``aigateway_async_client``: an `AsyncClient` the same way (anyio's plugin runs it, on
  asyncio or trio);
* ``aigateway_openai`` and ``aigateway_async_openai``: the official SDK's ``openai.OpenAI``
  and ``openai.AsyncOpenAI`` wired to it in-process, closed after the test (they need the
  ``openai`` package; its retries sleep for real, so give injected failures a tiny
  ``retry_after``);
* ``aigateway_served``: the base URL of ``aigateway_mock`` served over real HTTP.

The marker::

    @pytest.mark.aigateway(seed=3, credits=5, rate_limits="paid", strict_fields=True,
                           faults=[("fail", 503, {"times": 2})], allow_hosts=["localhost"])

takes every keyword of `MockGateway` (``strict_fields=True``: a chat request's unknown body
field is a 400 naming it, so a misspelt parameter fails the test) plus ``faults``
(``(method, *args, {kwargs})`` tuples calling ``gateway.faults.<method>``, or a callable given
the gateway) and ``allow_hosts``.

While a test uses these fixtures or carries the marker, a network guard fails it on any
lookup of or connection to a host other than loopback addresses and ``allow_hosts``, before
any DNS query or packet; everything is restored when the test ends.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import pytest

if TYPE_CHECKING:
    import openai

    from aigateway import AsyncClient, Client
    from aigateway.testing import MockGateway
    from aigateway.testing._marker import MarkerOptions

_T = TypeVar("_T")

MARKER = "aigateway"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(**options): configure the mock gateway of aigateway's fixtures "
        "(MockGateway's keywords, faults=[...], allow_hosts=[...])",
    )


# -- the marker ------------------------------------------------------------------------------

_OPTIONS_KEY = pytest.StashKey["MarkerOptions"]()


def _marker_error(problem: str) -> NoReturn:
    pytest.fail(f"@pytest.mark.{MARKER}: {problem}", pytrace=False)


def _checked(read: Callable[[], _T]) -> _T:
    """``read()``, or the test failed with the problem of its marker (`MarkerError`)."""
    from aigateway.testing._marker import MarkerError

    try:
        return read()
    except MarkerError as exc:
        problem = str(exc)
    _marker_error(problem)  # outside the except block: no chained traceback to read


def _options_of(item: pytest.Item) -> MarkerOptions:
    """The options of the test's closest ``aigateway`` marker (the defaults without one)."""
    if _OPTIONS_KEY not in item.stash:
        from aigateway.testing._marker import MarkerOptions

        marker = item.get_closest_marker(MARKER)
        item.stash[_OPTIONS_KEY] = _checked(
            lambda: MarkerOptions.read(marker.args, marker.kwargs) if marker else MarkerOptions()
        )
    return item.stash[_OPTIONS_KEY]


# -- fixtures --------------------------------------------------------------------------------


@pytest.fixture
def aigateway_mock(request: pytest.FixtureRequest) -> MockGateway:
    """A fresh mock gateway, configured by the test's ``@pytest.mark.aigateway(...)``."""
    from aigateway.testing._marker import MarkerOptions

    node = request.node
    options = _options_of(node) if isinstance(node, pytest.Item) else MarkerOptions()
    return _checked(options.build)


@pytest.fixture
def aigateway_client(aigateway_mock: MockGateway) -> Iterator[Client]:
    """A `Client` wired to ``aigateway_mock`` in-process; retry waits move the mock's clock."""
    with aigateway_mock.client() as client:
        yield client


@pytest.fixture
async def aigateway_async_client(
    aigateway_mock: MockGateway, anyio_backend: object
) -> AsyncIterator[AsyncClient]:
    """An `AsyncClient` wired to ``aigateway_mock`` in-process, on anyio's backend."""
    async with aigateway_mock.async_client() as client:
        yield client


@pytest.fixture
def aigateway_openai(aigateway_mock: MockGateway) -> Iterator[openai.OpenAI]:
    """An ``openai.OpenAI`` (the official SDK) wired to ``aigateway_mock`` in-process."""
    with aigateway_mock.openai_client() as client:
        yield client


@pytest.fixture
async def aigateway_async_openai(
    aigateway_mock: MockGateway, anyio_backend: object
) -> AsyncIterator[openai.AsyncOpenAI]:
    """An ``openai.AsyncOpenAI`` wired to ``aigateway_mock`` in-process, on anyio's backend."""
    async with aigateway_mock.async_openai_client() as client:
        yield client


@pytest.fixture
def aigateway_served(aigateway_mock: MockGateway) -> Iterator[str]:
    """The base URL (``http://127.0.0.1:<port>/v1``) of ``aigateway_mock`` over real HTTP."""
    with aigateway_mock.serve() as url:
        yield url


# -- the network guard -----------------------------------------------------------------------


class _NetworkGuard:
    """Refuses lookups of and connections to hosts other than loopback and the allowed ones.

    It replaces ``socket.getaddrinfo`` (so a name fails before any DNS query) and the
    ``connect`` methods of ``socket.socket`` (for addresses given as IPs, asyncio's and trio's
    sockets included), and puts the originals back in ``uninstall``.
    """

    def __init__(self, allow_hosts: frozenset[str]) -> None:
        from aigateway.testing._serving.server import is_loopback

        self.is_loopback = is_loopback
        self.allowed = set(allow_hosts)
        self.blocked: list[str] = []
        self._saved: list[tuple[object, str, object]] = []

    def check(self, host: object, port: object) -> None:
        __tracebackhide__ = True
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name.lower() in self.allowed or self.is_loopback(name):
            return
        message = (
            f"aigateway's pytest plugin blocked a connection to {name!r} (port {port}): a test "
            "using the mock gateway may reach only the mock and loopback addresses. To allow "
            f"it, mark the test @pytest.mark.{MARKER}(allow_hosts=[{name!r}])."
        )
        self.blocked.append(message)
        pytest.fail(message)

    def install(self) -> None:
        import socket

        real_getaddrinfo = socket.getaddrinfo
        real_connect = socket.socket.connect
        real_connect_ex = socket.socket.connect_ex
        guard = self

        def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True
            if host is not None:
                guard.check(host, port)
            results = real_getaddrinfo(host, port, *args, **kwargs)
            if host is not None and not guard.is_loopback(str(host)):
                guard.allowed.update(str(result[4][0]).lower() for result in results)
            return results

        def connect(sock: socket.socket, address: Any) -> None:
            __tracebackhide__ = True
            if sock.family in (socket.AF_INET, socket.AF_INET6):
                guard.check(address[0], address[1])
            real_connect(sock, address)

        def connect_ex(sock: socket.socket, address: Any) -> int:
            __tracebackhide__ = True
            if sock.family in (socket.AF_INET, socket.AF_INET6):
                guard.check(address[0], address[1])
            return real_connect_ex(sock, address)

        self._replace(socket, "getaddrinfo", getaddrinfo)
        self._replace(socket.socket, "connect", connect)
        self._replace(socket.socket, "connect_ex", connect_ex)

    def uninstall(self) -> None:
        while self._saved:
            owner, name, original = self._saved.pop()
            if original is _INHERITED:
                delattr(owner, name)
            else:
                setattr(owner, name, original)

    def _replace(self, owner: Any, name: str, replacement: object) -> None:
        self._saved.append((owner, name, vars(owner).get(name, _INHERITED)))
        setattr(owner, name, replacement)


_INHERITED = object()
_GUARD_KEY = pytest.StashKey[_NetworkGuard]()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Check the marker and raise the guard before any fixture of a test that uses the mock."""
    if item.get_closest_marker(MARKER) is None and "aigateway_mock" not in getattr(
        item, "fixturenames", ()
    ):
        return
    guard = _NetworkGuard(_options_of(item).allow_hosts)
    item.stash[_GUARD_KEY] = guard
    guard.install()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Fail a test that reached for the network even when its code swallowed the failure."""
    guard = item.stash.get(_GUARD_KEY, None)
    try:
        result = yield
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:
        if guard is None or not guard.blocked or isinstance(exc, pytest.fail.Exception):
            raise
        raise pytest.fail.Exception(guard.blocked[0], pytrace=False) from exc
    if guard is not None and guard.blocked:
        pytest.fail(guard.blocked[0], pytrace=False)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    """Lower the guard once every fixture of the test is torn down."""
    try:
        return (yield)
    finally:
        guard = item.stash.get(_GUARD_KEY, None)
        if guard is not None:
            guard.uninstall()
            del item.stash[_GUARD_KEY]
