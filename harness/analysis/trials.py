"""Statistics over repeated trials: centre, spread and the warnings that say why to doubt them.

The records they fill (TrialStats, MetricSpread) are harness.records.trials'.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from harness.records.metrics import Metric, number, percent
from harness.records.trials import TrialStats


def trial_stats(
    values: Sequence[float],
    *,
    requested: int,
    higher_is_better: bool,
    shown: Metric | None = None,
    cov_limit: float = 0.05,
    outlier_limit: float = 0.5,
) -> TrialStats:
    """Median, best, mean, sample stdev and CoV of the trials, with a warning per doubt.

    Warnings: CoV at or above `cov_limit`; each value more than `outlier_limit` (relative)
    off the median; fewer values than `requested`. CoV is stdev / |mean|, 0.0 for one value
    or a zero mean. The warnings give values as `shown` (a catalogue row: unit and scale),
    bare numbers without it; the statistics keep the stored unit. Raises ValueError for no
    values (a caller bug: nothing was measured).
    """
    if not values:
        raise ValueError("trial_stats needs at least one value")
    vals = tuple(float(v) for v in values)
    mean = statistics.fmean(vals)
    stdev = statistics.stdev(vals) if len(vals) > 1 else 0.0
    cov = stdev / abs(mean) if mean != 0 else 0.0
    median = statistics.median(vals)
    warnings = [
        *_cov_warning(vals, (mean, stdev, cov), cov_limit, shown),
        *_outlier_warnings(vals, median, outlier_limit, shown),
    ]
    if len(vals) < requested:
        warnings.append(
            f"only {len(vals)} of {requested} requested trials produced a value; "
            "the statistics rest on fewer trials than asked"
        )
    return TrialStats(
        values=vals,
        requested=requested,
        higher_is_better=higher_is_better,
        median=median,
        best=max(vals) if higher_is_better else min(vals),
        mean=mean,
        stdev=stdev,
        cov=cov,
        warnings=tuple(warnings),
    )


def _cov_warning(
    vals: tuple[float, ...], moments: tuple[float, float, float], limit: float, shown: Metric | None
) -> list[str]:
    mean, stdev, cov = moments
    if len(vals) < 2 or cov < limit:
        return []
    return [
        f"spread too large to trust: CoV {percent(cov)} >= {limit * 100:g} % over "
        f"{len(vals)} trials (mean {_text(shown, mean)}, stdev {_text(shown, stdev)})"
    ]


def _outlier_warnings(
    vals: tuple[float, ...], median: float, limit: float, shown: Metric | None
) -> list[str]:
    if median == 0:
        return []
    return [
        f"trial {i} is an outlier: {_text(shown, v)} is "
        f"{percent(abs(v - median) / abs(median))} off the median {_text(shown, median)} "
        f"(limit {limit * 100:g} %)"
        for i, v in enumerate(vals, start=1)
        if abs(v - median) / abs(median) > limit
    ]


def _text(shown: Metric | None, value: float) -> str:
    return number(value) if shown is None else shown.text(value)
