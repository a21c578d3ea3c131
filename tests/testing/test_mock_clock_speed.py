"""An accelerated mock clock: a served mock whose rate-limit minutes pass in wall seconds.

The wall clock the `MockClock` follows is injected, so these tests move it by hand and never
sleep: a served mock at speed 60 opens a new window after one (fake) wall second.
"""

from __future__ import annotations

import math

import httpx
import pytest

from aigateway import cli
from aigateway.testing import MockClock, MockGateway

pytest.importorskip("uvicorn")

WALL_START = 1_800_000_000.0


class FakeWall:
    """A wall clock that moves only when the test says so."""

    def __init__(self) -> None:
        self.time = WALL_START

    def __call__(self) -> float:
        return self.time


def test_an_accelerated_clock_runs_speed_times_as_fast_from_the_call() -> None:
    wall = FakeWall()
    clock = MockClock(wall=wall)
    clock.follow_wall_clock(speed=60)
    assert clock.now() == WALL_START  # jumps to the real time, as at speed 1
    assert clock.speed == 60
    wall.time += 1.5
    assert clock.now() == WALL_START + 90
    clock.advance(10)  # still settable
    assert clock.now() == WALL_START + 100
    clock.set(5)
    wall.time += 1
    assert clock.now() == 65
    assert "x60" in repr(clock)


def test_changing_pace_keeps_the_time_and_freezing_stops_it() -> None:
    wall = FakeWall()
    clock = MockClock(wall=wall)
    clock.follow_wall_clock()
    wall.time += 2
    clock.follow_wall_clock(speed=10)  # already following: no jump, only a new pace
    assert clock.now() == WALL_START + 2
    wall.time += 3
    assert clock.now() == WALL_START + 32
    clock.freeze()
    wall.time += 100
    assert clock.now() == WALL_START + 32
    assert clock.manual


@pytest.mark.parametrize("speed", [0, -1, math.inf, math.nan])
def test_a_speed_that_is_not_a_finite_positive_number_is_a_value_error(speed: float) -> None:
    clock = MockClock()
    with pytest.raises(ValueError, match=r"speed is a finite number above 0.*got"):
        clock.follow_wall_clock(speed)
    assert clock.manual  # unchanged


def test_a_speed_that_is_not_a_number_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="speed is a number"):
        MockClock().follow_wall_clock("fast")  # type: ignore[arg-type]


def test_a_served_mock_at_speed_60_opens_a_new_window_after_one_wall_second() -> None:
    wall = FakeWall()
    gateway = MockGateway(rate_limits="free_plan", clock=MockClock(wall=wall))  # 10 a minute
    headers = {"Authorization": f"Bearer {gateway.api_key}"}
    with (
        gateway.serve(clock_speed=60) as url,
        httpx.Client(base_url=url, headers=headers) as http,
    ):
        assert gateway.clock.speed == 60
        statuses = [http.get("/models").status_code for _ in range(11)]
        refused = http.get("/models")
        wall.time += 0.5  # half a wall second: 30 mock seconds, the window still closed
        half = http.get("/models")
        wall.time += 0.51
        after = http.get("/models")
    assert statuses == [200] * 10 + [429]
    assert 1 <= int(refused.headers["retry-after"]) <= 60  # in mock seconds
    assert int(refused.headers["x-ratelimit-reset"]) <= WALL_START + 60
    assert half.status_code == 429
    assert after.status_code == 200
    assert gateway.clock.manual  # stopped where it was when the server stopped
    assert gateway.clock.now() == pytest.approx(WALL_START + 60.6)


def test_serving_again_restores_the_former_pace() -> None:
    wall = FakeWall()
    clock = MockClock(wall=wall)
    clock.follow_wall_clock(speed=5)
    gateway = MockGateway(clock=clock)
    with gateway.serve(clock_speed=100):
        wall.time += 1
        assert clock.now() == WALL_START + 100
    assert clock.speed == 5
    assert not clock.manual
    wall.time += 1
    assert clock.now() == WALL_START + 105


@pytest.mark.parametrize("speed", [0, -2.5, math.inf])
def test_serve_refuses_a_bad_clock_speed_before_binding(speed: float) -> None:
    gateway = MockGateway()
    with pytest.raises(ValueError, match="speed"), gateway.serve(clock_speed=speed):
        pass
    assert gateway.clock.manual


def test_serve_refuses_a_clock_speed_on_a_manual_clock() -> None:
    gateway = MockGateway()
    with (
        pytest.raises(ValueError, match="clock='manual' takes no clock_speed"),
        gateway.serve(clock="manual", clock_speed=60),
    ):
        pass


def test_the_command_serves_an_accelerated_clock(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []

    def look_then_ctrl_c() -> None:
        seen.append(capsys.readouterr().out)
        raise KeyboardInterrupt

    speeds: list[float] = []
    real = MockClock.follow_wall_clock

    def spy(self: MockClock, speed: float = 1.0) -> None:
        speeds.append(speed)
        real(self, speed)

    monkeypatch.setattr(cli, "wait_until_interrupted", look_then_ctrl_c)
    monkeypatch.setattr(MockClock, "follow_wall_clock", spy)
    assert cli.main(["mock", "serve", "--port", "0", "--clock-speed", "120"]) == 0
    assert speeds[0] == 120
    assert "(rate limits: free, clock x120)" in seen[0]


@pytest.mark.parametrize("value", ["0", "-1", "inf", "nan"])
def test_the_command_refuses_a_bad_clock_speed_in_one_line_and_status_2(
    capsys: pytest.CaptureFixture[str], value: str
) -> None:
    assert cli.main(["mock", "serve", "--port", "0", "--clock-speed", value]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("aigateway: error: ")
    assert "speed is a finite number above 0" in err
