"""The tool loop, written once without I/O, and the two drivers that perform it.

`run_rounds` is a generator, like the request path's flow: it yields the keywords of the next
``chat.completions.create`` call and gets the completion back, then yields the round's `Job`s
(tool calls, their arguments already validated) and gets their results back, as strings.
`drive_sync` runs the jobs one after another; `drive_async` runs them concurrently, sync
tools in worker threads.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

from pydantic import BaseModel, ValidationError
from pydantic_core import to_json

from aigateway._logging import logger
from aigateway.errors import MaxRoundsExceededError
from aigateway.types.chat import message_param

if TYPE_CHECKING:
    from aigateway.helpers.tools import Tool
    from aigateway.types import ChatCompletion, Message
    from aigateway.types.chat import FunctionCall

__all__ = [
    "Job",
    "ToolRunResult",
    "drive_async",
    "drive_sync",
    "run_rounds",
]


@dataclass(frozen=True)
class ToolRunResult:
    """How a tool loop ended: the final completion (the model's answer), every message of
    the conversation (those given, then each assistant reply and tool result, ending with the
    answer), and how many model calls it took."""

    completion: ChatCompletion
    messages: list[Any]
    rounds: int

    @property
    def text(self) -> str:
        """The answer's text (the final completion's first choice)."""
        return self.completion.text


@dataclass
class Job:
    """One tool call of a reply: the tool and its validated arguments, or, when the call
    cannot run (unknown tool, bad arguments), its result already written."""

    name: str
    call_id: str | None
    """The tool call's id; None for a legacy ``function_call``."""
    tool: Tool[..., Any] | None = None
    arguments: BaseModel | None = None
    result: str | None = None

    def start(self) -> Any:
        """Call the tool (the result may be awaitable)."""
        assert self.tool is not None
        assert self.arguments is not None
        return self.tool.call_with(self.arguments)

    def succeeded(self, value: object) -> str:
        """The tool's return value as the message content: text as it is, else JSON."""
        if isinstance(value, str):
            return value
        return to_json(value, fallback=str).decode()

    def failed(self, error: Exception) -> str:
        logger.warning("tool %r raised %s", self.name, type(error).__name__, exc_info=error)
        return _error(f"the tool {self.name!r} raised {type(error).__name__}: {error}")

    def message(self, content: str) -> dict[str, Any]:
        """The ``tool`` (or legacy ``function``) message carrying ``content``."""
        if self.call_id is None:
            return {"role": "function", "name": self.name, "content": content}
        return {"role": "tool", "tool_call_id": self.call_id, "content": content}


Step = Union[dict[str, Any], list[Job]]
Flow = Generator[Step, Any, ToolRunResult]


def run_rounds(
    toolbox: Sequence[Tool[..., Any]],
    field: str,
    model: str,
    messages: Sequence[Any],
    max_rounds: int,
    params: dict[str, Any],
) -> Flow:
    """The loop: ask, run the calls, append the reply and the results, until a reply calls
    no tool (returned) or ``max_rounds`` replies did (`MaxRoundsExceededError`)."""
    by_name = {t.name: t for t in toolbox}
    offered = [t.definition if field == "tools" else t.function_definition for t in toolbox]
    history: list[Any] = list(messages)
    for round_number in range(1, max_rounds + 1):
        completion: ChatCompletion = yield {
            **params,
            "model": model,
            "messages": list(history),
            field: offered,
        }
        message = completion.choices[0].message if completion.choices else None
        jobs = _jobs(message, by_name) if message is not None else []
        if not jobs:
            final = [*history, message_param(message)] if message is not None else history
            return ToolRunResult(completion, final, round_number)
        if round_number == max_rounds:
            raise MaxRoundsExceededError(round_number, completion, history)
        results: list[str] = yield jobs
        history.append(message_param(message))
        history.extend(job.message(result) for job, result in zip(jobs, results, strict=True))
    raise AssertionError("unreachable: the last round returns or raises")


def _jobs(message: Message, by_name: dict[str, Tool[..., Any]]) -> list[Job]:
    calls: list[tuple[str | None, FunctionCall]] = [
        (call.id or "", call.function) for call in message.tool_calls or ()
    ]
    if message.function_call is not None:
        calls.append((None, message.function_call))
    return [_job(call_id, call.name, call.arguments, by_name) for call_id, call in calls]


def _job(call_id: str | None, name: str, arguments: str, by_name: dict[str, Tool[..., Any]]) -> Job:
    tool = by_name.get(name)
    if tool is None:
        known = ", ".join(repr(n) for n in by_name)
        return Job(
            name, call_id, result=_error(f"there is no tool named {name!r}; the tools are {known}")
        )
    try:
        validated = tool.arguments.model_validate_json(arguments or "{}")
    except ValidationError as exc:
        problems = "; ".join(_problem(error) for error in exc.errors())
        return Job(
            name,
            call_id,
            tool,
            result=_error(f"the arguments do not fit the tool {name!r}: {problems}"),
        )
    return Job(name, call_id, tool, validated)


def _problem(error: Any) -> str:
    where = ".".join(str(part) for part in error["loc"]) or "arguments"
    if error["type"] == "missing":
        return f"{where}: missing"
    return f"{where}: {error['msg']} (got {error['input']!r})"


def _error(text: str) -> str:
    return json.dumps({"error": text}, ensure_ascii=False)


def drive_sync(flow: Flow, create: Callable[..., ChatCompletion]) -> ToolRunResult:
    """Run ``flow`` blocking: model calls through ``create``, tools one after another."""
    step = next(flow)
    while True:
        outcome = create(**step) if isinstance(step, dict) else [_run_blocking(j) for j in step]
        try:
            step = flow.send(outcome)
        except StopIteration as stop:
            result: ToolRunResult = stop.value
            return result


def _run_blocking(job: Job) -> str:
    if job.result is not None:
        return job.result
    try:
        value = job.start()
        if inspect.isawaitable(value):
            value = _wait_in_portal(value)
    except Exception as exc:
        return job.failed(exc)
    return job.succeeded(value)


def _wait_in_portal(awaitable: Awaitable[Any]) -> Any:
    """An async tool's result on the sync client, from an event loop in a worker thread (so
    it works even when this thread runs one)."""
    from anyio.from_thread import start_blocking_portal

    async def wait() -> Any:
        return await awaitable

    with start_blocking_portal() as portal:
        return portal.call(wait)


async def drive_async(
    flow: Flow, create: Callable[..., Awaitable[ChatCompletion]]
) -> ToolRunResult:
    """Run ``flow`` awaited: model calls through ``create``, a round's tools concurrently."""
    step = next(flow)
    while True:
        outcome = await create(**step) if isinstance(step, dict) else await _run_together(step)
        try:
            step = flow.send(outcome)
        except StopIteration as stop:
            result: ToolRunResult = stop.value
            return result


async def _run_together(jobs: list[Job]) -> list[str]:
    import anyio

    results = [""] * len(jobs)

    async def run(index: int, job: Job) -> None:
        results[index] = await _run_awaited(job)

    async with anyio.create_task_group() as group:
        for index, job in enumerate(jobs):
            group.start_soon(run, index, job)
    return results


async def _run_awaited(job: Job) -> str:
    import anyio.to_thread

    if job.result is not None:
        return job.result
    try:
        if job.tool is not None and job.tool.is_async:
            value = job.start()
        else:
            value = await anyio.to_thread.run_sync(job.start)
        if inspect.isawaitable(value):
            value = await value
    except Exception as exc:
        return job.failed(exc)
    return job.succeeded(value)
