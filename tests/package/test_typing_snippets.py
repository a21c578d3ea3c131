"""Messages and tools typed loosely for type checkers are still checked strictly at run time,
and the typing snippets (checked by pyright and mypy in .ci/typecheck_docs.py) run as written."""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from typing import Any

import pytest

from aigateway import AsyncClient, ChatCompletion, Client, InvalidRequestError
from aigateway.testing import MockGateway

from .._paths import ROOT
from ..conftest import resolve

pytestmark = pytest.mark.anyio

SNIPPETS = sorted((ROOT / "tests" / "typing_snippets").glob("*.py"))


@pytest.mark.parametrize(
    ("message", "field", "problem"),
    [
        ({"role": "usr", "content": "Hi"}, "messages.0", "unknown role; allowed: one of 'system'"),
        ({"content": "Hi"}, "messages.0", "role"),
        ({"role": "user"}, "messages.0.content", "Field required"),
        ({"role": "tool", "content": "42"}, "messages.0.tool_call_id", "Field required"),
    ],
)
async def test_a_plain_dict_variable_is_checked_before_sending(
    mock_client: Client | AsyncClient,
    gateway: MockGateway,
    message: dict[str, str],
    field: str,
    problem: str,
) -> None:
    history = [message]  # list[dict[str, str]]: accepted by the type checkers, not at run time
    with pytest.raises(InvalidRequestError) as caught:
        await resolve(mock_client.chat.completions.create(model="gpt-4o-mini", messages=history))
    violation = caught.value.violations[0]
    assert violation.field == field
    assert problem in violation.problem
    assert list(gateway.requests) == []  # nothing was sent


async def test_a_bad_dict_among_replies_is_refused_by_every_method(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    reply = await resolve(
        mock_client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}]
        )
    )
    sent = len(gateway.requests)
    history: list[Any] = [reply.choices[0].message, {"role": "robot", "content": "x"}]
    completions = mock_client.chat.completions
    for call in (completions.create, completions.parse, completions.stream):
        with pytest.raises(InvalidRequestError, match=r"messages\.1=.*unknown role"):
            await resolve(call(model="gpt-4o-mini", messages=history))
    assert len(gateway.requests) == sent


WEATHER = {
    "name": "get_weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}
QUESTION = [{"role": "user", "content": "Weather in Paris?"}]


async def test_tools_in_a_plain_dict_variable_are_sent_as_given(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    tools = [{"type": "function", "function": WEATHER}]  # list[dict[str, ...]] for the checkers
    reply = await resolve(
        mock_client.chat.completions.create(model="gpt-4o", messages=QUESTION, tools=tools)
    )
    assert isinstance(reply, ChatCompletion)
    calls = reply.choices[0].message.tool_calls
    assert calls is not None
    assert calls[0].function.name == "get_weather"
    assert json.loads(gateway.requests[-1].body)["tools"] == tools


@pytest.mark.parametrize(
    ("tool", "field", "problem"),
    [
        ({"type": "func", "function": WEATHER}, "tools.0.type", "Input should be 'function'"),
        ({"type": "function"}, "tools.0.function", "Field required"),
        ({"type": "function", "function": {}}, "tools.0.function.name", "Field required"),
        (
            {"type": "function", "function": {"name": "f", "descripton": "x"}},
            "tools.0.function.descripton",
            "Extra inputs are not permitted",
        ),
        ({"type": "function", "function": WEATHER, "extra": 1}, "tools.0.extra", "Extra inputs"),
        (
            {"type": "function", "function": {"name": "f", "strict": "yes"}},
            "tools.0.function.strict",
            "valid boolean",
        ),
        ("get_weather", "tools.0", "valid dictionary"),
    ],
)
async def test_a_bad_tool_in_a_variable_is_refused_before_sending(
    mock_client: Client | AsyncClient,
    gateway: MockGateway,
    tool: object,
    field: str,
    problem: str,
) -> None:
    tools = [tool]
    completions: Any = mock_client.chat.completions  # some of these tools are not even dicts
    for call in (completions.create, completions.stream):
        with pytest.raises(InvalidRequestError) as caught:
            await resolve(call(model="gpt-4o", messages=QUESTION, tools=tools))
        violation = caught.value.violations[0]
        assert violation.field == field
        assert problem in violation.problem
        assert "allowed: a list of {'type': 'function', 'function': {'name'" in violation.problem
    assert list(gateway.requests) == []


async def test_legacy_functions_in_a_variable_are_checked_the_same(
    mock_client: Client | AsyncClient, gateway: MockGateway
) -> None:
    functions = [{"name": "f", "descripton": "a misspelt key is refused, not dropped"}]
    with pytest.raises(InvalidRequestError, match=r"functions\.0\.descripton=.*Extra inputs"):
        await resolve(
            mock_client.chat.completions.create(
                model="gpt-4o", messages=QUESTION, functions=functions
            )
        )
    assert list(gateway.requests) == []


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[path.stem for path in SNIPPETS])
def test_snippet_runs(snippet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(snippet), run_name="__main__")
    assert capsys.readouterr().out
