"""How objects show themselves: a short plain ``repr`` and escaped HTML for Jupyter.

Every reply, stream, error and client renders through these builders, so escaping and
truncation are written once. Reply text is whatever the model (or an attacker feeding it)
wrote, so every value goes through `html.escape`. A repr never makes a request (media results
fetch their bytes on first display, in `MediaFile`) and never raises: `guarded` turns a failure
into a fallback naming the class.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

__all__ = [
    "card",
    "data_uri",
    "error_html",
    "error_repr",
    "first_choice_text",
    "guarded",
    "media_html",
    "plain",
    "rate_limit_text",
    "public_name",
    "shorten",
    "stream_html",
    "stream_repr",
    "table",
]

TEXT_CHARS = 60
"""How much of a reply's text a plain repr shows."""
HTML_TEXT_CHARS = 5000
"""How much of a reply's text the HTML shows."""
VALUE_CHARS = 200
"""How much of any other value the HTML shows."""
_STYLE = "font-family:var(--jp-code-font-family,monospace);font-size:90%"

F = TypeVar("F", bound=Callable[..., str | None])


def escape(text: str, quote: bool = True) -> str:
    """`html.escape`, imported on first use: its entity table (about 400 KiB) is loaded only
    by a process that shows something in a notebook."""
    from html import escape as html_escape

    return html_escape(text, quote)


def public_name(cls: type) -> str:
    """``aigateway.Stream`` for ``aigateway._streaming.Stream``: the path a user imports."""
    name = cls.__name__.split("[")[0]  # a generic pydantic model: ParsedChatCompletion[Foo]
    module = cls.__module__
    if not module.startswith("aigateway"):
        return cls.__qualname__
    import aigateway

    if name in aigateway.__all__:
        return f"aigateway.{name}"
    return ".".join([p for p in module.split(".") if not p.startswith("_")] + [name])


def shorten(text: str, limit: int = TEXT_CHARS) -> str:
    """``text`` cut to ``limit`` characters, with an ellipsis when cut."""
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def plain(obj: object, *parts: str | None) -> str:
    """``aigateway.Name(part, part, ...)``, leaving out empty parts."""
    return f"{public_name(type(obj))}({', '.join(p for p in parts if p)})"


def field(name: str, value: object, limit: int = TEXT_CHARS) -> str | None:
    """``name=value`` for a plain repr (strings quoted and shortened); None for None."""
    if value is None:
        return None
    shown = repr(shorten(value, limit)) if isinstance(value, str) else repr(value)
    return f"{name}={shown}"


def _value(value: object) -> str:
    text = value if isinstance(value, str) else repr(value)
    return escape(shorten(text, VALUE_CHARS))


def card(
    obj: object,
    fields: Iterable[tuple[str, object]],
    body: str = "",
    text: str | None = None,
) -> str:
    """A titled definition list (None values left out), then ``text`` (escaped, in a
    preformatted block) and ``body`` (HTML already built here)."""
    rows = "".join(
        f"<dt>{escape(name)}</dt><dd>{_value(value)}</dd>"
        for name, value in fields
        if value is not None
    )
    shown = ""
    if text is not None:
        shown = f'<pre style="white-space:pre-wrap">{escape(shorten(text, HTML_TEXT_CHARS))}</pre>'
    title = escape(public_name(type(obj)))
    return (
        f'<div class="aigateway" style="{_STYLE}"><strong>{title}</strong>'
        f'<dl style="display:grid;grid-template-columns:max-content auto;gap:0 1em">{rows}</dl>'
        f"{shown}{body}</div>"
    )


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """An HTML table; every cell escaped and shortened, None shown empty."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{'' if c is None else _value(c)}</td>" for c in row) + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def data_uri(mime: str, content: bytes) -> str:
    """A ``data:`` URI holding ``content``."""
    from base64 import b64encode

    return f"data:{mime};base64,{b64encode(content).decode('ascii')}"


def guarded(render: F) -> F:
    """Wrap a ``__repr__`` or ``_repr_html_`` so it never raises: a failure shows a fallback
    naming the class and the error's type."""

    @functools.wraps(render)
    def safe(self: object, *args: Any) -> str | None:
        try:
            return render(self, *args)
        except Exception as exc:  # a repr must never raise
            fallback = f"<{public_name(type(self))} object (not shown: {type(exc).__name__})>"
            return escape(fallback) if "html" in render.__name__ else fallback

    return safe  # type: ignore[return-value]


def rate_limit_text(info: Any) -> str | None:
    """``59 of 60 left, resets in 30 s`` from a `RateLimitInfo` (None without one)."""
    if info is None:
        return None
    text = f"{info.remaining} of {info.limit} left"
    seconds = info.seconds_until_reset(time.time())
    return text if seconds is None else f"{text}, resets in {seconds:.0f} s"


def media_html(kind: str, src: str, url: str, not_shown: str | None) -> str:
    """An ``<img>``, ``<audio>`` or ``<video>`` of ``src`` (a ``data:`` URI), or, when the
    bytes are not here (``not_shown`` says why), that reason and a link to ``url``."""
    link = f'<a href="{escape(url, quote=True)}">{escape(shorten(url, 80))}</a>'
    if not_shown is not None or not src.startswith("data:"):
        return f"<p>{escape(not_shown or 'not fetched')}: {link}</p>"
    src = escape(src, quote=True)
    if kind == "image":
        return f'<img src="{src}" alt="generated image"/>'
    if kind in ("audio", "video"):
        return f'<{kind} controls src="{src}"></{kind}>'
    return f"<p>{link}</p>"


# -- streams ------------------------------------------------------------------------------


def first_choice_text(chunk: object) -> str:
    """The text a chat chunk adds to its first choice (``""`` for anything else)."""
    for choice in getattr(chunk, "choices", None) or ():
        if getattr(choice, "index", 0) == 0:
            delta = getattr(choice, "delta", None)
            return getattr(delta, "content", None) or ""
    return ""


def stream_repr(stream: object, state: str, received: int, text: str) -> str:
    """``aigateway.Stream(open, 3 chunks, text='Hello')``."""
    chunks = f"{received} chunk{'' if received == 1 else 's'}"
    return plain(stream, state, chunks, field("text", text or None))


def stream_html(stream: object, state: str, received: int, text: str) -> str:
    """A stream's state, chunk count and text (so far, or of its last chunks)."""
    return card(stream, [("state", state), ("chunks", received)], text=text)


# -- errors --------------------------------------------------------------------------------

_HINTS = {
    "AuthenticationError": "Check the API key: set AIGATEWAY_API_KEY or pass api_key=.",
    "InsufficientCreditsError": "Top up the account's credits, or use a cheaper model.",
    "RateLimitError": "Wait, then slow down (max_concurrency=, or wait_for_rate_limit=True).",
    "NotFoundError": "Check the model id or path: client.models.list() shows what exists.",
    "ConflictError": "An idempotency key is in use or was used for another request: wait, "
    "or use a new key.",
    "BadRequestError": "Fix the parameter the message names; it says what is allowed.",
    "ServiceUnavailableError": "The service is down for now: retry later, or pass "
    "fallback_models=.",
    "InternalServerError": "The gateway failed: retry later.",
    "APIStatusError": "Read the status and message; the request id helps the gateway's support.",
    "IncompleteStreamError": "The stream ended early: error.partial holds what arrived; "
    "call again.",
    "APITimeoutError": "No reply in time: retry, or raise timeout=.",
    "APIConnectionError": "No reply: check base_url and the network, then retry.",
    "StructuredOutputError": "The content is not of the requested type: retry, or loosen "
    "the schema.",
    "LengthFinishReasonError": "The reply hit the token limit: raise max_tokens.",
    "APIResponseValidationError": "The reply is not what the API promises: check that "
    "base_url points at the gateway.",
    "InvalidRequestError": "Nothing was sent: fix the arguments listed.",
    "ConfigurationError": "Fix the client's settings (key, base_url, limits).",
    "BudgetExceededError": "The client's max_credits budget is spent: raise it to go on.",
}


def _hint(error: BaseException) -> str | None:
    """What to do about an error: the hint of its nearest class that has one."""
    for cls in type(error).__mro__:
        hint = _HINTS.get(cls.__name__)
        if hint is not None:
            if cls.__name__ == "RateLimitError":
                hint += _reset_note(error)
            return hint
    return None


def _reset_note(error: BaseException) -> str:
    rate_limit = getattr(error, "rate_limit", None)
    seconds = rate_limit.seconds_until_reset(time.time()) if rate_limit is not None else None
    return "" if seconds is None else f" The window resets in {seconds:.0f} s."


def _error_fields(error: BaseException) -> list[tuple[str, object]]:
    message = getattr(error, "message", None) or (str(error.args[0]) if error.args else "")
    return [
        ("status", getattr(error, "status_code", None)),
        ("code", getattr(error, "code", None)),
        ("message", message),
        ("param", getattr(error, "param", None)),
        ("request id", getattr(error, "request_id", None)),
    ]


def error_repr(error: BaseException) -> str:
    """``aigateway.RateLimitError(status=429, code='rate_limited', message='...')``."""
    return plain(error, *(field(k.replace(" ", "_"), v) for k, v in _error_fields(error)))


def error_html(error: BaseException) -> str:
    """The error's status, code, message, request id and what to do."""
    return card(error, [*_error_fields(error), ("what to do", _hint(error))])
