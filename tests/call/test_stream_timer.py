"""The stream timer (`aigateway._call.timeouts.StreamTimer`) checks a read with one comparison until
a limit could be near; these tests hold it to the limits as stated, for any sequence of reads."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from aigateway._call.timeouts import Deadline, StreamTimer


def expected_overdue(
    now: float,
    start: float,
    last_event: float | None,
    idle: float | None,
    deadline: float | None,
    first_event: float | None,
) -> str | None:
    """Which limit a read at ``now`` has passed, by the definitions of the three limits."""
    if deadline is not None and now - start > deadline:
        return "deadline"
    if last_event is None and first_event is not None:
        return "stream_first_event_timeout" if now - start > first_event else None
    since = start if last_event is None else last_event
    return "stream_idle_timeout" if idle is not None and now - since > idle else None


_LIMIT = st.one_of(st.none(), st.sampled_from([0.0, 0.5, 1.0, 2.5, 10.0, 300.0]))
_READS = st.lists(
    st.tuples(st.sampled_from([0.0, 1e-9, 1e-7, 0.25, 0.5, 1.0, 2.5, 3.0, 12.0]), st.booleans()),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(
    idle=_LIMIT,
    deadline=_LIMIT,
    first_event=_LIMIT,
    start=st.sampled_from([0.0, 0.1, 12345.678, 1e6 + 0.3]),
    reads=_READS,
)
def test_every_read_is_judged_by_the_limits_as_defined(
    idle: float | None,
    deadline: float | None,
    first_event: float | None,
    start: float,
    reads: list[tuple[float, bool]],
) -> None:
    now = [start]

    def clock() -> float:
        return now[0]

    call_deadline = None if deadline is None else Deadline(deadline, clock)
    timer = StreamTimer(idle, call_deadline, clock, first_event_timeout=first_event)
    last_event: float | None = None
    for step, progressed in reads:
        now[0] += step
        want = expected_overdue(now[0], start, last_event, idle, deadline, first_event)
        got = timer.overdue(progressed)
        if want is None:
            assert got is None
            if progressed:
                last_event = now[0]
        else:
            assert got is not None
            assert f"({want}" in got
            assert timer.passed is not None
            assert timer.passed[0] == want
            return  # a stream stops at the first limit passed


def test_an_event_after_a_long_first_event_limit_starts_the_shorter_idle_limit() -> None:
    now = [0.0]
    timer = StreamTimer(5.0, None, lambda: now[0], first_event_timeout=60.0)
    now[0] = 30.0
    assert timer.overdue(progressed=True) is None  # the first event, within its 60 s
    now[0] = 34.0
    assert timer.overdue(progressed=False) is None
    now[0] = 35.5  # 5.5 s after that event
    assert "stream_idle_timeout" in (timer.overdue(progressed=False) or "")
