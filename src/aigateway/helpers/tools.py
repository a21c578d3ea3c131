"""Tools: typed Python functions the model can call, and a runner that calls them.

``tool(function)`` reads a function's signature and docstring into a tool definition (the
JSON schema of its parameters comes from pydantic), and keeps the function to run it with
validated arguments. ``run_tools(client, ...)`` (``arun_tools`` on an `AsyncClient`) asks the
model, runs the tools it calls, sends their results back and repeats until the model answers
in text or ``max_rounds`` model calls have been made. The loop itself is written once, without
I/O (`_runner.py`); the two functions here only drive it.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from pydantic import BaseModel, ConfigDict, Field, create_model
from typing_extensions import ParamSpec

from aigateway.errors import InvalidRequestError, MaxRoundsExceededError, Violation
from aigateway.helpers._client_kind import check_client_kind
from aigateway.helpers._runner import (
    Flow,
    ToolRunResult,
    drive_async,
    drive_sync,
    run_rounds,
)

if TYPE_CHECKING:
    from aigateway._client.clients import AsyncClient, Client
    from aigateway.types.chat_params import ChatMessageInput, FunctionDefinitionParam, ToolParam

__all__ = [
    "MaxRoundsExceededError",
    "Tool",
    "ToolRunResult",
    "arun_tools",
    "run_tools",
    "tool",
]

P = ParamSpec("P")
R = TypeVar("R")
M = TypeVar("M", bound=BaseModel)

_ARGS_HEADINGS = ("Args:", "Arguments:", "Parameters:")
_ARG_LINE = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


class Tool(Generic[P, R]):
    """A function the model can call: its name, description and parameters (a JSON schema),
    and the function itself. Calling a `Tool` calls the function, so a decorated function
    still works as before."""

    def __init__(
        self,
        function: Callable[P, R],
        *,
        name: str,
        description: str,
        arguments: type[BaseModel],
        takes_model: bool = False,
    ) -> None:
        self.function = function
        self.name = name
        self.description = description
        self.arguments = arguments
        """The pydantic model that validates the model's arguments."""
        self.is_async = inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
            getattr(function, "__call__", None)  # noqa: B004 (an async callable object)
        )
        self._takes_model = takes_model
        schema = arguments.model_json_schema()
        schema.pop("title", None)
        schema.pop("description", None)  # a model class's docstring: the description already
        self.parameters: dict[str, Any] = schema

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.function(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r}, description={self.description!r})"

    @property
    def function_definition(self) -> FunctionDefinitionParam:
        """The definition in the legacy ``functions`` form: name, description, parameters."""
        definition: FunctionDefinitionParam = {"name": self.name, "parameters": self.parameters}
        if self.description:
            definition["description"] = self.description
        return definition

    @property
    def definition(self) -> ToolParam:
        """The definition as ``tools`` takes it: ``{"type": "function", "function": {...}}``."""
        return {"type": "function", "function": self.function_definition}

    def call_with(self, arguments: BaseModel) -> Any:
        """Run the function with validated ``arguments`` (an instance of `arguments`); the
        result may be awaitable."""
        if self._takes_model:
            return arguments
        values = {name: getattr(arguments, name) for name in type(arguments).model_fields}
        return self.function(**values)  # type: ignore[call-arg]


@overload
def tool(
    function: type[M], *, name: str | None = None, description: str | None = None
) -> Tool[..., M]: ...
@overload
def tool(
    function: Callable[P, R], *, name: str | None = None, description: str | None = None
) -> Tool[P, R]: ...
@overload
def tool(
    function: None = None, *, name: str | None = None, description: str | None = None
) -> Callable[[Callable[P, R]], Tool[P, R]]: ...
def tool(
    function: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
) -> Tool[..., Any] | Callable[[Callable[..., Any]], Tool[..., Any]]:
    """Make a tool of a typed function (sync or async) or of a pydantic model class.

    Use it bare (``@tool``), with options (``@tool(name="weather")``) or as a call
    (``tool(get_weather)``). A function's docstring is the description, and a Google-style
    ``Args:`` section describes each parameter. Every parameter needs a type annotation: one
    without raises `TypeError` here, naming it. A pydantic model class's fields are the
    parameters, and calling it gives the validated model (its JSON is the tool's result).
    """
    if function is None:
        return lambda function: tool(function, name=name, description=description)
    if isinstance(function, Tool):
        return function
    if isinstance(function, type) and issubclass(function, BaseModel):
        doc = inspect.cleandoc(function.__doc__ or "")
        return Tool(
            function,
            name=name or function.__name__,
            description=description if description is not None else doc,
            arguments=function,
            takes_model=True,
        )
    if not callable(function):
        raise TypeError(
            f"tool() takes a function or a pydantic model class, not {type(function).__name__}"
        )
    tool_name = name or getattr(function, "__name__", None)
    if not tool_name or tool_name == "<lambda>":
        raise TypeError("a tool needs a name: pass tool(function, name=...)")
    summary, described = _read_docstring(inspect.getdoc(function) or "")
    return Tool(
        function,
        name=tool_name,
        description=description if description is not None else summary,
        arguments=_arguments_model(function, tool_name, described),
    )


def _arguments_model(
    function: Callable[..., Any], name: str, described: dict[str, str]
) -> type[BaseModel]:
    """A pydantic model of the function's parameters (unknown arguments forbidden)."""
    try:
        signature = inspect.signature(function, eval_str=True)
    except NameError as exc:
        raise TypeError(f"tool {name!r}: cannot resolve a type annotation: {exc}") from exc
    fields: dict[str, Any] = {}
    for parameter in signature.parameters.values():
        where = f"tool {name!r}: the parameter {parameter.name!r}"
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"{where} is *args or **kwargs; a tool's parameters are named")
        if parameter.kind is parameter.POSITIONAL_ONLY:
            raise TypeError(f"{where} is positional-only; a tool's arguments are passed by name")
        if parameter.annotation is parameter.empty:
            raise TypeError(
                f"{where} has no type annotation; the model needs every parameter's type "
                f"(e.g. '{parameter.name}: str')"
            )
        if parameter.name.startswith("_"):
            raise TypeError(f"{where} starts with '_', which pydantic cannot take as a field")
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (
            parameter.annotation,
            Field(default, description=described.get(parameter.name)),
        )
    return create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)


def _read_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The description (the text before any ``Args:``-like section) and each parameter's
    description from a Google-style ``Args:`` section."""
    lines = doc.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() in _ARGS_HEADINGS), None)
    if start is None:
        return _before_sections(lines), {}
    described: dict[str, str] = {}
    current: str | None = None
    indent: int | None = None
    for line in lines[start + 1 :]:
        if not line.strip():
            continue
        depth = len(line) - len(line.lstrip())
        if depth == 0:
            break  # the next section (Returns:, Raises:, ...)
        indent = depth if indent is None else indent
        match = _ARG_LINE.match(line.strip())
        if depth == indent and match:
            current = match.group(1).lstrip("*")
            described[current] = match.group(2).strip()
        elif current is not None:
            described[current] = f"{described[current]} {line.strip()}".strip()
    return _before_sections(lines[:start]), described


def _before_sections(lines: list[str]) -> str:
    """The text up to the first Google-style section heading (``Returns:``, ...)."""
    kept: list[str] = []
    for line in lines:
        if re.fullmatch(r"[A-Z][A-Za-z ]*:", line.strip()) and not line.startswith(" "):
            break
        kept.append(line)
    return "\n".join(kept).strip()


def _toolbox(tools: Sequence[Any], functions: Sequence[Any]) -> tuple[list[Tool[..., Any]], str]:
    """The tools to offer (checked) and the request field that carries them."""
    problems: list[Violation] = []
    if tools and functions:
        problems.append(Violation("functions", "...", "give tools or functions, not both"))
    field, given = ("functions", functions) if functions else ("tools", tools)
    if not given:
        problems.append(Violation("tools", list(given), "at least one tool is needed"))
    toolbox: list[Tool[..., Any]] = []
    for index, item in enumerate(given):
        if isinstance(item, Tool):
            toolbox.append(item)
        elif callable(item):
            toolbox.append(tool(item))
        else:
            problems.append(
                Violation(
                    f"{field}.{index}",
                    item,
                    "a function, a pydantic model class or aigateway.tool(...)",
                )
            )
    names = [t.name for t in toolbox]
    for repeated in sorted({n for n in names if names.count(n) > 1}):
        problems.append(Violation(field, repeated, "tool names must differ"))
    if problems:
        raise InvalidRequestError(problems)
    return toolbox, field


def _rounds(
    model: str,
    messages: Sequence[Any],
    tools: Sequence[Any],
    functions: Sequence[Any],
    max_rounds: int,
    params: dict[str, Any],
) -> Flow:
    """The tool loop (`run_rounds`) of ``run_tools``' arguments, checked before any call."""
    problems = [
        Violation(key, params[key], "the runner makes its own calls; leave it out")
        for key in ("stream", "messages", "model")
        if key in params
    ]
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 1:
        problems.append(Violation("max_rounds", max_rounds, "an integer of 1 or more"))
    if problems:
        raise InvalidRequestError(problems)
    toolbox, field = _toolbox(tools, functions)
    return run_rounds(toolbox, field, model, messages, max_rounds, params)


def run_tools(
    client: Client,
    *,
    model: str,
    messages: Sequence[ChatMessageInput],
    tools: Sequence[Tool[..., Any] | Callable[..., Any]] = (),
    functions: Sequence[Tool[..., Any] | Callable[..., Any]] = (),
    max_rounds: int = 10,
    **params: Any,
) -> ToolRunResult:
    """Ask the model, run the tools it calls, send the results back; repeat until it
    answers in text. Tools run one after another.

    ``tools`` (or the legacy ``functions``) are `Tool`s, typed functions or pydantic model
    classes; other keywords go to every ``chat.completions.create`` call. A tool that raises,
    arguments that do not validate and an unknown tool become that call's result, for the
    model to read. After ``max_rounds`` model calls still asking for tools, raises
    `MaxRoundsExceededError` carrying the conversation.
    """
    check_client_kind(client, "run_tools", asynchronous=False)
    flow = _rounds(model, messages, tools, functions, max_rounds, params)
    return drive_sync(flow, client.chat.completions.create)


async def arun_tools(
    client: AsyncClient,
    *,
    model: str,
    messages: Sequence[ChatMessageInput],
    tools: Sequence[Tool[..., Any] | Callable[..., Any]] = (),
    functions: Sequence[Tool[..., Any] | Callable[..., Any]] = (),
    max_rounds: int = 10,
    **params: Any,
) -> ToolRunResult:
    """`run_tools` on an `AsyncClient`: the tool calls of one reply run concurrently
    (sync tools in worker threads)."""
    check_client_kind(client, "arun_tools", asynchronous=True)
    flow = _rounds(model, messages, tools, functions, max_rounds, params)
    return await drive_async(flow, client.chat.completions.create)
