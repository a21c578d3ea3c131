"""Messages typed loosely for type checkers are still checked strictly at run time, and the
typing snippets (checked by pyright and mypy in .ci/typecheck_docs.py) run as written."""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import pytest

from aigateway import AsyncClient, Client, InvalidRequestError
from aigateway.testing import MockGateway

from .conftest import resolve

pytestmark = pytest.mark.anyio

SNIPPETS = sorted((Path(__file__).parent / "typing_snippets").glob("*.py"))


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


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[path.stem for path in SNIPPETS])
def test_snippet_runs(snippet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(snippet), run_name="__main__")
    assert capsys.readouterr().out
