"""Where the mock's chat replies come from, in this order: the replies a test queued
(``gateway.enqueue_reply``), the user's reply function (``gateway.reply_with``), and else the
seeded fake model (`Engine`)."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Union

from aigateway.testing._model.engine import Engine, ScriptedReply

__all__ = ["ChatReplies", "ReplyFunction"]

ReplyFunction = Callable[
    [Mapping[str, Any]], Union[str, Sequence[Mapping[str, Any]], ScriptedReply]
]
"""``function(request)``: the validated request body in, the reply out: its text, or a list
of tool calls (``{"name": ..., "arguments": {...}}``), or a `ScriptedReply` for both and a
``finish_reason``. The reply is still cut by the request's ``stop`` and ``max_tokens``."""


class ChatReplies:
    """The queue of scripted replies, the reply function, and the fake model."""

    def __init__(self, seed: int) -> None:
        self.engine = Engine(seed)
        self.function: ReplyFunction | None = None
        self._queue: deque[ScriptedReply] = deque()
        self._lock = threading.Lock()

    def enqueue(self, reply: ScriptedReply) -> None:
        with self._lock:
            self._queue.append(reply)

    def take_queued(self) -> ScriptedReply | None:
        """The next queued reply, taken off the queue (None when it is empty)."""
        with self._lock:
            return self._queue.popleft() if self._queue else None

    def put_back(self, reply: ScriptedReply) -> None:
        """Return a queued reply a failed request did not use, to the front of the queue."""
        with self._lock:
            self._queue.appendleft(reply)

    def from_function(self, request: Mapping[str, Any]) -> ScriptedReply | None:
        """The reply function's answer to ``request`` (None without a function)."""
        function = self.function
        if function is None:
            return None
        result = function(request)
        if isinstance(result, ScriptedReply):
            return result
        if isinstance(result, str):
            return ScriptedReply.build(result)
        if isinstance(result, Sequence):
            return ScriptedReply.build(None, [call for call in result if isinstance(call, Mapping)])
        raise TypeError(
            "a reply function returns the reply's text, a list of tool calls or a "
            f"ScriptedReply, not {type(result).__name__}"
        )
