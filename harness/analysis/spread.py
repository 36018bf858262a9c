"""Spread checks on every reported metric of a trials group, named and in units as shown."""

from __future__ import annotations

import math
from collections.abc import Sequence

from harness.analysis.trials import trial_stats
from harness.analysis.values import (
    catalogue_for,
    headline,
    metric_values,
    reported,
    telemetry_metrics,
)
from harness.records.group import Group, RunSet
from harness.records.metrics import ROWS, THROUGHPUT, metric
from harness.records.result import RunResult
from harness.records.trials import MetricSpread

# The metrics checked beside their number in a report only (the catalogue's "beside" rule).
_BESIDE = tuple(key for key, row in ROWS.items() if row.spread == "beside")


def reported_metrics(results: Sequence[RunResult]) -> list[str]:
    """The metrics a report shows for these runs that at least one run has a value of.

    As the catalogue says for their scenario: MLPerf's headline (and its fallback), the
    others MLPerf reports, the harness's own beside them and those checked besides; and each
    power source's energy per inference and samples/s per watt.
    """
    if not results:
        return []
    scenario = results[0].scenario
    found = catalogue_for(scenario, results)
    candidates = [
        headline(scenario, results),
        *reported(scenario, results),
        *([found.fallback] if found.fallback else []),
        *found.beside,
        *found.checked,
        *telemetry_metrics(results),
    ]
    keys = dict.fromkeys(m.key for m in candidates if m.spread == "trials")
    return [key for key in keys if metric_values(results, key)]


def metric_spreads(results: Sequence[RunResult], *, requested: int) -> tuple[MetricSpread, ...]:
    """The spread of every reported metric over the trials, with warnings in shown units."""
    return tuple(_spread(results, m, requested) for m in reported_metrics(results))


def _spread(results: Sequence[RunResult], key: str, requested: int) -> MetricSpread:
    how = metric(key)
    stats = trial_stats(
        metric_values(results, how),
        requested=requested,
        higher_is_better=how.higher_is_better,
        shown=how,
    )
    return MetricSpread(metric=key, name=how.label, unit=how.unit, scale=how.scale, stats=stats)


def run_set_flags(runs: RunSet) -> dict[str, str]:
    """Metric name -> its warnings in one line, for each metric of the runs that has any.

    A single run has no spread to check: no flags.
    """
    if len(runs.results) < 2 and runs.requested < 2:
        return {}
    requested = max(runs.requested, len(runs.results))
    spreads = metric_spreads(runs.results, requested=requested)
    flags = {s.metric: s.flag for s in spreads if s.flag is not None}
    return flags | _utilization_flags(runs.results, requested, spreads)


def _utilization_flags(
    results: Sequence[RunResult], requested: int, spreads: Sequence[MetricSpread]
) -> dict[str, str]:
    """Flags for achieved FLOP/s and utilization, shown beside their numbers in a report.

    They are throughput times a constant of the model and machine, so their spread is
    usually throughput's: then the flag repeats throughput's words, and a report lists them
    on one line. Not recorded in trials.json nor printed, where they would only say it again.
    """
    throughput = next((s for s in spreads if s.metric == THROUGHPUT.key), None)
    flags: dict[str, str] = {}
    for key in _BESIDE:
        if not metric_values(results, key):
            continue
        spread = _spread(results, key, requested)
        if spread.flag is None:
            continue
        if (
            throughput is not None
            and throughput.flag is not None
            and math.isclose(spread.stats.cov, throughput.stats.cov, rel_tol=1e-6, abs_tol=1e-12)
        ):
            flags[key] = f"{spread.name}: {throughput.flag.partition(': ')[2]}"
        else:
            flags[key] = spread.flag
    return flags


def spread_flags(group: Group) -> dict[str, str]:
    """Metric name -> its warnings in one line, for the runs that stand for the group.

    For a run, nothing; for a trials group, its trials; for a sweep, the trials of the
    point that stands for it (its best batch). Computed from the results, so a trials.json
    written before it recorded its spreads gets the same flags. Each flag starts with the
    metric's shown name, and gives values in its shown unit, e.g. ``latency_ns.p99`` ->
    ``"p99 latency: spread too large to trust: CoV 22.0 % >= 5 % over 3 trials (mean
    31.2 ms, stdev 6.86 ms)"``.
    """
    return run_set_flags(group.runs)
