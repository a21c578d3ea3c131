"""`RedisState`: where clients on many processes keep what they share, a Redis server; its
connections (sync, and one per event loop), its scripts, and what happens when Redis cannot
be reached. Users import it from `aigateway.shared`; a client's view of it is
`aigateway.integrations.redis.binding.SharedBinding`.
"""

from __future__ import annotations

import hashlib
import threading
import warnings
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar
from urllib.parse import urlsplit, urlunsplit

from aigateway._optional import require
from aigateway.errors import ConfigurationError, SharedStateError, SharedStateWarning
from aigateway.integrations.redis import scripts

if TYPE_CHECKING:
    from aigateway.integrations.redis.binding import SharedCall

__all__ = ["RedisState"]

T = TypeVar("T")
_SCRIPTS = {name: getattr(scripts, name) for name in scripts.__all__}


class RedisState:
    """Where clients on many processes keep what they share: a Redis server.

    Picklable (it holds the URL and options and connects lazily in each process), so it can
    be handed to worker processes. Keys are namespaced by a SHA-256 fingerprint of the API
    key (never the key itself), so two keys never see each other's state, and every key
    written expires ``ttl`` seconds after its last use.

    Args:
        url: A Redis URL (``redis://host:port/db``, ``rediss://`` for TLS).
        on_unavailable: When Redis cannot be reached: ``"raise"`` (fail closed) raises
            `SharedStateError` before sending; ``"local"`` (fail open) warns once
            (`SharedStateWarning`) and uses this process's own limits.
        timeout: Seconds to connect to Redis and to wait for each answer.
        namespace: The prefix of every key written.
        ttl: Seconds each key lives after its last use.
    """

    def __init__(
        self,
        url: str,
        *,
        on_unavailable: Literal["raise", "local"] = "raise",
        timeout: float = 0.5,
        namespace: str = "aigateway",
        ttl: float = 86_400.0,
    ) -> None:
        if not isinstance(url, str) or urlsplit(url).scheme not in ("redis", "rediss", "unix"):
            raise ConfigurationError(
                f"RedisState url must be a redis://, rediss:// or unix:// URL, got {_safe(url)!r}"
            )
        if on_unavailable not in ("raise", "local"):
            raise ConfigurationError(
                f"on_unavailable must be 'raise' or 'local', got {on_unavailable!r}"
            )
        for name, value in (("timeout", timeout), ("ttl", ttl)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ConfigurationError(f"{name} must be a number of seconds > 0, got {value!r}")
        if not isinstance(namespace, str) or not namespace:
            raise ConfigurationError(f"namespace must be a non-empty string, got {namespace!r}")
        self.url = url
        self.on_unavailable = on_unavailable
        self.timeout = float(timeout)
        self.namespace = namespace
        self.ttl = float(ttl)
        self._reset()

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._sync: Any = None
        self._async: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        self._warned = False

    def __getstate__(self) -> dict[str, Any]:
        return {
            name: getattr(self, name)
            for name in ("url", "on_unavailable", "timeout", "namespace", "ttl")
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reset()

    def __repr__(self) -> str:
        return (
            f"RedisState({_safe(self.url)!r}, on_unavailable={self.on_unavailable!r}, "
            f"timeout={self.timeout!r}, namespace={self.namespace!r})"
        )

    def prefix(self, api_key: str) -> str:
        """The prefix of the keys of ``api_key``: the namespace and a fingerprint of the key."""
        digest = hashlib.sha256(api_key.encode()).hexdigest()[:32]
        return f"{self.namespace}:{digest}"

    def usage(self, api_key: str) -> dict[str, Any]:
        """What every process on ``api_key`` spent, as ``{"total": {...}, "models": {...}}``
        (requests, prompt and completion tokens, credits, failures, uncounted)."""
        from aigateway.integrations.redis.binding import SharedCall, usage_of

        raw = SharedCall(self, "HGETALL", [f"{self.prefix(api_key)}:usage"], []).perform()
        return usage_of(raw or {})

    # Running commands: a driver performing the flow's `SharedCall` ends here.

    def _client(self) -> Any:
        with self._lock:
            if self._sync is None:
                redis = require("redis", "redis", "shared state (RedisState)")
                self._sync = _scripted(redis.Redis.from_url(self.url, **self._options(redis)))
            return self._sync

    def _async_client(self) -> Any:
        import asyncio

        loop = asyncio.get_running_loop()
        client = self._async.get(loop)
        if client is None:
            require("redis", "redis", "shared state (RedisState)")
            import redis
            import redis.asyncio

            client = _scripted(redis.asyncio.Redis.from_url(self.url, **self._options(redis)))
            self._async[loop] = client
        return client

    async def _aclose(self) -> None:
        """Close this event loop's connections (an `AsyncClient` closing); the next call on
        this loop connects again."""
        import sniffio

        if sniffio.current_async_library() != "asyncio":
            return
        import asyncio

        client = self._async.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()

    def _options(self, redis: Any) -> dict[str, Any]:
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        return {
            "socket_timeout": self.timeout,
            "socket_connect_timeout": self.timeout,
            "decode_responses": True,
            "retry": Retry(NoBackoff(), 0),  # one try: the caller must never hang on Redis
        }

    def _run(self, call: SharedCall) -> Any:
        """``call``'s script on the blocking client, its answer parsed (see `_failed`)."""
        try:
            raw = _call(self._client(), call.script, call.keys, call.args)
        except Exception as exc:
            return self._failed(exc, call)
        return call.parse(raw)

    async def _arun(self, call: SharedCall) -> Any:
        """`_run` on this event loop's client (in a worker thread off asyncio)."""
        import sniffio

        if sniffio.current_async_library() != "asyncio":  # redis.asyncio runs on asyncio only
            import anyio.to_thread

            return await anyio.to_thread.run_sync(self._run, call)
        try:
            raw = await _call(self._async_client(), call.script, call.keys, call.args)
        except Exception as exc:
            return self._failed(exc, call)
        return call.parse(raw)

    def _failed(self, exc: Exception, call: SharedCall) -> Any:
        """What ``call`` answers when its command raised ``exc``. Redis unreachable: fail closed
        (raise, before anything is sent) or open (warn once, answer ``call.local()``); any other
        error (a missing redis package, a bug) is raised as it is."""
        if not _is_redis_error(exc):
            raise exc
        what = f"the shared state at {_safe(self.url)} is unavailable ({type(exc).__name__}: {exc})"
        if self.on_unavailable == "raise" and call.before_send:
            raise SharedStateError(f"{what}; the call was not sent") from exc
        if not self._warned:
            self._warned = True
            fallback = (
                "this process uses its own limits"
                if self.on_unavailable == "local"
                else "a reply's bookkeeping was not shared"
            )
            warnings.warn(SharedStateWarning(f"{what}: {fallback}"), stacklevel=2)
        return call.local()


def _scripted(client: Any) -> Any:
    """The client with its scripts registered (sent by hash, loaded on first use)."""
    client._aigateway_scripts = {
        name: client.register_script(source) for name, source in _SCRIPTS.items()
    }
    return client


def _call(client: Any, script: str, keys: Sequence[str], args: Sequence[object]) -> Any:
    """A script run (or awaitable) by name; any other name is a plain command (``HGETALL``)."""
    scripted = client._aigateway_scripts.get(script)
    if scripted is None:
        return client.execute_command(script, *keys, *args)
    return scripted(keys=list(keys), args=list(args))


def _is_redis_error(exc: BaseException) -> bool:
    try:
        import redis
    except ImportError:  # pragma: no cover
        return False
    return isinstance(exc, (redis.RedisError, OSError))


def _safe(url: object) -> str:
    """A URL without its credentials."""
    text = str(url)
    try:
        parts = urlsplit(text)
    except ValueError:
        return "<invalid URL>"
    if parts.username is None and parts.password is None:
        return text
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
