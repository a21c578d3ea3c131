"""Batches on a Ray cluster: `run_batch`'s items, results and checkpoint, sent by Ray actors.

    results = run_batch_on_ray(requests, client_options={"api_key": ..., "base_url": ...})

The driver (the process calling it) keys and checks the items, skips those its checkpoint
holds, and sends the rest to a pool of Ray actors (``Dataset.map_batches`` with an actor class)
a few at a time. Each actor holds one `Client` built from ``client_options`` for its lifetime
and sends its share with `run_batch` (per-item errors, the pause after a long rate limit). The
outcomes stream back to the driver, which writes the checkpoint line of each as it arrives and
returns them in input order as a `BatchResult`.

A worker that dies: Ray Data restarts the actor and runs its unfinished share again (as often
as it takes: an item that kills every worker sending it is tried forever). Every item
carries an idempotency key fixed for the whole call, so an item whose first attempt reached the
gateway before the worker died is replayed by the gateway, not performed (or charged) twice.
"""

from __future__ import annotations

import inspect
import os
import pickle
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from os import PathLike
from typing import TYPE_CHECKING, Any, Literal

from aigateway._optional import require
from aigateway.errors import InvalidRequestError, RecordedError, Violation
from aigateway.helpers._checkpoint import decode_value, encode_value
from aigateway.helpers.batch import _CALLS, BatchKind, BatchResult, ProgressBar, _BatchRun

if TYPE_CHECKING:
    from aigateway._client.clients import Client

__all__ = ["run_batch_on_ray"]


def run_batch_on_ray(
    requests: Iterable[Mapping[str, Any]] | Any,
    *,
    client_options: Mapping[str, Any],
    concurrency: int = 2,
    batch_size: int = 4,
    kind: BatchKind = "chat",
    checkpoint: str | PathLike[str] | None = None,
    progress: bool | ProgressBar | None = None,
) -> BatchResult:
    """`run_batch` on Ray: ``concurrency`` actors, each with one ``Client(**client_options)``.

    ``requests`` is a list of request dicts, as `run_batch` takes them (an ``id`` key names an
    item), or a Ray Data ``Dataset`` of such rows (read on the driver: Arrow gives a row every
    column, so keys whose value is None are dropped). ``client_options`` are `Client`'s
    keyword arguments, shipped to the actors as they are, so they must pickle (a
    ``shared_state`` object does; a ``transport`` does not). Each actor sends ``batch_size``
    items at a time, all at once. ``checkpoint`` and ``progress`` are `run_batch`'s, handled
    on the driver: the checkpoint file is written as outcomes arrive, and a rerun skips what it
    holds. Needs the ``ray`` extra and a Ray started with ``ray.init()`` (or started for you).
    """
    options = _check_options(client_options, concurrency, batch_size)
    ray_data: Any = require("ray.data", "ray", "a batch on Ray")  # Ray's typing is partial
    batch = _BatchRun(
        None,
        _as_items(requests),
        kind=kind,
        call=None,
        checkpoint=checkpoint,
        progress=progress,
        concurrency=concurrency,
        clock=lambda: 0.0,
    )
    try:
        token = uuid.uuid4().hex  # one per call: an item sent again keeps its key
        rows = []
        for item in batch.pending:
            if item.problem is not None:
                batch.finish(item, None, item.problem)
                continue
            payload = dict(item.payload)
            payload.setdefault("idempotency_key", f"batch-{token}-{item.index}")
            rows.append({"index": item.index, "item": pickle.dumps((item.key, payload))})
        if rows:
            outcomes = ray_data.from_items(rows).map_batches(
                _Worker,
                fn_constructor_kwargs={"client_options": options, "kind": kind, "faults": _FAULTS},
                compute=ray_data.ActorPoolStrategy(size=concurrency),
                batch_size=batch_size,
                batch_format="numpy",
            )  # Ray Data restarts a dead actor and runs its unfinished share again
            for row in outcomes.iter_rows():
                index = int(row["index"])
                if batch.results[index] is not None:
                    continue  # already in: an outcome is recorded once
                value, error = _unpack(bytes(row["outcome"]))
                batch.finish(batch.items[index], value, error)
    finally:
        batch.close()
    return batch.outcome()


@dataclass(frozen=True)
class _Fault:
    """Tests only: the actor sending item ``item_id`` exits at once, the first time (the flag
    file ``flag`` records that it happened), ``before`` or ``after`` sending it."""

    item_id: str | int
    flag: str
    when: Literal["before", "after"] = "after"

    def strike(self, key: str | int, when: str) -> None:
        if key != self.item_id or when != self.when:
            return
        try:
            os.close(os.open(self.flag, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
        os._exit(1)


_FAULTS: tuple[_Fault, ...] = ()
"""Tests only: the faults the workers of the next batch act out."""


def _check_options(
    client_options: Mapping[str, Any], concurrency: int, batch_size: int
) -> dict[str, Any]:
    """The options as a dict, after checking them: Client's keywords, picklable."""
    from aigateway._client.clients import Client

    if not isinstance(client_options, Mapping):
        raise InvalidRequestError(
            [Violation("client_options", client_options, "a dict of Client keyword arguments")]
        )
    known = set(inspect.signature(Client.__init__).parameters) - {"self"}
    problems = [
        Violation(f"client_options[{name!r}]", value, f"one of Client's keywords: {sorted(known)}")
        for name, value in client_options.items()
        if name not in known
    ]
    for name, value in (("concurrency", concurrency), ("batch_size", batch_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            problems.append(Violation(name, value, "an int of at least 1"))
    if problems:
        raise InvalidRequestError(problems)
    options = dict(client_options)
    try:
        pickle.dumps(options)
    except Exception as exc:
        raise InvalidRequestError(
            [
                Violation(
                    "client_options",
                    "(not shown)",
                    f"must pickle, to be sent to the Ray workers ({exc})",
                )
            ]
        ) from None
    return options


def _plain(value: Any) -> Any:
    """A row from Ray Data as plain Python: lists for arrays, no None-valued keys."""
    if isinstance(value, Mapping):
        return {name: _plain(item) for name, item in value.items() if item is not None}
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return _plain(value.tolist())
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def _as_items(requests: Any) -> list[Any]:
    """The items of a list, or of a Ray Data Dataset (read to the driver)."""
    dataset_type = require("ray.data", "ray", "a batch on Ray").Dataset
    if isinstance(requests, dataset_type):
        return [_plain(row) for row in requests.take_all()]
    if isinstance(requests, (str, bytes, Mapping)) or not isinstance(requests, Iterable):
        raise InvalidRequestError(
            [Violation("requests", requests, "a list of request dicts or a Ray Data Dataset")]
        )
    return list(requests)


def _pack(value: Any, error: BaseException | None) -> bytes:
    """One outcome, for the trip back to the driver: pickled whole when it can be (replies
    and aigateway errors are), else in the checkpoint's JSON form."""
    try:
        return pickle.dumps(("pickle", value, error))
    except Exception:
        pass
    if error is not None:
        status = getattr(error, "status_code", None)
        return pickle.dumps(
            ("error", type(error).__name__, str(error), status if isinstance(status, int) else None)
        )
    encoded = encode_value(value)
    if encoded is None:
        return pickle.dumps(("json", "json", repr(value)))
    return pickle.dumps(("json", *encoded))


def _unpack(data: bytes) -> tuple[Any, BaseException | None]:
    form, *rest = pickle.loads(data)
    if form == "pickle":
        return rest[0], rest[1]
    if form == "error":
        return None, RecordedError(*rest)
    return decode_value(rest[0], rest[1]), None


class _Worker:
    """A Ray actor's state: one client for its lifetime; each call sends a share of items."""

    def __init__(
        self, client_options: dict[str, Any], kind: str, faults: tuple[_Fault, ...] = ()
    ) -> None:
        from aigateway._client.clients import Client

        self.client = Client(**client_options)
        self.send = _CALLS[kind]
        self.faults = faults

    def call(self, client: Client, entry: tuple[str | int, Any]) -> Any:
        key, payload = entry
        for fault in self.faults:
            fault.strike(key, "before")
        value = self.send(client, payload)
        for fault in self.faults:
            fault.strike(key, "after")
        return value

    # Ray Data hands over a batch as a dict of numpy columns (Ray is typed loosely: Any).
    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        import numpy

        from aigateway.helpers.batch import run_batch

        entries = [pickle.loads(data) for data in batch["item"]]
        results = run_batch(
            self.client,
            entries,
            concurrency=len(entries),
            call=self.call,
            progress=False,
        )
        outcomes = numpy.empty(len(results), dtype=object)
        outcomes[:] = [_pack(result.value, result.error) for result in results]
        return {"index": batch["index"], "outcome": outcomes}

    def __del__(self) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            client.close()
