"""Batches: many chat requests (or ``/run`` calls, or calls of your own) with bounded concurrency.

    results = aigateway.run_batch(client, [{"model": "gpt-4o-mini", "messages": [...]}, ...])
    results = await aigateway.arun_batch(async_client, items, concurrency=32)

Both drivers share everything but the waiting (`_BatchRun`): items are checked and keyed up
front, results come back in input order (`BatchResult`), one item's failure is that item's
error, a checkpoint file lets an interrupted batch resume, and a progress bar shows what is
done. The sync driver runs items on a thread pool, the async one in an anyio task group under
a `CapacityLimiter` (asyncio and trio).

Rate limits: the client already retries a 429 whose wait is within its retry cap. A 429 asking
for longer is raised at once, one left after the client's retries is raised too, both with the
wait asked as ``retry_after``; the batch then holds back every new request for that long (one
pause for the whole batch, not one per worker) and tries the item once more (again, when other
items took the window it waited for).
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Hashable, Iterable, Iterator, Mapping
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from os import PathLike
from typing import TYPE_CHECKING, Any, Literal, Protocol

from aigateway._display import batch_html, batch_text, guarded
from aigateway._optional import require
from aigateway.errors import InvalidRequestError, RateLimitError, RecordedError, Violation
from aigateway.helpers._checkpoint import Checkpoint
from aigateway.helpers._client_kind import check_client_kind
from aigateway.types.requests import RequestModel

if TYPE_CHECKING:
    from aigateway._client.clients import AsyncClient, Client

__all__ = ["BatchResult", "ItemResult", "ProgressBar", "RecordedError", "arun_batch", "run_batch"]

BatchKind = Literal["chat", "run"]


class ProgressBar(Protocol):
    """What a batch needs of a progress bar (a ``tqdm`` bar has it)."""

    def update(self, n: int = 1) -> object: ...

    def set_postfix(self, ordered_dict: Mapping[str, object], refresh: bool = True) -> object: ...

    def close(self) -> object: ...


@dataclass(frozen=True)
class ItemResult:
    """One item's outcome: its reply (``value``) or its ``error``, never both."""

    index: int
    """The item's position in the input."""
    id: str | int
    """The item's ``id`` key, else its index: its key in the checkpoint file."""
    value: Any = None
    error: BaseException | None = None
    from_checkpoint: bool = False
    """True when loaded from the checkpoint file rather than sent in this run."""

    @property
    def ok(self) -> bool:
        return self.error is None


class BatchResult(list[ItemResult]):
    """The items' outcomes, in input order."""

    credits_spent: float | None = None
    """Credits this run spent, as the replies tell (``usage.credits`` of service results, else
    the fall of ``remaining_credits``); None when no reply told. A chat batch on a client that
    has not seen its balance yet cannot count its first reply."""

    @property
    def ok(self) -> list[ItemResult]:
        """The items that got a reply."""
        return [result for result in self if result.ok]

    @property
    def failed(self) -> list[ItemResult]:
        """The items that ended with an error."""
        return [result for result in self if not result.ok]

    @property
    def values(self) -> list[Any]:
        """Each item's reply, None for a failed one."""
        return [result.value for result in self]

    def __repr__(self) -> str:
        return f"<BatchResult {len(self)} items: {len(self.ok)} ok, {len(self.failed)} failed>"

    @guarded
    def _repr_html_(self) -> str:
        return batch_html(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython's plain text: the repr, then a row per item."""
        printer.text(batch_text(self))


@dataclass(frozen=True)
class _Item:
    index: int
    key: str | int
    payload: Any
    """What the call gets: the item, without its ``id`` key for chat and run items."""
    problem: InvalidRequestError | None = None


def _chat_call(client: Any, request: Mapping[str, Any] | RequestModel) -> Any:
    if isinstance(request, RequestModel):
        return client.chat.completions.create(request)
    if request.get("stream"):
        raise InvalidRequestError(
            [Violation("stream", request["stream"], "a batch collects whole replies; leave it out")]
        )
    return client.chat.completions.create(**request)


def _run_call(client: Any, request: Mapping[str, Any] | RequestModel) -> Any:
    if isinstance(request, RequestModel):
        return client.run(request)
    rest = {name: value for name, value in request.items() if name not in ("model", "inputs")}
    return client.run(request.get("model"), request.get("inputs"), **rest)


_CALLS: dict[str, Callable[[Any, Any], Any]] = {"chat": _chat_call, "run": _run_call}
_SHAPES = {
    "chat": "a dict of chat.completions.create keywords or a ChatCompletionCreateRequest",
    "run": 'a dict {"model": ..., "inputs": {...}} or a RunRequest',
}


def _items(raw: Iterable[Any], kind: str, custom: bool) -> list[_Item]:
    """Key every item; a bad item gets its error here, a duplicate key stops the batch."""
    items: list[_Item] = []
    seen: set[Hashable] = set()
    for index, item in enumerate(raw):
        key: str | int = index
        problem = None
        if isinstance(item, Mapping) and "id" in item:
            given = item["id"]
            if isinstance(given, (str, int)) and not isinstance(given, bool):
                key = given
            else:
                problem = Violation(f"items[{index}].id", given, "an id is a str or an int")
        if key in seen:
            raise InvalidRequestError(
                [
                    Violation(
                        f"items[{index}].id",
                        key,
                        "ids must be unique (the index is the id of an item without one)",
                    )
                ]
            )
        seen.add(key)
        payload = item
        if not custom:
            if isinstance(item, Mapping):
                payload = {name: value for name, value in item.items() if name != "id"}
            elif not isinstance(item, RequestModel):
                problem = Violation(f"items[{index}]", item, f"a {kind} item is {_SHAPES[kind]}")
        error = InvalidRequestError([problem]) if problem else None
        items.append(_Item(index, key, payload, error))
    return items


class _Credits:
    """Credits spent, from what the replies say."""

    def __init__(self, balance: float | None) -> None:
        self.start = balance
        self.lowest: float | None = None
        self.billed = 0.0
        self.told = False

    def observe(self, value: Any) -> None:
        billed = getattr(getattr(value, "usage", None), "credits", None)
        if isinstance(billed, (int, float)):
            self.billed += billed
            self.told = True
            return
        remaining = getattr(value, "remaining_credits", None)
        if isinstance(remaining, (int, float)):
            self.told = True
            self.start = remaining if self.start is None else max(self.start, remaining)
            self.lowest = remaining if self.lowest is None else min(self.lowest, remaining)

    @property
    def spent(self) -> float | None:
        if not self.told:
            return None
        fall = 0.0 if self.start is None or self.lowest is None else self.start - self.lowest
        return round(self.billed + max(0.0, fall), 10)


def _in_notebook() -> bool:
    ipython = sys.modules.get("IPython")
    shell = getattr(ipython, "get_ipython", lambda: None)() if ipython else None
    return type(shell).__name__ == "ZMQInteractiveShell"


def _bar_module() -> str:
    """tqdm's widget bar in a notebook with ipywidgets; its text bar elsewhere (quietly, where
    ``tqdm.auto`` would warn that ipywidgets is missing)."""
    if _in_notebook() and importlib.util.find_spec("ipywidgets") is not None:
        return "tqdm.notebook"
    return "tqdm"


def _open_bar(progress: bool | ProgressBar | None, total: int, done: int) -> ProgressBar | None:
    """The bar to show: None for none, tqdm's (notebook-aware) for True, or the caller's."""
    if progress is None:
        stderr_tty = sys.stderr is not None and sys.stderr.isatty()
        shown = importlib.util.find_spec("tqdm") is not None and (stderr_tty or _in_notebook())
        progress = shown or False
    if progress is False:
        return None
    if progress is True:
        tqdm = require(_bar_module(), "progress", "a batch's progress bar").tqdm
        bar: ProgressBar = tqdm(total=total, initial=done, unit="item", desc="batch")
        return bar
    if done:
        progress.update(done)
    return progress


class _Pause:
    """When new requests may go again, after a rate limit asked for a wait beyond the cap.

    ``epoch`` counts the pauses, so a 429 can tell whether its request went out before the
    latest pause began."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.resume_at = float("-inf")
        self.epoch = 0
        self._lock = threading.Lock()

    def begin(self, seconds: float, epoch: int) -> bool:
        """Pause for ``seconds`` from now, unless a pause began after the request of ``epoch``
        went out (that pause already waits out the window it was refused in); True when it
        paused."""
        with self._lock:
            if epoch != self.epoch:
                return False
            self.resume_at = max(self.resume_at, self.clock() + seconds)
            self.epoch += 1
            return True

    def after(self, epoch: int) -> tuple[float, int]:
        """Once a pause of ``epoch`` has been slept out: nothing left if no other pause began
        meanwhile (a sleep that does not move the clock, as in tests, still ends the wait),
        else the new pause's time left and epoch."""
        left, now_epoch = self.remaining()
        return (0.0, epoch) if now_epoch == epoch else (left, now_epoch)

    def remaining(self) -> tuple[float, int]:
        """The seconds the pause has left, and the epoch a request sent now goes out in
        (read together: a pause begun between the two would pass for one already waited)."""
        with self._lock:
            return max(0.0, self.resume_at - self.clock()), self.epoch

    def waits(self) -> _PauseWaits:
        """The sleeps that wait the current pause out, for a worker about to send."""
        return _PauseWaits(self)


class _PauseWaits:
    """Iterate to get each sleep (in seconds) that waits the pause out, none when there is no
    pause; then ``epoch`` is the one the request goes out in. The drivers only sleep."""

    def __init__(self, pause: _Pause) -> None:
        self._pause = pause
        self.left, self.epoch = pause.remaining()

    def __iter__(self) -> Iterator[float]:
        while self.left > 0:
            yield self.left
            self.left, self.epoch = self._pause.after(self.epoch)


class _BatchRun:
    """A batch's state, shared by every driver: items, results, checkpoint, bar, credits.

    ``balance`` is the client's credits before the batch, when known."""

    def __init__(
        self,
        balance: float | None,
        items: Iterable[Any],
        kind: BatchKind,
        call: Callable[[Any, Any], Any] | None,
        checkpoint: str | PathLike[str] | None,
        progress: bool | ProgressBar | None,
        concurrency: int,
        clock: Callable[[], float],
    ) -> None:
        if kind not in _CALLS:
            raise InvalidRequestError([Violation("kind", kind, "one of 'chat', 'run'")])
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise InvalidRequestError(
                [Violation("concurrency", concurrency, "an int of at least 1")]
            )
        if call is not None and not callable(call):
            raise InvalidRequestError(
                [Violation("call", call, "a function (client, item) -> reply")]
            )
        self.call = call or _CALLS[kind]
        self.items = _items(items, kind, custom=call is not None)
        self.results: list[ItemResult | None] = [None] * len(self.items)
        self.checkpoint = (
            Checkpoint(checkpoint, [item.key for item in self.items]) if checkpoint else None
        )
        done = self.checkpoint.done if self.checkpoint else {}
        for item in self.items:
            if item.key in done:
                value, error = done[item.key]
                self.results[item.index] = ItemResult(item.index, item.key, value, error, True)
        self.pending = [item for item in self.items if item.key not in done]
        self.failed = sum(1 for r in self.results if r is not None and not r.ok)
        self.succeeded = 0
        """Items that got their reply in this run: a pause that let some through was not in
        vain for an item refused again after it (see `next_try`)."""
        self.credits = _Credits(balance)
        self.pause = _Pause(clock)
        self._lock = threading.Lock()
        self.bar: ProgressBar | None = None
        self._owns_bar = progress is None or progress is True
        try:
            self.bar = _open_bar(progress, len(self.items), len(self.items) - len(self.pending))
        except BaseException:
            self.close()
            raise

    def next_try(self, error: BaseException, epoch: int, paused_at: int) -> int | None:
        """Whether an item goes again after ``error``: None to give it up, else the new
        ``paused_at`` (the `succeeded` count when the item last paused the batch; -1 before it
        ever did). Only a rate limit whose reply asked for a wait the client did not sit out
        (beyond its retry cap, or with no retry left) is tried again. A 429 for a request that
        went out before the latest pause began (``epoch``) was refused in the window that pause
        waits out: it goes again as it was. Otherwise it pauses the batch and the item goes
        again, unless its last pause let no item through (the gateway keeps refusing): an item
        whose new window was taken by the other workers waits for the next one."""
        if not isinstance(error, RateLimitError) or error.retry_after is None:
            return None
        if not self.pause.begin(error.retry_after, epoch):
            return paused_at
        succeeded = self.succeeded
        if succeeded == paused_at:
            return None
        return succeeded

    def call_item(self, client: Any, item: _Item) -> Any:
        """Send ``item`` with ``client`` (an item refused up front raises its error instead)."""
        if item.problem is not None:
            raise item.problem
        return self.call(client, item.payload)

    def settle(
        self, item: _Item, value: Any, error: Exception | None, epoch: int, paused_at: int
    ) -> int | None:
        """After a try of ``item`` sent in ``epoch``: None once its outcome is recorded, else
        (it goes again after a rate limit) the ``paused_at`` of its next try."""
        if error is not None and (tried := self.next_try(error, epoch, paused_at)) is not None:
            return tried
        self.finish(item, value, error)
        return None

    def finish(self, item: _Item, value: Any, error: BaseException | None) -> None:
        """Record an item's outcome: results, checkpoint line, credits, bar."""
        with self._lock:
            self.results[item.index] = ItemResult(item.index, item.key, value, error)
            if self.checkpoint is not None:
                self.checkpoint.record(item.key, value, error, request=item.payload)
            if error is None:
                self.succeeded += 1
                self.credits.observe(value)
            else:
                self.failed += 1
            if self.bar is not None:
                postfix: dict[str, object] = {"failed": self.failed}
                if self.credits.spent is not None:
                    postfix["credits"] = f"{self.credits.spent:.4g}"
                self.bar.set_postfix(postfix, refresh=False)
                self.bar.update(1)

    def close(self) -> None:
        if self.checkpoint is not None:
            self.checkpoint.close()
        if self.bar is not None and self._owns_bar:
            self.bar.close()

    def outcome(self) -> BatchResult:
        results = BatchResult(result for result in self.results if result is not None)
        results.credits_spent = self.credits.spent
        return results


# -- the sync driver ------------------------------------------------------------------------


def run_batch(
    client: Client,
    items: Iterable[Any],
    *,
    concurrency: int = 8,
    kind: BatchKind = "chat",
    call: Callable[[Client, Any], Any] | None = None,
    checkpoint: str | PathLike[str] | None = None,
    progress: bool | ProgressBar | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> BatchResult:
    """Send every item, at most ``concurrency`` at a time (threads); the outcomes in input order.

    ``items`` are `ChatCompletionCreateRequest`\\ s or dicts of ``chat.completions.create``
    keywords, or with ``kind="run"`` `RunRequest`\\ s or dicts ``{"model": ..., "inputs":
    {...}}`` for ``client.run``; ``call(client, item)`` sends items your own way instead. An
    ``id`` key names an item (else its index) and is not sent. ``checkpoint`` is a JSON-lines
    file, a line per finished item with its ``request`` (the JSON body, when it can be
    written) and reply or error: items it holds are not sent again. ``progress``: a
    bar (tqdm) by default when tqdm is installed and stderr is a terminal or in a notebook;
    False for none, True to require it, or a tqdm-like object. ``sleep`` and ``clock`` time
    the pause after a long rate limit.

    Ctrl-C lets the requests in flight finish (they are paid for) and record their lines,
    then re-raises.
    """
    check_client_kind(client, "run_batch", asynchronous=False, call=call)
    batch = _BatchRun(
        client.remaining_credits, items, kind, call, checkpoint, progress, concurrency, clock
    )
    gate = threading.Lock()

    def send(item: _Item) -> None:
        paused_at: int | None = -1
        while paused_at is not None:
            with gate:  # one worker sleeps a pause out; the others then find it over
                waits = batch.pause.waits()
                for seconds in waits:
                    sleep(seconds)
            value, error = None, None
            try:
                value = batch.call_item(client, item)
            except Exception as exc:
                error = exc
            paused_at = batch.settle(item, value, error, waits.epoch, paused_at)

    executor = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="aigateway-batch")
    try:
        futures = [executor.submit(send, item) for item in batch.pending]
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        for future in done:
            future.result()  # a KeyboardInterrupt (or other BaseException) from a call
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
        batch.close()
    return batch.outcome()


# -- the async driver -----------------------------------------------------------------------


async def anyio_sleep(seconds: float) -> None:
    import anyio

    await anyio.sleep(seconds)


async def arun_batch(
    client: AsyncClient,
    items: Iterable[Any],
    *,
    concurrency: int = 32,
    kind: BatchKind = "chat",
    call: Callable[[AsyncClient, Any], Awaitable[Any]] | None = None,
    checkpoint: str | PathLike[str] | None = None,
    progress: bool | ProgressBar | None = None,
    sleep: Callable[[float], Awaitable[None]] = anyio_sleep,
    clock: Callable[[], float] = time.monotonic,
) -> BatchResult:
    """`run_batch` for an `AsyncClient`: at most ``concurrency`` items at a time in an anyio
    task group (asyncio or trio). Cancelling it cancels the requests in flight; the checkpoint
    keeps only complete lines."""
    import anyio

    check_client_kind(client, "arun_batch", asynchronous=True)
    batch = _BatchRun(
        client.remaining_credits, items, kind, call, checkpoint, progress, concurrency, clock
    )
    gate = anyio.Lock()
    limiter = anyio.CapacityLimiter(concurrency)

    async def send(item: _Item) -> None:
        async with limiter:
            paused_at: int | None = -1
            while paused_at is not None:
                async with gate:
                    waits = batch.pause.waits()
                    for seconds in waits:
                        await sleep(seconds)
                value, error = None, None
                try:
                    reply = batch.call_item(client, item)
                    value = await reply if inspect.isawaitable(reply) else reply
                except Exception as exc:
                    error = exc
                paused_at = batch.settle(item, value, error, waits.epoch, paused_at)

    try:
        async with anyio.create_task_group() as group:
            for item in batch.pending:
                group.start_soon(send, item)
    finally:
        batch.close()
    return batch.outcome()
