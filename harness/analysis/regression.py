"""The regression gate of `harness compare --fail-if-slower`: a threshold, the noise, a verdict.

NEW is slower when its headline (MLPerf's metric of the scenario, from the comparison) is
worse than BASE's by more than the threshold, direction-aware: throughput below
(1 - threshold) x BASE's, a latency above (1 + threshold) x BASE's. With trials on both sides
the noise is judged by the comparison's own statistics: Fieller's confidence interval of the
ratio (harness.analysis.welch.ratio_interval), and NEW is slower only when the whole interval
lies beyond that limit, as well as the ratio of the medians. With one value on a side the
noise is unknown and the threshold alone decides.
"""

from __future__ import annotations

import math
import re

from harness.analysis.compare import Cell, Comparison
from harness.errors import ConfigError, ResultError
from harness.records.regression import NoiseRule, Regression
from harness.text import printable

OPTION = "--fail-if-slower"
_THRESHOLD = re.compile(r"(\d{1,3}(?:\.\d{1,6})?|\.\d{1,6})(%?)", re.ASCII)
_MAX_TEXT = 16


def parse_threshold(text: str) -> float:
    """A threshold as a fraction in [0, 1): "5%" or "0.05"; ConfigError for anything else."""
    found = _THRESHOLD.fullmatch(text.strip()) if len(text) <= _MAX_TEXT else None
    fix = "give a percentage below 100 (5%) or a fraction below 1 (0.05)"
    if found is None:
        raise ConfigError(f"{OPTION} {printable(text[:40])!r}: not a threshold; {fix}")
    number, percent = float(found[1]), found[2] == "%"
    fraction = number / 100 if percent else number
    if not 0 <= fraction < 1:
        hint = f" (did you mean {found[1]}%?)" if not percent and number < 100 else ""
        raise ConfigError(f"{OPTION} {text.strip()!r}: out of range{hint}; {fix}")
    return fraction


def judge(comparison: Comparison, threshold: float) -> Regression:
    """The headline of the comparison's second side (NEW) against its first (BASE).

    ResultError when the comparison has no headline, or a side has no value of it: nothing
    can be judged, and a gate must not pass what it could not see.
    """
    if len(comparison.labels) != 2:
        raise ConfigError(f"{OPTION}: give exactly two results, BASE then NEW")
    row = next((r for r in comparison.rows if r.headline), None)
    if row is None:
        raise ResultError(f"{OPTION}: no headline metric to judge ({_why(comparison)})")
    base, new = row.cells[0], row.cells[1]
    if base.value is None or new.value is None or base.value == 0:
        missing = comparison.labels[0] if not base.value else comparison.labels[1]
        raise ResultError(
            f"{OPTION}: {missing} has no value of {row.metric.label}; nothing to judge"
        )
    better_high = row.metric.higher_is_better
    limit = 1 - threshold if better_high else 1 + threshold
    ratio = new.value / base.value
    noise, interval = _noise(new)
    beyond = _beyond(ratio, limit, better_high)
    whole = None if noise == "unknown" else _whole_interval_beyond(interval, limit, better_high)
    return Regression(
        metric=row.metric.key,
        label=row.metric.label,
        unit=row.metric.value_unit,
        higher_is_better=better_high,
        base=comparison.labels[0],
        new=comparison.labels[1],
        base_value=base.value,
        new_value=new.value,
        threshold=threshold,
        ratio=ratio,
        limit=limit,
        interval=interval,
        confidence=comparison.confidence,
        noise=noise,
        interval_beyond=whole,
        slower=beyond and (noise == "unknown" or (noise == "interval" and whole is True)),
    )


def _why(comparison: Comparison) -> str:
    return comparison.nothing_compared or "the results measured nothing"


def _noise(cell: Cell) -> tuple[NoiseRule, tuple[float | None, float | None] | None]:
    if cell.interval is None:
        return "unknown", None
    low, high = cell.interval
    bounds = (low if math.isfinite(low) else None, high if math.isfinite(high) else None)
    return ("interval" if None not in bounds else "unbounded"), bounds


def _beyond(ratio: float, limit: float, higher_is_better: bool) -> bool:
    return ratio < limit if higher_is_better else ratio > limit


def _whole_interval_beyond(
    interval: tuple[float | None, float | None] | None, limit: float, higher_is_better: bool
) -> bool:
    low, high = interval or (None, None)
    if higher_is_better:
        return high is not None and high < limit
    return low is not None and low > limit
