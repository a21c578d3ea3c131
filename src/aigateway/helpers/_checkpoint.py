"""A batch's checkpoint file: JSON lines, one per finished item, appended as items finish.

A line holds the item's key (its ``id``, else its index), its ``request`` as JSON, and either the reply, serialised with
``model_dump(mode="json")`` and the name of its type, or the error (class name, message,
status). Each line goes to the file in one ``os.write`` of the whole line, so the file only ever
ends with complete lines, or with one line cut short by a crash or a full disk; that last piece
is ignored (and cut off) when the file is opened again, and its item is done again.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Collection, Hashable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from aigateway.errors import RecordedError

__all__ = ["Checkpoint"]


def _reply_types() -> dict[str, type[BaseModel]]:
    """The reply models a checkpoint re-validates by name: chat completions and every result
    of the service calls."""
    from aigateway.types import services
    from aigateway.types.chat import ChatCompletion

    types: dict[str, type[BaseModel]] = {"ChatCompletion": ChatCompletion}
    for name in services.__all__:
        value = getattr(services, name)
        if isinstance(value, type) and issubclass(value, services.RunResult):
            types[name] = value
    return types


def encode_value(value: Any) -> tuple[str, Any] | None:
    """``(type name, JSON value)`` for a reply; None when it cannot be written as JSON."""
    if isinstance(value, BaseModel):
        name = type(value).__name__
        kind = name if _reply_types().get(name) is type(value) else "json"
        return kind, value.model_dump(mode="json", by_alias=True)
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return None
    return "json", value


def decode_value(kind: str, value: Any) -> Any:
    """The reply written by `encode_value`, typed again; raises ValueError when it no longer
    validates."""
    if kind == "json":
        return value
    model = _reply_types().get(kind)
    if model is None:
        raise ValueError(f"unknown reply type {kind!r}")
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise ValueError(str(exc)) from exc


class Checkpoint:
    """An open checkpoint file: what earlier runs finished (`done`), and `record` for more."""

    def __init__(self, path: str | os.PathLike[str], keys: Collection[Hashable]) -> None:
        self.path = Path(path)
        self.done: dict[Hashable, tuple[Any, BaseException | None]] = {}
        """Key -> (reply, error) of the items an earlier run finished (only keys in ``keys``)."""
        self._lock = threading.Lock()
        self._fd: int | None = None
        wanted = set(keys)
        complete = self._load(wanted)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        if complete is not None:
            os.truncate(self.path, complete)  # drop a line cut short, so the next one starts clean

    def _load(self, wanted: set[Hashable]) -> int | None:
        """Read the finished items; the length of the complete lines when a cut line follows."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return None
        end = data.rfind(b"\n") + 1
        for raw in data[:end].splitlines():
            entry = _parse(raw)
            if entry is not None and entry[0] in wanted:
                self.done[entry[0]] = entry[1]
        return end if end < len(data) else None

    def record(
        self, key: Hashable, value: Any, error: BaseException | None, request: Any = None
    ) -> None:
        """Append one finished item with its request (when it can be written as JSON: a
        request model is written as the body it sends); a reply that cannot be written as
        JSON is left out, so a later run does it again."""
        entry: dict[str, Any] = {"id": key}
        if request is not None and (as_json := encode_value(request)) is not None:
            entry["request"] = as_json[1]
        if error is None:
            encoded = encode_value(value)
            if encoded is None:
                return
            entry["type"], entry["value"] = encoded
        else:
            entry["error"] = {
                "type": getattr(error, "kind", type(error).__name__),
                "message": getattr(error, "message", None) or str(error),
                "status": getattr(error, "status_code", None),
            }
        line = (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8")
        with self._lock:
            if self._fd is None:
                return
            written = 0
            while written < len(line):
                written += os.write(self._fd, line[written:])

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def _parse(raw: bytes) -> tuple[Hashable, tuple[Any, BaseException | None]] | None:
    """One line's key and (reply, error); None for a line that is not one of ours."""
    try:
        entry = json.loads(raw)
        key = entry["id"]
        if not isinstance(key, (str, int)) or isinstance(key, bool):
            return None
        if "error" in entry:
            error = entry["error"]
            status = error.get("status")
            return key, (
                None,
                RecordedError(
                    str(error.get("type")),
                    str(error.get("message")),
                    status if isinstance(status, int) else None,
                ),
            )
        return key, (decode_value(str(entry["type"]), entry["value"]), None)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
