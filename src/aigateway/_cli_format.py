"""What the ``aigateway`` command prints besides replies: the models table, errors in one line,
retry notices and ``--debug`` detail. Imported only once a command runs (it loads the SDK)."""

from __future__ import annotations

import logging
import mimetypes
import time
import traceback
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from ._logging import logger
from .errors import (
    AIGatewayError,
    APIConnectionError,
    APIError,
    APIStatusError,
    APITimeoutError,
)

__all__ = ["debug_error", "describe_error", "image_path", "models_table", "reporting"]


def _price(pricing: Any) -> str:
    if not isinstance(pricing, Mapping):
        return ""
    if "input_per_1k" in pricing or "output_per_1k" in pricing:
        return f"{pricing.get('input_per_1k', '-')} / {pricing.get('output_per_1k', '-')}"
    return ", ".join(f"{key} {value}" for key, value in pricing.items())


def _capabilities(capabilities: Any) -> str:
    if isinstance(capabilities, Mapping):
        return ",".join(str(name) for name, on in capabilities.items() if on)
    if isinstance(capabilities, Sequence) and not isinstance(capabilities, str):
        return ",".join(str(name) for name in capabilities)
    return ""


def models_table(models: Sequence[Mapping[str, Any]]) -> str:
    """The catalogue as aligned columns: id, owner, context window, prices per 1K tokens
    (input / output) and capabilities; a column no model has a value for is left out."""
    header = ("ID", "OWNER", "CONTEXT", "PRICE IN/OUT PER 1K", "CAPABILITIES")
    rows = [
        (
            str(model.get("id", "")),
            str(model.get("owned_by") or ""),
            "" if model.get("context_window") is None else str(model["context_window"]),
            _price(model.get("pricing")),
            _capabilities(model.get("capabilities")),
        )
        for model in models
    ]
    kept = [0] + [i for i in range(1, len(header)) if any(row[i] for row in rows)]
    table = [[header[i] for i in kept]] + [[row[i] for i in kept] for row in rows]
    widths = [max(len(line[column]) for line in table) for column in range(len(kept))]
    return "".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        + "\n"
        for line in table
    )


def image_path(output: str | None, run_id: str | None, content: bytes) -> Path:
    """Where ``aigateway image`` saves: ``--output``, else ``<run id>.<extension>`` in the
    current directory, the extension from the bytes' own signature."""
    if output is not None:
        return Path(output)
    from .types.files import sniff_mime

    extension = mimetypes.guess_extension(sniff_mime(content)) or ".bin"
    return Path(f"{run_id or 'image'}{extension}")


def describe_error(error: Exception) -> str:
    """The one-line message of ``error``: an SDK error's own text; a file that cannot be read
    or written as the OS says it; anything else named as unexpected."""
    if isinstance(error, (AIGatewayError, OSError)):
        return str(error)
    return f"unexpected {type(error).__name__}: {error}"


def debug_error(error: Exception, err: TextIO) -> None:
    """``--debug``: the status, request id and attempts of an API error, and the traceback."""
    if isinstance(error, APIError):
        status = error.status_code if isinstance(error, APIStatusError) else None
        request_id = error.request_id if isinstance(error, APIStatusError) else None
        err.write(
            f"aigateway: debug: {type(error).__name__}: status {status}, "
            f"request id {request_id}, attempts {getattr(error, 'attempts', 1)}\n"
        )
    err.write("".join(traceback.format_exception(error)))


def _what_failed(error: BaseException | None) -> str:
    if isinstance(error, APIStatusError):
        return f"HTTP {error.status_code}"
    if isinstance(error, APITimeoutError):
        return "request timed out"
    if isinstance(error, APIConnectionError):
        cause = error.__cause__
        refused = isinstance(cause, ConnectionRefusedError) or "refused" in str(cause).lower()
        return "connection refused" if refused else "connection failed"
    return type(error).__name__


class _Reporter(logging.Handler):
    """Writes the SDK's retry notices (always) and its other log lines (with ``--debug``)."""

    def __init__(self, err: TextIO, debug: bool) -> None:
        super().__init__(logging.DEBUG)
        self.err = err
        self.debug = debug

    def emit(self, record: logging.LogRecord) -> None:
        retry = getattr(record, "retry", None)
        if retry is not None:
            error, attempt, attempts, wait = retry
            self.err.write(
                f"aigateway: {_what_failed(error)}, retrying in {wait:.1f} s "
                f"(attempt {attempt} of {attempts})\n"
            )
        elif self.debug:
            request_id = getattr(record, "request_id", None)
            suffix = f", request id {request_id}" if request_id else ""
            self.err.write(f"aigateway: debug: {record.getMessage()}{suffix}\n")
        self.err.flush()


@contextmanager
def reporting(debug: bool, err: TextIO) -> Iterator[None]:
    """Route the ``aigateway`` logger to ``err`` for one command (the logger's level and
    handlers are put back afterwards); with ``debug``, time the command too."""
    handler = _Reporter(err, debug)
    level, propagate = logger.level, logger.propagate
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    logger.addHandler(handler)
    started = time.perf_counter()
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate
        if debug:
            err.write(f"aigateway: debug: finished in {time.perf_counter() - started:.3f} s\n")
