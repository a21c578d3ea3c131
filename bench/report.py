"""Plain-text tables of the results, and the list of targets with PASS / MISS."""

from __future__ import annotations

import statistics
from collections.abc import Iterable

from .clients import HTTPX2_TWINS, LIBS
from .measure import Ratio, Result, Series


def _fmt(value: float) -> str:
    if value != value:  # NaN
        return "-"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _cell(series: Series) -> str:
    if not series.samples:
        return "-"
    low, high = min(series.samples), max(series.samples)
    return f"{_fmt(series.median)} [{_fmt(low)}-{_fmt(high)}]"


def _paired(num: Series, den: Series) -> str:
    ratios = [a / b for a, b in zip(num.samples, den.samples, strict=False) if b]
    return f"{statistics.median(ratios):.2f}x" if ratios else "-"


def _baseline(row: str, lib: str) -> str | None:
    """The name of the same row with ``lib`` in place of this row's library (None if none).
    A row on httpx2 is compared with raw httpx2 in place of raw httpx, and raw httpx2 with
    raw httpx (`HTTPX2_TWINS`)."""
    tokens = row.split(" ")
    for i, token in enumerate(tokens):
        if token in LIBS or token in HTTPX2_TWINS:
            if lib == "httpx" and token in HTTPX2_TWINS and token != "httpx2":
                lib = "httpx2"
            return None if token == lib else " ".join([*tokens[:i], lib, *tokens[i + 1 :]])
    return None


def _table(headers: list[str], lines: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(headers)]
    out = ["  " + "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    out.append("  " + "  ".join("-" * w for w in widths))
    out += [
        "  " + "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in lines
    ]
    return out


def scenario_table(result: Result) -> list[str]:
    """One scenario: a row per variant, median [min-max] of each series, paired ratios of the
    first series to the same row with httpx and with openai."""
    out = [f"{result.title}  ({result.seconds:.0f} s)"]
    if result.skipped:
        return [*out, f"  SKIPPED: {result.skipped}"]
    if not result.rows:
        return [*out, "  (no rows)"]
    metric_names: list[str] = []
    units: dict[str, str] = {}
    for metrics in result.rows.values():
        for name, series in metrics.items():
            if name not in metric_names:
                metric_names.append(name)
                units[name] = series.unit
    with_ratios = any(_baseline(row, "httpx") in result.rows for row in result.rows)
    headers = ["variant", *(f"{units[m]} median [min-max]" for m in metric_names)]
    if with_ratios:
        headers += ["vs httpx", "vs openai"]
    lines = []
    for row, metrics in result.rows.items():
        line = [row, *(_cell(metrics[m]) if m in metrics else "-" for m in metric_names)]
        if with_ratios:
            first = next(iter(metrics.values()))
            for lib in ("httpx", "openai"):
                base = _baseline(row, lib)
                other = result.rows.get(base) if base else None
                line.append(_paired(first, next(iter(other.values()))) if other else "-")
        lines.append(line)
    out += _table(headers, lines)
    out += [f"  note: {note}" for note in result.notes]
    return out


def targets_table(ratios: Iterable[Ratio]) -> list[str]:
    """Every ratio with a target: measured (median of paired ratios, [min-max]), target, verdict."""
    lines = []
    for ratio in ratios:
        if ratio.target is None:
            continue
        op, bound = ratio.target
        if ratio.unit == "x":
            shown = [f"{value:.2f}x" for value in (ratio.median, *ratio.samples)]
            bound_shown = f"{bound:g}x"
        else:
            shown = [f"{_fmt(value)}{ratio.unit}" for value in (ratio.median, *ratio.samples)]
            bound_shown = f"{_fmt(bound)}{ratio.unit}"
        spread = ""
        if ratio.samples:
            low, high = min(ratio.samples), max(ratio.samples)
            spread = (
                f"[{shown[1 + ratio.samples.index(low)]}-{shown[1 + ratio.samples.index(high)]}]"
            )
        lines.append([ratio.name, f"{shown[0]} {spread}", f"{op} {bound_shown}", ratio.verdict])
    if not lines:
        return ["  (no target was measured)"]
    return _table(["target", "measured", "target", "verdict"], lines)


def info_ratios(ratios: Iterable[Ratio]) -> list[str]:
    lines = [
        [ratio.name, f"{ratio.median:.2f}{ratio.unit}"] for ratio in ratios if ratio.target is None
    ]
    return _table(["other paired ratios", "median"], lines) if lines else []


def render(results: list[Result]) -> str:
    """The whole report."""
    out: list[str] = []
    for result in results:
        out += scenario_table(result)
        out.append("")
    ratios = [ratio for result in results for ratio in result.ratios]
    out.append("TARGETS (median of per-round paired ratios, or of per-round rates)")
    out += targets_table(ratios)
    out.append("")
    out += info_ratios(ratios)
    return "\n".join(out)
