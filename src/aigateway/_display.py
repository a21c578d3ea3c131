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
from collections.abc import Callable, Container, Iterable, Sequence
from typing import Any, TypeVar

from aigateway._exports import EXPORTS

__all__ = [
    "batch_html",
    "batch_text",
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
    "text_table",
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
    """``aigateway.Stream`` for ``aigateway._streams.streams.Stream``: the path a user imports."""
    name = cls.__name__.split("[")[0]  # a generic pydantic model: ParsedChatCompletion[Foo]
    module = cls.__module__
    if not module.startswith("aigateway"):
        return cls.__qualname__
    if EXPORTS.get(name) == module:
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


# Inline styles, so that no notebook's stylesheet reflows a card: JupyterLab and the classic
# Notebook set ``white-space: normal`` and right alignment on table cells (a two-word label then
# takes two lines when the table is squeezed) and break a ``pre``'s text mid-word. An inline
# style outranks every rule of theirs (none is ``!important``), and a table keeps its columns
# where a sanitizer drops layout styles (JupyterLab's, for outputs it does not trust).
# tests/package/test_notebook_layout.py checks the result in Chromium.
_TABLE = "margin:0.25em 0;width:auto;table-layout:auto;border-collapse:collapse"
_CELL = "padding:0.25em 0.5em;text-align:left;vertical-align:top;overflow-wrap:break-word"
_LABEL = f"{_CELL};white-space:nowrap"
"""A label, a column's header, and a table's cells but the last: one line each."""
_TEXT = "white-space:pre-wrap;word-break:normal;overflow-wrap:break-word"


def card(
    obj: object,
    fields: Iterable[tuple[str, object]],
    body: str = "",
    text: str | None = None,
) -> str:
    """A title over a table of labels and values (None values left out), then ``text``
    (escaped, in a preformatted block) and ``body`` (HTML already built here)."""
    rows = [
        f'<tr><th scope="row" style="{_LABEL}">{escape(name)}</th>'
        f'<td style="{_CELL}">{_value(value)}</td></tr>'
        for name, value in fields
        if value is not None
    ]
    listed = f'<table style="{_TABLE}"><tbody>{"".join(rows)}</tbody></table>' if rows else ""
    shown = ""
    if text is not None:
        shown = f'<pre style="{_TEXT}">{escape(shorten(text, HTML_TEXT_CHARS))}</pre>'
    title = escape(public_name(type(obj)))
    return (
        f'<div class="aigateway" style="{_STYLE}"><strong>{title}</strong>'
        f"{listed}{shown}{body}</div>"
    )


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """An HTML table; every cell escaped and shortened, None shown empty. Only the last
    column, the one with free text (an error, a value), wraps its lines."""
    head = "".join(f'<th style="{_LABEL}">{escape(h)}</th>' for h in headers)
    last = len(headers) - 1
    body = "".join(
        "<tr>"
        + "".join(
            f'<td style="{_CELL if i == last else _LABEL}">{"" if c is None else _value(c)}</td>'
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return (
        f'<table class="aigateway" style="{_TABLE}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )


def text_table(rows: Sequence[Sequence[str]], right: Container[int] = ()) -> str:
    """Aligned columns of plain text, two spaces apart; the columns in ``right`` flush right."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(
            cell.rjust(width) if i in right else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    )


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


def _tail(text: str, limit: int, cut: bool) -> str:
    """The end of ``text`` in at most ``limit`` characters, led by an ellipsis when anything
    before it is not shown (``cut``: its start is already gone)."""
    if not cut and len(text) <= limit:
        return text
    return "…" + text[max(0, len(text) - limit + 1) :]


def stream_repr(
    stream: object, state: str, received: int, text: str, kept: int | None = None
) -> str:
    """``aigateway.Stream(open, 3 chunks, text='Hello')``: the end of the text, as it grows
    there. ``kept``: how many of the last chunks ``text`` is made of, when not all."""
    chunks = f"{received} chunk{'' if received == 1 else 's'}"
    cut = kept is not None and kept < received
    return plain(stream, state, chunks, field("text", _tail(text, TEXT_CHARS, cut) or None))


def stream_html(
    stream: object, state: str, received: int, text: str, kept: int | None = None
) -> str:
    """A stream's state, chunk count and the end of its text; when that is not all of it, a
    leading ellipsis and a line saying how much is shown."""
    fields: list[tuple[str, object]] = [("state", state), ("chunks", received)]
    cut = kept is not None and kept < received
    if cut:
        fields.append(("text shown", f"the last {kept} of {received} chunks"))
    elif len(text) > HTML_TEXT_CHARS:
        fields.append(("text shown", f"the last {HTML_TEXT_CHARS - 1} of {len(text)} characters"))
    return card(stream, fields, text=_tail(text, HTML_TEXT_CHARS, cut))


# -- batches -------------------------------------------------------------------------------

BATCH_ROWS = 50
"""How many items a batch's table shows: the failed ones first, then the rest, in input order."""


def _message(error: BaseException) -> str:
    return getattr(error, "message", None) or (str(error.args[0]) if error.args else "")


def _batch_rows(results: Sequence[Any]) -> list[tuple[str, str, str, str]]:
    """Item, status, cost and error of the items a batch shows (`BATCH_ROWS`)."""
    shown = sorted(sorted(results, key=lambda r: r.ok)[:BATCH_ROWS], key=lambda r: r.index)
    rows = []
    for result in shown:
        status = ("ok" if result.ok else "failed") + (
            " (checkpoint)" if result.from_checkpoint else ""
        )
        error = result.error
        kind = getattr(error, "kind", None)  # a RecordedError keeps the original class's name
        name = kind if isinstance(kind, str) else type(error).__name__
        shown_error = "" if error is None else f"{name}: {_message(error)}"
        rows.append((str(result.id), status, _cost(result.value), shown_error))
    return rows


def _cost(value: object) -> str:
    """The credits a reply states (``usage.credits``), else its tokens."""
    usage = getattr(value, "usage", None)
    credits = getattr(usage, "credits", None)
    if isinstance(credits, int | float) and not isinstance(credits, bool):
        return f"{credits:g} credits"
    tokens = getattr(usage, "total_tokens", None)
    return f"{tokens} tokens" if isinstance(tokens, int) else ""


def _more_note(results: Sequence[Any]) -> str | None:
    more = len(results) - BATCH_ROWS
    return f"{BATCH_ROWS} of {len(results)} items: the failed ones first" if more > 0 else None


def batch_html(results: Sequence[Any]) -> str:
    """A batch's counts and credits, then a table: item, status, cost, error."""
    failed = sum(1 for result in results if not result.ok)
    spent = getattr(results, "credits_spent", None)
    summary = [
        ("items", len(results)),
        ("ok", len(results) - failed),
        ("failed", failed),
        ("credits spent", None if spent is None else f"{spent:g}"),
        ("rows shown", _more_note(results)),
    ]
    return card(results, summary, body=table(_BATCH_HEADERS, _batch_rows(results)))


@guarded
def batch_text(results: Sequence[Any]) -> str:
    """The plain ``repr``, then the same table as aligned columns of text."""
    rows = [
        (item, status, cost, shorten(error)) for item, status, cost, error in _batch_rows(results)
    ]
    lines = [repr(results)]
    if rows:
        lines.append(text_table([_BATCH_HEADERS, *rows], right={2}))
    note = _more_note(results)
    return "\n".join(lines if note is None else [*lines, f"(showing {note})"])


_BATCH_HEADERS = ("item", "status", "cost", "error")


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
    message = _message(error)
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
