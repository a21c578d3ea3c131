"""The ``aigateway chat`` conversations kept on disk, so ``--continue`` can pick one up later.

Each conversation is one JSON file, ``<state dir>/conversations/<id>.json``, holding only
the model and the messages (never a key or a gateway address); ``last`` beside them names
the conversation saved most recently. Files are written whole to a temporary file and moved
into place, so a crash or a second command never leaves half a file; only their owner can
read them. A file that is not a conversation is a `ConversationError` naming it.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "STATE_DIR_VARIABLE",
    "Conversation",
    "ConversationError",
    "ConversationStore",
    "new_id",
    "state_dir",
]

STATE_DIR_VARIABLE = "AIGATEWAY_STATE_DIR"
"""The environment variable that moves the state directory (tests, or a shared machine)."""

ROLES = ("system", "user", "assistant")
"""The roles a stored conversation's messages may have."""

_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


class ConversationError(Exception):
    """A stored conversation that cannot be used: missing, unreadable or not a conversation."""


def state_dir() -> Path:
    """Where aigateway keeps what outlives a command: ``$AIGATEWAY_STATE_DIR``; else, on
    Windows, ``%LOCALAPPDATA%\\aigateway``; elsewhere ``$XDG_STATE_HOME/aigateway`` when it is
    set, else ``~/.local/state/aigateway`` (``~/Library/Application Support/aigateway`` on
    macOS)."""
    override = os.environ.get(STATE_DIR_VARIABLE)
    if override:
        return Path(override)
    home = Path.home()
    xdg = os.environ.get("XDG_STATE_HOME", "")
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or home / "AppData" / "Local")
    elif os.path.isabs(xdg):  # a relative one is to be ignored, as the XDG spec says
        base = Path(xdg)
    elif sys.platform == "darwin":
        base = home / "Library" / "Application Support"
    else:
        base = home / ".local" / "state"
    return base / "aigateway"


@dataclass
class Conversation:
    """A chat: its id, its model and its messages (dicts with ``role`` and ``content``)."""

    id: str
    model: str
    messages: list[dict[str, str]] = field(default_factory=list)


def new_id() -> str:
    """A readable, unique id: when it started, and four random hex digits."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


def _checked(data: object, where: Path) -> Conversation:
    """The conversation ``data`` holds, or a `ConversationError` saying what is wrong."""

    def wrong(what: str) -> ConversationError:
        return ConversationError(f"{where} is not a stored conversation: {what}")

    if not isinstance(data, dict):
        raise wrong(f"a JSON object was expected, got {type(data).__name__}")
    model, messages = data.get("model"), data.get("messages")
    if not isinstance(model, str) or not model:
        raise wrong("'model' is missing or not a string")
    if not isinstance(messages, list):
        raise wrong("'messages' is missing or not a list")
    for index, message in enumerate(messages):
        if (
            not isinstance(message, dict)
            or message.get("role") not in ROLES
            or not isinstance(message.get("content"), str)
        ):
            raise wrong(
                f"messages[{index}] is not an object with a role ({', '.join(ROLES)}) "
                "and a string content"
            )
    kept = [{"role": m["role"], "content": m["content"]} for m in messages]
    return Conversation(where.stem, model, kept)


def _read(path: Path, missing: str) -> str:
    """The text of ``path``; a `ConversationError` saying ``missing`` when it does not exist,
    or why it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConversationError(missing) from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConversationError(f"cannot read {path}: {error}") from None


def _write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (a temporary file moved into place)."""
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


class ConversationStore:
    """The conversations under ``directory`` (by default ``state_dir() / "conversations"``)."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory if directory is not None else state_dir() / "conversations"

    def _path(self, conversation_id: str) -> Path:
        if not _ID.fullmatch(conversation_id):
            raise ConversationError(
                f"{conversation_id!r} is no conversation id (letters, digits, '-' and '_'; "
                "see `aigateway conversations`)"
            )
        return self.directory / f"{conversation_id}.json"

    def load(self, conversation_id: str) -> Conversation:
        """The conversation ``conversation_id``."""
        path = self._path(conversation_id)
        missing = f"no stored conversation {conversation_id!r} (see `aigateway conversations`)"
        text = _read(path, missing)
        try:
            data = json.loads(text)
        except ValueError as error:
            raise ConversationError(
                f"{path} is not a stored conversation: not valid JSON ({error})"
            ) from None
        return _checked(data, path)

    def last(self) -> Conversation:
        """The conversation saved most recently."""
        missing = "there is no conversation to continue yet: start one without --continue"
        return self.load(_read(self.directory / "last", missing).strip())

    def save(self, conversation: Conversation) -> None:
        """Write ``conversation`` and make it the last one."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        data = {"model": conversation.model, "messages": conversation.messages}
        path = self._path(conversation.id)
        _write_atomically(path, json.dumps(data, ensure_ascii=False, indent=1) + "\n")
        _write_atomically(self.directory / "last", conversation.id + "\n")

    def listing(self) -> Iterator[tuple[str, float, Conversation | ConversationError]]:
        """Every stored conversation, the latest first: its id, when it was last saved (Unix
        time) and the conversation, or the error that makes it unusable."""
        paths = [(path.stat().st_mtime, path) for path in self.directory.glob("*.json")]
        for saved, path in sorted(paths, reverse=True):
            try:
                yield path.stem, saved, self.load(path.stem)
            except ConversationError as error:
                yield path.stem, saved, error
