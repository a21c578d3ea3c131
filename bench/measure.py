"""What the scenarios measure with: series, ratios against targets, results, the plans, and
the round loops.

Interleaving: every round runs every variant once, in an order rotated by one each round, so
drift (other load on the machine, CPU frequency, a warming cache) hits all variants alike.
A variant's figure is the median of its per-round samples, and a ratio is the median of the
per-round (paired) ratios, which cancels most of what one round shares.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from .clients import ANOMALIES, LIBS

T = TypeVar("T")


# -- data ---------------------------------------------------------------------------------


@dataclass
class Series:
    """One quantity of one variant, one sample per round."""

    unit: str
    samples: list[float] = field(default_factory=list)
    higher_is_better: bool = False

    @property
    def median(self) -> float:
        return statistics.median(self.samples) if self.samples else float("nan")


@dataclass
class Ratio:
    """A paired ratio ``numerator / denominator`` (median of the per-round ratios)."""

    name: str
    samples: list[float]
    target: tuple[str, float] | None = None
    """``("<=", 1.25)``: the ratio must be at most 1.25; ``(">=", 5)``: at least 5."""
    note: str = ""
    unit: str = "x"
    """``x`` for a ratio; another unit (``/s``) for an absolute figure with a target."""

    @property
    def median(self) -> float:
        return statistics.median(self.samples) if self.samples else float("nan")

    @property
    def verdict(self) -> str:
        if self.target is None:
            return ""
        if not self.samples:
            return "N/A"
        op, bound = self.target
        ok = self.median <= bound if op == "<=" else self.median >= bound
        return "PASS" if ok else "MISS"


@dataclass
class Result:
    """What a scenario measured: rows of named series, ratios, notes; or why it was skipped."""

    key: str
    title: str
    rows: dict[str, dict[str, Series]] = field(default_factory=dict)
    ratios: list[Ratio] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: str | None = None
    seconds: float = 0.0

    def series(self, row: str, metric: str, unit: str, *, higher: bool = False) -> Series:
        return self.rows.setdefault(row, {}).setdefault(metric, Series(unit, [], higher))

    def ratio(
        self,
        name: str,
        num: Series,
        den: Series,
        target: tuple[str, float] | None = None,
        note: str = "",
    ) -> Ratio:
        paired = [a / b for a, b in zip(num.samples, den.samples, strict=False) if b]
        ratio = Ratio(name, paired, target, note)
        self.ratios.append(ratio)
        return ratio

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "skipped": self.skipped,
            "seconds": round(self.seconds, 2),
            "notes": self.notes,
            "rows": {
                row: {
                    name: {**asdict(series), "median": series.median}
                    for name, series in metrics.items()
                }
                for row, metrics in self.rows.items()
            },
            "ratios": [
                {**asdict(ratio), "median": ratio.median, "verdict": ratio.verdict}
                for ratio in self.ratios
            ],
        }


@dataclass(frozen=True)
class Plan:
    """How much each scenario runs: counts, and a time budget after which rounds stop."""

    quick: bool
    servers_rounds: int
    servers_requests: int
    seq_rounds: int
    seq_requests: int
    seq_budget: float
    stream_rounds: int
    stream_chunks: int
    stream_budget: float
    concurrent_rounds: int
    concurrent_batches: int
    concurrency: int
    concurrent_budget: float
    startup_runs: int
    startup_budget: float
    rss_reps: int
    rss_lengths: tuple[int, int]
    rss_libs_long: tuple[str, ...]
    mock_rounds: int
    mock_requests: int
    mock_inprocess_requests: int
    mock_streams: int
    mock_budget: float
    min_rounds: int = 2


QUICK = Plan(
    quick=True,
    servers_rounds=1,
    servers_requests=100,
    seq_rounds=5,
    seq_requests=150,
    seq_budget=10,
    stream_rounds=3,
    stream_chunks=10_000,
    stream_budget=10,
    concurrent_rounds=3,
    concurrent_batches=1,
    concurrency=200,
    concurrent_budget=6,
    startup_runs=3,
    startup_budget=10,
    rss_reps=1,
    rss_lengths=(10_000, 100_000),
    rss_libs_long=("aigateway", "httpx"),
    mock_rounds=3,
    mock_requests=500,
    mock_inprocess_requests=2000,
    mock_streams=1,
    mock_budget=15,
)
FULL = Plan(
    quick=False,
    servers_rounds=3,
    servers_requests=300,
    seq_rounds=15,
    seq_requests=300,
    seq_budget=50,
    stream_rounds=9,
    stream_chunks=10_000,
    stream_budget=50,
    concurrent_rounds=8,
    concurrent_batches=3,
    concurrency=200,
    concurrent_budget=40,
    startup_runs=10,
    startup_budget=60,
    rss_reps=3,
    rss_lengths=(10_000, 100_000),
    rss_libs_long=LIBS,
    mock_rounds=7,
    mock_requests=1000,
    mock_inprocess_requests=5000,
    mock_streams=3,
    mock_budget=40,
)


# -- the round loops ----------------------------------------------------------------------


def rotated(items: Sequence[T], shift: int) -> list[T]:
    """``items`` rotated left by ``shift``: round r runs the variants in this order."""
    shift %= len(items)
    return [*items[shift:], *items[:shift]]


def round_numbers(count: int, budget: float, min_rounds: int) -> Iterator[int]:
    """Round numbers: ``count`` of them, fewer once ``budget`` seconds have passed."""
    start = time.perf_counter()
    for number in range(count):
        if number >= min_rounds and time.perf_counter() - start > budget:
            return
        yield number


@dataclass
class Samples:
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    units: list[int] = field(default_factory=list)


def sync_rounds(
    work: dict[str, Callable[[], int]], rounds: int, budget: float, min_rounds: int = 2
) -> dict[str, Samples]:
    """Run each variant's ``work`` (returning how many units it did) once per round, rotated;
    record wall seconds, this process's CPU seconds and units."""
    out = {name: Samples() for name in work}
    for number in round_numbers(rounds, budget, min_rounds):
        for name in rotated(list(work), number):
            gc.collect()
            wall, cpu = time.perf_counter(), time.process_time()
            units = work[name]()
            out[name].cpu.append(time.process_time() - cpu)
            out[name].wall.append(time.perf_counter() - wall)
            out[name].units.append(units)
    return out


async def async_rounds(
    work: dict[str, Callable[[], Awaitable[int]]], rounds: int, budget: float, min_rounds: int = 2
) -> dict[str, Samples]:
    """`sync_rounds` for coroutines, all in the running event loop."""
    out = {name: Samples() for name in work}
    for number in round_numbers(rounds, budget, min_rounds):
        for name in rotated(list(work), number):
            gc.collect()
            wall, cpu = time.perf_counter(), time.process_time()
            units = await work[name]()
            out[name].cpu.append(time.process_time() - cpu)
            out[name].wall.append(time.perf_counter() - wall)
            out[name].units.append(units)
    return out


def per_unit_us(result: Result, row: str, samples: Samples, unit: str) -> None:
    result.series(row, "wall", f"us/{unit}").samples.extend(
        w / n * 1e6 for w, n in zip(samples.wall, samples.units, strict=True)
    )
    result.series(row, "cpu", f"cpu us/{unit}").samples.extend(
        c / n * 1e6 for c, n in zip(samples.cpu, samples.units, strict=True)
    )


def take_anomalies(result: Result) -> None:
    for text, count in sorted(ANOMALIES.items()):
        result.notes.append(f"!! {text} ({count} times): a bug in src/, the timing stands")
    ANOMALIES.clear()
