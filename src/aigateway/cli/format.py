"""What the ``aigateway`` command prints besides replies: the models and conversations tables,
a run's result, the ``--usage`` line, errors in one line, retry notices and ``--debug``
detail. Imported only once a command runs (it loads the SDK)."""

from __future__ import annotations

import json
import logging
import mimetypes
import time
import traceback
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from aigateway._logging import logger
from aigateway._pipeline.ledger import credit_amount
from aigateway.cli.conversations import Conversation, ConversationError
from aigateway.errors import (
    AIGatewayError,
    APIConnectionError,
    APIError,
    APIStatusError,
    APITimeoutError,
)

if TYPE_CHECKING:
    from aigateway.types.chat import Usage
    from aigateway.types.services import RunResult

__all__ = [
    "conversations_table",
    "debug_error",
    "describe_error",
    "image_path",
    "listed_cost",
    "models_table",
    "report_failure",
    "reporting",
    "run_json",
    "usage_line",
    "write_error",
]


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
    return _aligned([[header[i] for i in kept]] + [[row[i] for i in kept] for row in rows])


def _aligned(table: Sequence[Sequence[str]]) -> str:
    """Rows of cells as left-aligned columns two spaces apart, a line each."""
    widths = [max(len(line[column]) for line in table) for column in range(len(table[0]))]
    return "".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        + "\n"
        for line in table
    )


_PROMPT_SHOWN = 48
"""How many characters of a conversation's first prompt its listing shows."""


def conversations_table(
    conversations: Iterable[tuple[str, float, Conversation | ConversationError]],
) -> str:
    """The stored conversations as aligned columns: id, when last saved, model, how many
    messages, and the start of the first prompt (or why the file cannot be used)."""
    table = [["ID", "SAVED", "MODEL", "MESSAGES", "FIRST PROMPT"]]
    for conversation_id, saved, conversation in conversations:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(saved))
        if isinstance(conversation, ConversationError):
            table.append([conversation_id, when, "-", "-", "(not a stored conversation)"])
            continue
        first = next((m["content"] for m in conversation.messages if m["role"] == "user"), "")
        first = " ".join(first.split())
        if len(first) > _PROMPT_SHOWN:
            first = first[: _PROMPT_SHOWN - 3] + "..."
        count = str(len(conversation.messages))
        table.append([conversation_id, when, conversation.model, count, first])
    return _aligned(table)


def run_json(result: RunResult) -> str:
    """A ``/run`` result as JSON with each field once: the output's fields, which the result
    also offers at its top level (``result.image_url``), are shown in ``output`` only."""
    from aigateway.types.services import RunResult

    data = result.model_dump(mode="json")
    output = data.get("output")
    if isinstance(output, dict):
        own = RunResult.model_fields
        copies = {k for k, v in output.items() if k not in own and data.get(k, v) == v}
        data = {key: value for key, value in data.items() if key not in copies}
    return json.dumps(data, indent=2, ensure_ascii=False)


def listed_cost(pricing: object, prompt_tokens: int, completion_tokens: int) -> Decimal | None:
    """What the tokens cost at a model's listed prices (``pricing`` with ``input_per_1k`` and
    ``output_per_1k``, as ``GET /models`` gives them), exactly; None without such prices."""
    if not isinstance(pricing, Mapping):
        return None
    per_input = credit_amount(pricing.get("input_per_1k"))
    per_output = credit_amount(pricing.get("output_per_1k"))
    if per_input is None or per_output is None:
        return None
    return (prompt_tokens * per_input + completion_tokens * per_output) / 1000


def _credits(amount: Decimal | None) -> str:
    return "unknown" if amount is None else f"{amount.normalize():f}"


def usage_line(usage: Usage | None, pricing: object, remaining: float | None) -> str:
    """``--usage``: a reply's tokens (prompt, completion, total) and credits (what they cost at
    the model's listed prices, what remains), in one line; what is not known says so."""
    left = _credits(credit_amount(remaining))
    if usage is None:
        return f"aigateway: usage: tokens unknown; credits unknown cost, {left} remaining\n"
    prompt, completion = usage.prompt_tokens, usage.completion_tokens
    total = usage.total_tokens or prompt + completion
    cost = _credits(listed_cost(pricing, prompt, completion))
    return (
        f"aigateway: usage: tokens {prompt} prompt, {completion} completion, {total} total; "
        f"credits {cost} cost, {left} remaining\n"
    )


def image_path(output: str | None, run_id: str | None, content: bytes) -> Path:
    """Where ``aigateway image`` saves: ``--output``, else ``<run id>.<extension>`` in the
    current directory, the extension from the bytes' own signature."""
    if output is not None:
        return Path(output)
    from aigateway.types.files import sniff_mime

    extension = mimetypes.guess_extension(sniff_mime(content)) or ".bin"
    return Path(f"{run_id or 'image'}{extension}")


def describe_error(error: Exception) -> str:
    """The one-line message of ``error``: an SDK error's own text; a file that cannot be read
    or written as the OS says it; a stored conversation that cannot be used; anything else
    named as unexpected."""
    if isinstance(error, (AIGatewayError, OSError, ConversationError)):
        return str(error)
    return f"unexpected {type(error).__name__}: {error}"


def write_error(message: str, err: TextIO) -> None:
    """``aigateway: error: ...`` in one line on ``err``, however many lines the message has."""
    line = "; ".join(part.strip() for part in message.splitlines() if part.strip())
    err.write(f"aigateway: error: {line}\n")
    err.flush()


def report_failure(error: Exception, debug: bool, err: TextIO) -> None:
    """A command's failure on ``err``: one line, after the ``--debug`` detail when asked for."""
    if debug:
        debug_error(error, err)
    write_error(describe_error(error), err)


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
            error, attempt, attempts, wait = retry  # attempts: None under a stop of one's own
            of = "" if attempts is None else f" of {attempts}"
            self.err.write(
                f"aigateway: {_what_failed(error)}, retrying in {wait:.1f} s "
                f"(attempt {attempt}{of})\n"
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
