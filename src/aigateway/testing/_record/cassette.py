"""Record HTTP exchanges with a real gateway once, then replay them offline: `CassetteTransport`.

A transport, sync and async, usable by any client built on httpx (`CassetteTransport`: ours,
older ``openai`` SDKs) or httpx2 (`Httpx2CassetteTransport`, in ``cassette_httpx2.py``: the
official ``openai`` SDK 3.x through ``http_client=httpx2.Client(transport=...)``)::

    transport = CassetteTransport("tests/cassettes/chat.json")   # mode "once"
    client = Client(api_key=..., base_url=..., transport=transport)

Both are `Cassette`, which takes the HTTP stack from each request (`aigateway._stacks`), so a
reply is always of the library of the client that asked; the file is the same for both, so a
cassette recorded through one library replays through the other.

Modes, named as in vcrpy and pytest-recording:

* ``"once"`` (the default): replay if the file exists, else record it.
* ``"record"``: send every request through the inner transport (a real ``HTTPTransport`` /
  ``AsyncHTTPTransport`` of the client's library unless ``transport`` is given) and write
  the cassette afresh (vcrpy's ``all``, pytest-recording's ``rewrite``).
* ``"replay"``: answer from the file only, never the network; a request that was not recorded
  raises `CassetteError` (vcrpy's ``none``). ``AIGATEWAY_CASSETTE_MODE=replay`` forces it in
  CI when ``mode`` is left unset.

A request matches a recorded one on method, path, query (pairs, sorted) and body (JSON with its
keys sorted, else the bytes); ``match_on`` picks fewer. Identical requests replay in recorded
order, each once. Streamed (SSE) replies are stored as events and replayed event by event. The
file is JSON, rewritten atomically after every recorded exchange; the values of
``Authorization``, ``X-Api-Key``, cookies and the like are redacted, and every key seen in them
is scrubbed from URLs, headers and bodies. Bodies over ``max_body_size`` are refused.
"""

from __future__ import annotations

import base64
import json
import os
import re
import tempfile
import threading
import urllib.parse
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import httpx

from aigateway._stacks import DEFAULT_STACK, Stack, get, stack_of
from aigateway.errors import AIGatewayError
from aigateway.testing._core.pacing import AsyncBody

if TYPE_CHECKING:
    from aigateway._stacks import AsyncTransport, Request, Response, SyncTransport

__all__ = ["Cassette", "CassetteError", "CassetteTransport"]

BodyT = TypeVar("BodyT")

Mode = Literal["once", "record", "replay"]
MODES: tuple[Mode, ...] = ("once", "record", "replay")
MODE_VARIABLE = "AIGATEWAY_CASSETTE_MODE"
"""The environment variable read when ``mode`` is not given (CI sets it to ``replay``)."""
MATCHERS = ("method", "path", "query", "body")
DEFAULT_MAX_BODY_SIZE = 10 * 1024 * 1024
"""The largest request or reply body a cassette records (10 MiB)."""
SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie"}
)
"""Headers whose values are never written to a cassette."""
REDACTED = "<redacted>"
FORMAT_VERSION = 1
_FRAMING = frozenset({"content-length", "content-encoding", "transfer-encoding"})
"""Reply headers not recorded: bodies are stored decoded and re-framed on replay."""
_EVENT = re.compile(rb".*?(?:\r\n\r\n|\n\n|\r\r)|.+", re.DOTALL)
"""An SSE event and the blank line that ends it (or the unended rest of a stream)."""


class CassetteError(AIGatewayError):
    """A cassette cannot answer: a request that was not recorded, a missing or malformed file,
    or a body over the size limit. Our clients raise it as the ``__cause__`` of an `APIError`,
    as they do any failure of their transport."""


@dataclass(frozen=True)
class _Exchange:
    """One request and its reply, bodies decoded, headers as (lower-case name, value) pairs."""

    method: str
    url: str
    request_headers: list[tuple[str, str]]
    request_body: bytes
    status: int
    headers: list[tuple[str, str]]
    body: bytes

    @property
    def is_event_stream(self) -> bool:
        return any(
            name == "content-type" and value.startswith("text/event-stream")
            for name, value in self.headers
        )

    def replay(self, stack: Stack, request: Request) -> Response:
        """The recorded reply as a response of ``stack``; an event stream comes event by event.
        Secret headers (a ``Set-Cookie``) are left out: their values were not recorded."""
        headers = [(name, value) for name, value in self.headers if name not in SECRET_HEADERS]
        if self.is_event_stream:
            stream = _body_of(stack, Events)(_events(self.body))
            streamed: Response = stack.module.Response(
                self.status, headers=headers, stream=stream, request=request
            )
            return streamed
        whole: Response = stack.module.Response(
            self.status, headers=headers, content=self.body, request=request
        )
        return whole


def _body_of(stack: Stack, body_type: type[BodyT]) -> type[BodyT]:
    """``body_type`` made a body of ``stack``'s clients, sync and async (they check a body's
    base classes)."""
    return stack.subclass(stack.subclass(body_type, "SyncByteStream"), "AsyncByteStream")


class Cassette:
    """Record and replay for the clients of httpx and httpx2 alike: what `CassetteTransport`
    and `Httpx2CassetteTransport` are (the arguments are described there), with their
    library's base classes. Each request's stack makes the reply; a request of neither
    library is answered as httpx's."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        mode: Mode | None = None,
        transport: SyncTransport | AsyncTransport | None = None,
        match_on: Iterable[str] = MATCHERS,
        secrets: Iterable[str] = (),
        max_body_size: int = DEFAULT_MAX_BODY_SIZE,
    ) -> None:
        self.path = Path(path)
        self.match_on = tuple(match_on)
        unknown = sorted(set(self.match_on) - set(MATCHERS))
        if unknown:
            raise ValueError(f"match_on takes {', '.join(MATCHERS)}; got {', '.join(unknown)}")
        chosen = _chosen_mode(mode)
        if chosen == "once":
            chosen = "replay" if self.path.exists() else "record"
        self.mode: Literal["record", "replay"] = chosen
        self.max_body_size = max_body_size
        self._inner = transport
        self._inners: dict[tuple[Stack, bool], Any] = {}  # by stack, sync or async
        self._secrets = {secret for secret in secrets if secret}
        self._lock = threading.Lock()
        self._exchanges: list[_Exchange] = []
        self._keys: list[tuple[Any, ...]] = []
        self._played: list[bool] = []
        if self.mode == "replay":
            self._exchanges = _load(self.path)
            self._keys = [self._key(e.method, e.url, e.request_body) for e in self._exchanges]
            self._played = [False] * len(self._exchanges)

    # -- the transport ---------------------------------------------------------------------

    def handle_request(self, request: Request) -> Any:
        body = request.read()
        stack = stack_of(request) or get(DEFAULT_STACK)
        if self.mode == "replay":
            return self._replay(stack, request, body)
        self._check_size(request, body)
        inner = self._inner_transport(stack, asynchronous=False)
        return self._recording(stack, request, body, inner.handle_request(request))

    async def handle_async_request(self, request: Request) -> Any:
        body = await request.aread()
        stack = stack_of(request) or get(DEFAULT_STACK)
        if self.mode == "replay":
            return self._replay(stack, request, body)
        self._check_size(request, body)
        inner = self._inner_transport(stack, asynchronous=True)
        return self._recording(stack, request, body, await inner.handle_async_request(request))

    def close(self) -> None:
        for (_, asynchronous), inner in list(self._inners.items()):
            if not asynchronous:
                inner.close()

    async def aclose(self) -> None:
        for (_, asynchronous), inner in list(self._inners.items()):
            if asynchronous:
                await inner.aclose()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r}, mode={self.mode!r})"

    # -- recording -------------------------------------------------------------------------

    def _inner_transport(self, stack: Stack, *, asynchronous: bool) -> Any:
        """The inner transport for ``stack``'s sync (or async) clients, the default one (a
        real HTTP transport of that library) made on first use."""
        key = (stack, asynchronous)
        kind = stack.AsyncBaseTransport if asynchronous else stack.BaseTransport
        with self._lock:
            inner = self._inners.get(key) or self._inner
            if inner is None:
                inner = (
                    stack.module.AsyncHTTPTransport if asynchronous else stack.module.HTTPTransport
                )()
            if not isinstance(inner, kind):
                raise TypeError(
                    f"the cassette's transport {inner!r} is not an {kind.__name__} of "
                    f"{stack.name}, the library of the client using the cassette"
                )
            self._inners[key] = inner
            return inner

    def _check_size(self, request: Request, body: bytes) -> None:
        if len(body) > self.max_body_size:
            raise CassetteError(
                f"the body of {request.method} {request.url.path} is {len(body)} bytes, over "
                f"{self.max_body_size}, the most a cassette records (max_body_size)"
            )

    def _recording(
        self, stack: Stack, request: Request, body: bytes, response: Response
    ) -> Response:
        """``response`` as it comes, its body recorded as it is read."""
        headers = [(n, v) for n, v in response.headers.multi_items() if n not in _FRAMING]
        sent = (request.method, str(request.url), request.headers.multi_items(), body)

        def keep(data: bytes) -> None:
            self._keep(_Exchange(*sent, response.status_code, headers, data))

        what = f"{request.method} {request.url.path}"
        recorder = _body_of(stack, Recorder)(response, self.max_body_size, what, keep)
        recording: Response = stack.module.Response(
            response.status_code, headers=headers, stream=recorder, request=request
        )
        return recording

    def _keep(self, exchange: _Exchange) -> None:
        """Add a whole exchange and rewrite the file (atomically)."""
        with self._lock:
            self._exchanges.append(exchange)
            self._secrets |= _secrets_in(exchange.request_headers)
            secrets = _longest_first(self._secrets)
            document = {
                "version": FORMAT_VERSION,
                "exchanges": [_dump_exchange(e, secrets) for e in self._exchanges],
            }
            _write_atomically(self.path, json.dumps(document, indent=2, sort_keys=True) + "\n")

    # -- replaying -------------------------------------------------------------------------

    def _key(self, method: str, url: str, body: bytes) -> tuple[Any, ...]:
        """What a request is matched on: the ``match_on`` parts, canonical."""
        address = urllib.parse.urlsplit(url)
        parts = {
            "method": method.upper(),
            "path": address.path or "/",
            "query": tuple(sorted(urllib.parse.parse_qsl(address.query, keep_blank_values=True))),
            "body": _canonical(body),
        }
        return tuple(parts[name] for name in self.match_on)

    def _replay(self, stack: Stack, request: Request, body: bytes) -> Response:
        secrets = _longest_first(self._secrets | _secrets_in(request.headers.multi_items()))
        url = _scrub_text(str(request.url), secrets)
        body = _scrub(body, secrets)
        key = self._key(request.method, url, body)
        with self._lock:
            found = [i for i, known in enumerate(self._keys) if known == key]
            for index in found:
                if not self._played[index]:
                    self._played[index] = True
                    return self._exchanges[index].replay(stack, request)
        raise CassetteError(self._miss(request.method, url, body, len(found)))

    def _miss(self, method: str, url: str, body: bytes, played: int) -> str:
        """Why a request (its secrets scrubbed) has no reply, and what was recorded instead."""
        address = urllib.parse.urlsplit(url)
        path = address.path or "/"
        what = f"{method} {path}{'?' if address.query else ''}{address.query}"
        how = f"matched on {', '.join(self.match_on) or 'nothing'}; body {_preview(body)}"
        if played:
            return (
                f"{what} ({how}) was recorded {played} time(s) in {self.path}, and every reply "
                "to it was replayed already; record again if the code now sends it more often"
            )
        same = [
            _preview(e.request_body)
            for e in self._exchanges
            if e.method == method and (urllib.parse.urlsplit(e.url).path or "/") == path
        ]
        return (
            f"{what} was not recorded in {self.path} ({how}); recorded for that method and "
            f"path: {'; '.join(same[:3]) or 'nothing'}. Record the cassette again "
            "(mode='record', or delete the file with mode='once')"
        )


# -- helpers ------------------------------------------------------------------------------


def _chosen_mode(mode: str | None) -> Mode:
    where = "mode"
    if mode is None:
        mode = os.environ.get(MODE_VARIABLE) or "once"
        where = MODE_VARIABLE
    if mode not in MODES:
        raise ValueError(f"{where} must be one of {', '.join(MODES)}; got {mode!r}")
    return mode


def _secrets_in(headers: Iterable[tuple[str, str]]) -> set[str]:
    """The keys in secret headers: a whole value and, after an auth scheme, its credentials."""
    found: set[str] = set()
    for name, value in headers:
        if name.lower() in SECRET_HEADERS - {"cookie", "set-cookie"}:
            credentials = value.partition(" ")[2].strip()
            found.update(part for part in (value.strip(), credentials) if part)
    return found


def _events(body: bytes) -> list[bytes]:
    """A streamed body cut into its SSE events, each with its ending blank line."""
    return [match.group() for match in _EVENT.finditer(body)]


def _longest_first(secrets: Iterable[str]) -> list[str]:
    """Secrets in the order to scrub them: a key inside a longer one must not split it."""
    return sorted(secrets, key=len, reverse=True)


def _scrub(data: bytes, secrets: list[str]) -> bytes:
    """``data`` with every secret (raw or percent-encoded) replaced by `REDACTED`."""
    for secret in secrets:
        for form in {secret, urllib.parse.quote(secret, safe="")}:
            data = data.replace(form.encode(), REDACTED.encode())
    return data


def _scrub_text(text: str, secrets: list[str]) -> str:
    return _scrub(text.encode(), secrets).decode()


def _canonical(body: bytes) -> str | bytes:
    """A JSON body with sorted keys and no spacing (so key order does not matter), else itself."""
    try:
        return json.dumps(json.loads(body), sort_keys=True, separators=(",", ":"))
    except (ValueError, RecursionError):
        return body


def _preview(body: bytes, limit: int = 200) -> str:
    text = repr(_canonical(body)) if body else "(empty)"
    return text if len(text) <= limit else text[:limit] + "..."


def _dump_part(
    headers: list[tuple[str, str]], body: bytes, secrets: list[str], *, as_events: bool
) -> dict[str, Any]:
    """A request's or reply's headers and body as stored, secrets out: the body as text (a
    list of events for a stream) when it is UTF-8, else as base64."""
    stored: dict[str, Any] = {}
    for name, value in headers:
        value = REDACTED if name in SECRET_HEADERS else _scrub_text(value, secrets)
        earlier = stored.get(name)  # a repeated header is stored as a list of its values
        if earlier is None:
            stored[name] = value
        else:
            stored[name] = [*earlier, value] if isinstance(earlier, list) else [earlier, value]
    body = _scrub(body, secrets)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return {"headers": stored, "body_base64": base64.b64encode(body).decode("ascii")}
    if as_events:
        return {"headers": stored, "events": [event.decode() for event in _events(body)]}
    return {"headers": stored, "body": text}


def _dump_exchange(exchange: _Exchange, secrets: list[str]) -> dict[str, Any]:
    request = _dump_part(exchange.request_headers, exchange.request_body, secrets, as_events=False)
    reply = _dump_part(exchange.headers, exchange.body, secrets, as_events=exchange.is_event_stream)
    return {
        "request": {
            "method": exchange.method,
            "url": _scrub_text(exchange.url, secrets),
            **request,
        },
        "response": {"status": exchange.status, **reply},
    }


def _load_part(part: dict[str, Any]) -> tuple[list[tuple[str, str]], bytes]:
    headers = [
        (str(name), str(each))
        for name, value in part["headers"].items()
        for each in (value if isinstance(value, list) else [value])
    ]
    if "events" in part:
        return headers, "".join(part["events"]).encode("utf-8")
    if "body_base64" in part:
        return headers, base64.b64decode(part["body_base64"], validate=True)
    return headers, str(part["body"]).encode("utf-8")


def _load(path: Path) -> list[_Exchange]:
    """The exchanges of the cassette at ``path``; `CassetteError` if it is missing or bad."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CassetteError(
            f"no cassette at {path} to replay; record it first (mode='record' or 'once')"
        ) from None
    except (OSError, ValueError) as exc:
        raise CassetteError(f"cannot read the cassette {path}: {exc}") from exc
    try:
        if document["version"] != FORMAT_VERSION:
            raise ValueError(f"format version {document['version']!r}, not {FORMAT_VERSION}")
        return [
            _Exchange(
                str(item["request"]["method"]),
                str(item["request"]["url"]),
                *_load_part(item["request"]),
                int(item["response"]["status"]),
                *_load_part(item["response"]),
            )
            for item in document["exchanges"]
        ]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CassetteError(f"{path} is not a cassette file: {exc!r}") from exc


def _write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that a reader sees the old file or the new, never half."""
    temporary = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except OSError as exc:
        raise CassetteError(f"cannot write the cassette {path}: {exc}") from exc
    finally:
        if temporary is not None:
            Path(temporary).unlink(missing_ok=True)  # gone already once it replaced the file


# -- the bodies of replies: replayed events, a reply being recorded ----------------------


class Events:
    """A replayed streamed body: its events one by one, sync or async (made a body of the
    client's stack by `_body_of`)."""

    def __init__(self, events: list[bytes]) -> None:
        self._events = events

    def __iter__(self) -> Iterator[bytes]:
        yield from self._events

    def __aiter__(self) -> AsyncIterator[bytes]:
        return AsyncBody(iter(self._events))


class Recorder:
    """The body of a reply being recorded (made a body of the client's stack by `_body_of`): the inner reply's decoded bytes pass through as they
    come and are kept; at the end (or on close, after reading the rest) ``keep`` gets them all,
    so the cassette holds whole replies even when the caller stops reading early."""

    def __init__(
        self, inner: Response, limit: int, what: str, keep: Callable[[bytes], None]
    ) -> None:
        self._inner = inner
        self._limit = limit
        self._what = what
        self._keep = keep
        self._chunks: list[bytes] = []
        self._size = 0
        self._open = True
        self._sync: Iterator[bytes] | None = None
        self._async: AsyncIterator[bytes] | None = None

    def _take(self, chunk: bytes) -> bytes:
        self._size += len(chunk)
        if self._size > self._limit:
            self._open = False
            raise CassetteError(
                f"the reply to {self._what} is over {self._limit} bytes, the most a cassette "
                "records (max_body_size)"
            )
        self._chunks.append(chunk)
        return chunk

    def _done(self) -> None:
        if self._open:
            self._open = False
            self._keep(b"".join(self._chunks))

    def __iter__(self) -> Iterator[bytes]:
        self._sync = self._sync or self._inner.iter_bytes()
        try:
            for chunk in self._sync:
                yield self._take(chunk)
        except Exception:  # not GeneratorExit: a caller that stops early gets the rest read
            self._open = False
            raise
        self._done()

    def close(self) -> None:
        try:
            if self._open:
                for _ in self:  # read and keep the rest
                    pass
        finally:
            self._inner.close()

    def __aiter__(self) -> Recorder:
        return self

    async def __anext__(self) -> bytes:
        self._async = self._async or self._inner.aiter_bytes()
        try:
            chunk = await self._async.__anext__()
        except StopAsyncIteration:
            self._done()
            raise
        except Exception:
            self._open = False
            raise
        return self._take(chunk)

    async def aclose(self) -> None:
        try:
            if self._open:
                async for _ in self:
                    pass
        finally:
            close = getattr(self._async, "aclose", None)
            if close is not None:
                await close()
            await self._inner.aclose()


class CassetteTransport(Cassette, httpx.BaseTransport, httpx.AsyncBaseTransport):
    """An httpx transport (sync and async) that records exchanges to the JSON file ``path``
    or replays them from it, by ``mode``: ``"once"``, ``"record"`` or ``"replay"``.

    ``transport`` is the inner transport used to record (default: a real HTTP transport,
    made on first use). ``match_on`` is any of ``"method"``, ``"path"``, ``"query"``,
    ``"body"`` (all by default). ``secrets`` are strings to scrub besides the keys found in
    request headers. ``mode`` is the resolved mode afterwards: ``"record"`` or ``"replay"``.
    `Httpx2CassetteTransport` is the same for httpx2's clients, with the same files.
    """
