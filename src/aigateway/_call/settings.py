"""Client settings: arguments and environment variables turned into one checked, immutable object.

The API key lives in `Secret`, whose repr and str never show it, so a settings object (or a
client holding one) can be printed, logged or shown in a notebook safely.
"""

from __future__ import annotations

import ipaddress
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final, NoReturn

from aigateway._call.timeouts import (
    TIME_LIMIT_RULE,
    StreamTimeouts,
    deprecated_stream_deadline,
    is_time_limit,
)
from aigateway._stacks import DEFAULT_STACK, STACK_ENV, Stack, get, own_stack, stack_of
from aigateway.errors import ConfigurationError, InsecureBaseURLWarning

if TYPE_CHECKING:
    from typing import TypeAlias

    from aigateway._stacks import URL, Timeout
    from aigateway.types.chat_params import TimeoutLike

    TimeoutTypes: TypeAlias = float | Timeout | None
    """A request's timeout: seconds for all four limits, an ``httpx.Timeout`` or an
    ``httpx2.Timeout`` (connect, read, write, pool), or None for none."""

API_KEY_ENV: Final = "AIGATEWAY_API_KEY"
BASE_URL_ENV: Final = "AIGATEWAY_BASE_URL"

DEFAULT_TIMEOUT: Final = get(DEFAULT_STACK).Timeout(600.0, connect=5.0)
"""Ten minutes for a reply (long generations are slow), five seconds to connect (a client on
another HTTP stack gets the same limits as its own ``Timeout``)."""
DEFAULT_MAX_RETRIES: Final = 2
DEFAULT_DEADLINE: Final = 600.0
"""Ten minutes for a whole plain call, its retries and waits included (streams have none)."""
DEFAULT_MAX_RESPONSE_BYTES: Final = 64 * 1024 * 1024
"""Default ``max_response_bytes``: a reply read into memory holds at most 64 MiB, decompressed."""


class _Default:
    """The default of a client argument whose default depends on the call: ``deadline`` (600 s
    for a plain call, none for a stream) and the deprecated ``stream_deadline`` (none)."""

    def __repr__(self) -> str:
        return "default"


DEFAULT: Any = _Default()


def _refuse_pickling(what: str) -> NoReturn:
    raise TypeError(
        f"{what} cannot be pickled: it would write the API key in clear; pass the key to "
        "each process another way (for example the AIGATEWAY_API_KEY environment variable)"
    )


class Secret:
    """A string that never shows itself in repr, str or format, and refuses to be pickled."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The secret itself: for the Authorization header and nothing else."""
        return self._value

    def __repr__(self) -> str:
        return "Secret('<redacted>')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __reduce__(self) -> NoReturn:
        _refuse_pickling("aigateway's Secret (the API key)")


class SecretText(str):
    """A header value that holds the key (``Bearer <key>``, the key as a WebSocket
    subprotocol): a `str` in every use but ``repr``, which reads ``'<redacted>'``. The dicts,
    lists and header objects the request passes through (ours, aiohttp's, websockets') show
    their values by repr, so a traceback rendered with locals never prints the key."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "'<redacted>'"

    def __reduce__(self) -> NoReturn:
        _refuse_pickling("a header value holding the API key")


def checked_api_key(value: object) -> Secret:
    """The key (a string or a `Secret`) as a `Secret`, or a ConfigurationError saying what a
    key may hold: it goes in an HTTP header, so visible ASCII characters only (no spaces, line
    breaks or accents). The message never quotes the value."""
    key = value.reveal() if isinstance(value, Secret) else value
    key = key.strip() if isinstance(key, str) else key
    if not isinstance(key, str) or not key:
        got = "an empty string" if isinstance(key, str) else type(value).__name__  # never the value
        raise ConfigurationError(
            f"api_key must be a non-empty string (a key from the gateway console), got {got}"
        )
    if not all("!" <= char <= "~" for char in key):
        raise ConfigurationError(
            "api_key may hold visible ASCII characters only (it travels in an HTTP header); "
            "this one has a space, a control character or a non-ASCII letter"
        )
    return Secret(key)


def normalize_base_url(raw: str, stack: Stack | None = None) -> URL:
    """Check that ``raw`` is an http(s) URL ending in ``/v1`` and return it with a trailing slash,
    as a URL of ``stack`` (the client's HTTP stack; the default one when not given).

    The trailing slash lets relative paths (``chat/completions``) join under ``/v1``.
    """
    text = raw.strip()
    stack = stack or get(DEFAULT_STACK)
    try:
        url = stack.URL(text)
    except (stack.module.InvalidURL, TypeError) as exc:
        raise ConfigurationError(f"base_url {raw!r} is not a valid URL: {exc}") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigurationError(
            f"base_url {raw!r} must be an absolute http:// or https:// URL ending in /v1, "
            "for example https://gateway.example.com/v1"
        )
    path = url.path.rstrip("/")
    if not path.endswith("/v1"):
        raise ConfigurationError(
            f"base_url {raw!r} must end in the version segment /v1 "
            f"(for example {url.copy_with(path=path + '/v1', query=None)!s})"
        )
    return url.copy_with(path=path + "/")


def site_root(base_url: URL) -> URL:
    """The base URL without its ``/v1/`` segment: where discovery files live."""
    return base_url.copy_with(path=base_url.path.rstrip("/")[: -len("/v1")] + "/")


_warned_hosts: set[str] = set()
_LOCAL_SUFFIXES = (".localhost", ".test", ".invalid", ".example", ".local")


def warn_if_plain_http(base_url: URL) -> None:
    """Warn once per host when the key would go over plain HTTP to a host that is not this
    machine (loopback, ``localhost``) nor a name reserved for tests and local networks."""
    host = base_url.host.lower()
    if base_url.scheme != "http" or host in _warned_hosts or _is_local(host):
        return
    _warned_hosts.add(host)
    warnings.warn(
        InsecureBaseURLWarning(
            f"base_url {str(base_url)!r} is plain http:// to a host on the network: the API key "
            "would travel unencrypted; use https://"
        ),
        stacklevel=4,
    )


def _is_local(host: str) -> bool:
    if host == "localhost" or host.endswith(_LOCAL_SUFFIXES):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_stream_timeouts(timeouts: StreamTimeouts) -> StreamTimeouts:
    """``timeouts`` when each limit is None or a number of seconds > 0; else ConfigurationError."""
    for name, value in (
        ("stream_first_event_timeout", timeouts.first_event),
        ("stream_idle_timeout", timeouts.idle),
        ("stream_deadline", timeouts.deadline),
    ):
        check_time_limit(name, value)
    return timeouts


def check_time_limit(name: str, value: object) -> float | None:
    """``value`` when it can be a time limit (`is_time_limit`), else ConfigurationError."""
    if value is None or (isinstance(value, int | float) and is_time_limit(value)):
        return value
    raise ConfigurationError(f"{name} {TIME_LIMIT_RULE}, got {value!r}")


def chosen_deadlines(
    deadline: object,
    stream_deadline: object,
    *,
    unset: object,
    plain: float | None,
    streams: float | None,
) -> tuple[float | None, float | None]:
    """The deadlines of plain calls and of streams, ``plain`` and ``streams`` unless changed:
    ``deadline`` sets both, the deprecated ``stream_deadline`` streams only (and warns);
    ``unset`` is what an argument not given holds. ConfigurationError for a value that
    cannot be a deadline, or for both arguments at once."""
    if stream_deadline is not unset:
        deprecated_stream_deadline()
        if deadline is not unset:
            raise ConfigurationError(
                "pass deadline= only: stream_deadline is its deprecated name (for streams only)"
            )
        return plain, check_time_limit("stream_deadline", stream_deadline)
    if deadline is unset:
        return plain, streams
    checked = check_time_limit("deadline", deadline)
    return checked, checked


def with_headers(headers: dict[str, str], over: Mapping[str, str]) -> dict[str, str]:
    """``headers`` with ``over`` on top, a name replaced whatever its case (``user-agent``
    replaces ``User-Agent``: a header is never sent twice)."""
    names = {name.lower() for name in over}
    merged = {name: value for name, value in headers.items() if name.lower() not in names}
    merged.update(over)
    return merged


def coerce_timeout(timeout: TimeoutTypes | TimeoutLike, stack: Stack | None = None) -> Timeout:
    """``timeout`` as a ``Timeout`` of ``stack`` (the default one when not given): a number
    means the same limit for connect, read, write and pool, None no limit; a ``Timeout`` of
    the other HTTP stack is rebuilt (one stack's objects break the other's clients)."""
    stack = stack or get(DEFAULT_STACK)
    if isinstance(timeout, stack.Timeout):
        return timeout
    if stack_of(timeout) is not None:  # the other stack's Timeout
        return stack.Timeout(**timeout.as_dict())  # type: ignore[union-attr]
    return stack.Timeout(timeout)  # type: ignore[arg-type]


def chosen_stack() -> Stack:
    """The HTTP stack of the pools a client makes itself (`aigateway._stacks.own_stack`:
    ``AIGATEWAY_HTTP_STACK``, else httpx), read when the client is made."""
    try:
        return own_stack()
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None
    except ImportError as exc:
        raise ConfigurationError(f"{STACK_ENV} asks for httpx2: {exc}") from exc


@dataclass(frozen=True)
class ClientConfig:
    """Everything a client needs to build requests; shared by `Client` and `AsyncClient`."""

    api_key: Secret
    base_url: URL
    timeout: Timeout = field(default_factory=lambda: DEFAULT_TIMEOUT)
    max_retries: int = DEFAULT_MAX_RETRIES
    default_headers: Mapping[str, str] = field(default_factory=dict)
    auto_idempotency_keys: bool = False
    """Give every POST without an idempotency key a generated one (reused across its retries)."""
    wait_for_rate_limit: bool = False
    """Wait for the rate-limit window to reset instead of sending a request that would get a 429."""
    max_concurrency: int | None = None
    """At most this many requests in flight at once (a stream is in flight until closed)."""
    stream_timeouts: StreamTimeouts = field(default_factory=StreamTimeouts)
    """The first-event timeout, idle timeout and deadline of streams (calls may override)."""
    deadline: float | None = DEFAULT_DEADLINE
    """Seconds a whole plain call may take, retries and waits included (calls may override)."""
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    """The most bytes a reply read into memory may hold, counted after decompression."""

    @classmethod
    def resolve(
        cls,
        *,
        api_key: str | None,
        base_url: str | URL | None,
        timeout: TimeoutTypes,
        max_retries: int,
        default_headers: Mapping[str, str] | None,
        auto_idempotency_keys: bool = False,
        wait_for_rate_limit: bool = False,
        max_concurrency: int | None = None,
        stream_timeouts: StreamTimeouts | None = None,
        deadline: float | None = DEFAULT_DEADLINE,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        stack: Stack | None = None,
    ) -> ClientConfig:
        """Merge arguments with the environment and check them; raise ConfigurationError.
        The base URL and timeout are made objects of ``stack``, the client's HTTP stack (the
        default one when not given)."""
        key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)
        if not key or (isinstance(key, str) and not key.strip()):
            raise ConfigurationError(
                f"no API key: pass api_key=... or set the {API_KEY_ENV} environment variable "
                "(keys come from the gateway console)"
            )
        url = base_url if base_url is not None else os.environ.get(BASE_URL_ENV)
        if not url:
            raise ConfigurationError(
                f"no base URL: pass base_url=... or set the {BASE_URL_ENV} environment variable "
                "(it ends in /v1, for example https://gateway.example.com/v1)"
            )
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ConfigurationError(f"max_retries must be an integer >= 0, got {max_retries!r}")
        if max_concurrency is not None and (
            isinstance(max_concurrency, bool)
            or not isinstance(max_concurrency, int)
            or max_concurrency < 1
        ):
            raise ConfigurationError(
                f"max_concurrency must be an integer >= 1 or None, got {max_concurrency!r}"
            )
        if (
            isinstance(max_response_bytes, bool)
            or not isinstance(max_response_bytes, int)
            or max_response_bytes < 1
        ):
            raise ConfigurationError(
                f"max_response_bytes must be a number of bytes >= 1, got {max_response_bytes!r}"
            )
        base = normalize_base_url(str(url), stack)
        warn_if_plain_http(base)
        return cls(
            api_key=checked_api_key(key),
            base_url=base,
            timeout=coerce_timeout(timeout, stack),
            max_retries=max_retries,
            default_headers=dict(default_headers or {}),
            auto_idempotency_keys=bool(auto_idempotency_keys),
            wait_for_rate_limit=bool(wait_for_rate_limit),
            max_concurrency=max_concurrency,
            deadline=check_time_limit("deadline", deadline),  # first: it sets streams' too
            stream_timeouts=check_stream_timeouts(stream_timeouts or StreamTimeouts()),
            max_response_bytes=max_response_bytes,
        )

    def with_changes(self, **changes: object) -> ClientConfig:
        """A copy with some settings replaced (used by ``with_options``)."""
        return replace(self, **changes)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return (
            f"ClientConfig(base_url={str(self.base_url)!r}, api_key=<redacted>, "
            f"timeout={self.timeout!r}, max_retries={self.max_retries})"
        )
