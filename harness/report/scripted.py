"""`harness show --json` and `--csv`: a result's records as a versioned document, or rows.

Built from the records (harness.records.group, published, trust) and the metric catalogue,
never from the printed text. SHOW_FORMAT is the document's schema_version; its history:
1, the first (#26). The CSV's columns (SHOW_COLUMNS) change with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from harness.analysis.trials import trial_stats
from harness.analysis.values import (
    energy_metrics,
    headline,
    published_value_of,
    reported,
    value_of,
)
from harness.records.group import Group, Sweep
from harness.records.metrics import (
    ACCURACY,
    UTILIZATION,
    Metric,
    metric,
    round_headline,
    scenario_metrics,
)
from harness.records.published import PublishedResult
from harness.records.result import RunResult
from harness.records.scripting import (
    MetricSummary,
    PublishedSummary,
    RunEntry,
    ShowDocument,
    ShowEntry,
    SweepPoint,
    SweepSummary,
    TrustSummary,
)
from harness.records.trust import Trust

SHOW_FORMAT = 1
SHOW_KIND: Final = "beyond-tops.show"
SHOW_COLUMNS = (
    "result",
    "kind",
    "scenario",
    "run",
    "run_id",
    "valid",
    "batch_size",
    "metric",
    "metric_label",
    "unit",
    "higher_is_better",
    "headline",
    "value",
)
Cell = str | int | float | bool | None


def show_document(entries: Sequence[ShowEntry]) -> ShowDocument:
    """The document `show --json` prints: every entry, in the order named."""
    return ShowDocument(kind=SHOW_KIND, schema_version=SHOW_FORMAT, results=tuple(entries))


def show_entry(
    side: Group | PublishedResult, trust: Trust, *, path: str, origin: str | None = None
) -> ShowEntry:
    """One result as `show --json` gives it: its metrics over its runs, each run, its trust."""
    if isinstance(side, PublishedResult):
        return _published_entry(side, trust, path=path, origin=origin)
    results = side.results
    scenario = results[0].scenario if results else None
    chosen = _metrics(scenario, results) if scenario is not None else []
    summaries = [
        summary
        for i, (row, mlperf) in enumerate(chosen)
        if (summary := _summary(row, _run_values(results, row), i == 0, mlperf)) is not None
    ]
    measured = [row for row, _ in chosen if any(s.key == row.key for s in summaries)]
    return ShowEntry(
        path=path,
        origin=origin,
        kind=side.kind,
        label=side.label,
        scenario=scenario,
        headline=chosen[0][0].key if chosen else None,
        trust=_trust(trust),
        metrics=tuple(summaries),
        runs=tuple(
            _run(name, result, measured)
            for runs in side.all_runs
            for name, _, result in side.labelled(runs)
        ),
        sweep=None if side.sweep is None else _sweep(side.sweep),
        published=None,
    )


def show_rows(document: ShowDocument) -> list[tuple[Cell, ...]]:
    """One row per run and metric (a published record: one per metric), SHOW_COLUMNS' order."""
    rows: list[tuple[Cell, ...]] = []
    for entry in document.results:
        facts = {m.key: m for m in entry.metrics}
        head = (entry.label, entry.kind, entry.scenario)
        if not entry.runs:
            rows += [(*head, None, None, None, None, *_meta(m), m.median) for m in entry.metrics]
        for run in entry.runs:
            run_cells = (run.name, run.run_id, run.valid, run.batch_size)
            rows += [
                (*head, *run_cells, *_meta(facts[key]), value) for key, value in run.values.items()
            ]
    return rows


def _meta(m: MetricSummary) -> tuple[Cell, ...]:
    return (m.key, m.label, m.unit, m.higher_is_better, m.headline)


def _metrics(scenario: str, results: Sequence[RunResult]) -> list[tuple[Metric, bool]]:
    """(metric, MLPerf's?) for a scenario: the headline first, as compare chooses them."""
    found = scenario_metrics(scenario)
    mlperf = [headline(scenario, results), *reported(scenario, results)]
    energy = energy_metrics(scenario, results)
    extra = [*found.beside, *energy, *ACCURACY, *UTILIZATION]
    chosen: dict[str, tuple[Metric, bool]] = {}
    for row, is_mlperf in [*((m, True) for m in mlperf), *((m, False) for m in extra)]:
        chosen.setdefault(row.key, (row, is_mlperf))
    return list(chosen.values())


def _run_values(results: Sequence[RunResult], row: Metric) -> list[float]:
    return [row.shown(v) for r in results if (v := value_of(r, row)) is not None]


def _summary(
    row: Metric, values: Sequence[float], is_headline: bool, mlperf: bool
) -> MetricSummary | None:
    """A metric's values and their statistics; None where no run has a value (not headline)."""
    if not values:
        return None
    stats = trial_stats(values, requested=len(values), higher_is_better=row.higher_is_better)
    spread = len(values) > 1
    return MetricSummary(
        key=row.key,
        label=row.label,
        unit=row.unit,
        higher_is_better=row.higher_is_better,
        headline=is_headline,
        mlperf=mlperf,
        values=stats.values,
        median=stats.median,
        best=stats.best,
        mean=stats.mean,
        stdev=stats.stdev if spread else None,
        cov=stats.cov if spread else None,
    )


def _run(name: str, result: RunResult, rows: Sequence[Metric]) -> RunEntry:
    values = {row.key: value_of(result, row) for row in rows}
    return RunEntry(
        name=name,
        run_id=result.run_id,
        created_utc=result.created_utc,
        valid=result.outcome.valid,
        submission_valid=result.outcome.submission_valid,
        profile=result.outcome.profile,
        batch_size=result.batch_size,
        model=result.model.name,
        model_sha256=result.model.sha256,
        precision=result.model.precision,
        providers=result.providers,
        fingerprint_id=result.fingerprint.fingerprint_id,
        warnings=result.warnings,
        values={row.key: None if (v := values[row.key]) is None else row.shown(v) for row in rows},
    )


def _sweep(sweep: Sweep) -> SweepSummary:
    points = []
    for point in sweep.points:
        row = metric(point.runs.metric) if point.runs.metric else None
        scale = row.shown if row is not None else float
        points.append(
            SweepPoint(
                batch_size=point.batch_size,
                metric=point.runs.metric or "",
                values=tuple(scale(v) for v in point.stats.values),
                median=scale(point.stats.median),
                best=scale(point.stats.best),
            )
        )
    return SweepSummary(
        best_batch=sweep.best_batch,
        saturation_batch=sweep.saturation_batch,
        stopped=sweep.stopped,
        points=tuple(points),
    )


def _trust(trust: Trust) -> TrustSummary:
    return TrustSummary(
        tier=trust.tier,
        profile=trust.profile,
        submission_valid=trust.submission_valid,
        loadgen=trust.loadgen,
        badges=tuple(b.text for b in trust.badges),
    )


def _published_entry(
    record: PublishedResult, trust: Trust, *, path: str, origin: str | None
) -> ShowEntry:
    head = round_headline(record.scenario, record.mlperf_version)
    rows = [head, *(m for m in reported(record.scenario) if m.key != head.key)]
    summaries = [
        _summary(row, [] if v is None else [row.shown(v)], row.key == head.key, True)
        for row in rows
        for v in [published_value_of(record, row)]
    ]
    system = record.system
    return ShowEntry(
        path=path,
        origin=origin,
        kind="published",
        label=record.label,
        scenario=record.scenario,
        headline=head.key,
        trust=_trust(trust),
        metrics=tuple(s for s in summaries if s is not None),
        runs=(),
        sweep=None,
        published=PublishedSummary(
            org=record.org,
            division=record.division,
            mlperf_version=record.mlperf_version,
            system=system.name or system.id,
            accelerator=system.accelerator,
            accelerators_per_node=system.accelerators_per_node,
            nodes=system.nodes,
            benchmark=record.benchmark,
            source_path=record.source_path,
        ),
    )
