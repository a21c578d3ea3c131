"""The resilience scorecard: aigateway passes every fault the mock can inject, over HTTP."""

from __future__ import annotations

import pytest

pytest.importorskip("uvicorn")

from aigateway.testing import scorecard


def test_every_fault_row_passes_for_aigateway() -> None:
    rows = scorecard.run_scorecard("aigateway")

    failed = [row for row in rows if not row.passed]
    assert failed == [], scorecard.render(failed)
    assert len(rows) == len(scorecard.SCENARIOS)
    assert {row.attempts for row in rows} == {1, 2, 3}


def test_every_kind_of_fault_the_mock_injects_has_a_row() -> None:
    from aigateway.testing import MockGateway

    gateway = MockGateway()
    for scenario in scorecard.SCENARIOS:
        scenario.setup(gateway)
    used = {fault.kind for fault in gateway.faults.pending}
    methods = {"fail", "drop", "drop_after", "drop_mid_stream", "truncate", "malformed"}
    assert used >= methods | {"malformed_chunk", "latency", "chunk_latency"}


def test_the_markdown_table() -> None:
    slow_free = [s for s in scorecard.SCENARIOS if s.fault in ("500 once", "truncated JSON (200)")]
    rows = scorecard.run_scorecard("aigateway", slow_free)
    table = scorecard.render(rows, markdown=True)
    assert table.splitlines()[0] == "| fault | expected | observed | attempts | time |  |"
    assert "| 500 once | retried, then succeeds (2 attempts) | succeeded | 2 |" in table


def test_a_row_fails_when_the_outcome_differs() -> None:
    wrong = scorecard.Scenario("500 once", lambda g: g.faults.fail(500, times=3), False, "ok", 2)
    (row,) = scorecard.run_scorecard("aigateway", [wrong])
    assert not row.passed
    assert row.observed == "InternalServerError"
    assert row.attempts == 3
