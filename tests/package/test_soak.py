"""The soak run at a tiny size: no errors beyond the injected ones, nothing left open, and
the mock's ledger equal to the client's. Speed is never asserted."""

from __future__ import annotations

import pytest

pytest.importorskip("uvicorn")

from bench.soak import FD_TOLERANCE, render, soak


def test_a_tiny_soak_leaks_nothing_and_both_ledgers_agree() -> None:
    report = soak(200, 20, ["--concurrency", "50", "--fault-rate", "0.25", "--time-limit", "60"])

    assert report.problems == [], render(report)
    assert [phase.error_count for phase in report.phases] == [0, 0, 5]
    assert report.phases[2].errors == {"ServiceUnavailableError": 5}
    assert abs(report.fds_after - report.fds_before) <= FD_TOLERANCE
    assert report.tcp_during > 0
    assert report.tcp_after <= report.tcp_before
    # every call but the 5 refused ones was performed, and counted alike on both sides
    assert report.mock_requests == report.client_requests == 200 + 20 + 20 - 5 + 1
    assert report.mock_credits == report.client_credits > 0
