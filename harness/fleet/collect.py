"""Merge a fleet's tasks into one comparison: a row per task and configuration, and findings.

Each row is one entry of one task: where it ran, its state, MLPerf's headline metric for its
scenario (median over its trials, with their spread; a generative model's tokens/s, from the
catalogue), validity, perf/W where measured, a generative model's p99 TTFT and TPOT, and the
paths of its log and run. Findings: nodes of one partition that differ in fingerprint
(heterogeneity) and nodes far from their peers on the same configuration (outliers).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from harness.analysis.fleet import (
    Difference,
    NodeRun,
    describe_difference,
    heterogeneity,
)
from harness.analysis.fleet_outliers import (
    Outlier,
    describe_outlier,
    outliers,
    too_few_peers,
)
from harness.analysis.values import headline, metric_values
from harness.errors import HarnessError, ResultError
from harness.files import atomic_write_text
from harness.fleet.plan import FleetPlan, TaskSpec
from harness.fleet.records import EntryRecord
from harness.fleet.scheduled import SlurmScheduler
from harness.fleet.state import TaskStatus
from harness.fleet.tree import check_tree
from harness.foreign import inside
from harness.records.group import Group
from harness.records.layout import MERGED_JSON, MERGED_MD, TASK_RESULT_FILE
from harness.records.metrics import TPOT_P99, TTFT_P99, Metric
from harness.records.result import RunResult
from harness.report.safe import markdown_text
from harness.results.groups import load_group
from harness.strictjson import JsonObject

REFUSED = "; not merged"  # how a row's note ends when its run led out of its attempt
MERGED_SCHEMA_VERSION = 1  # of fleet-merged.json; history: 1, the first


@dataclass(frozen=True, kw_only=True)
class Row:
    """One entry of one task in the merged table."""

    task: int
    node: str | None
    state: str
    config: str
    scenario: str | None
    metric: str | None  # the headline's title, e.g. "early-stopping p90 latency (ms)"
    value: float | None  # the headline's median over the trials, in its shown unit
    spread_cov: float | None
    trials: int
    valid: str  # "yes", "no (k of n INVALID)", "-"
    perf_per_watt: float | None  # samples/s per W, the first power source that measured it
    energy_mj: float | None  # mJ per inference
    log: str | None  # relative to the fleet directory
    run: str | None
    note: str | None
    ttft_p99_ms: float | None = None  # a generative model's p99 time to first token, median
    tpot_p99_ms: float | None = None  # ... and p99 time per output token (None: not measured)


@dataclass(frozen=True, kw_only=True)
class Merged:
    """The fleet's merged comparison."""

    fleet: Path
    plan: FleetPlan
    statuses: tuple[TaskStatus, ...]
    rows: tuple[Row, ...]
    groups: tuple[Group, ...]  # each row's run or trial group, labelled for the report
    differences: tuple[Difference, ...]
    outliers: tuple[Outlier, ...]
    notes: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class _Loaded:
    """One entry of one task as read: its row before its headline, and its runs if any."""

    row: Row
    group: Group | None
    scenario: str  # LoadGen's scenario of the entry
    hw: str
    partition: str | None


def merge(fleet: Path, plan: FleetPlan, statuses: Sequence[TaskStatus]) -> Merged:
    """Read every task's runs (a task that failed leaves its row, never hides the others).

    Every configuration is judged by one metric, the catalogue's headline for all its runs
    on every node (so one node's missing early-stopping estimate does not split it).
    """
    tasks = {task.index: task for task in plan.tasks}
    loaded: list[_Loaded] = []
    checked: list[TaskStatus] = []
    for status in statuses:
        entries = _task_entries(fleet, plan, tasks[status.index], status)
        refused = [e.row.note for e in entries if e.row.note and e.row.note.endswith(REFUSED)]
        checked.append(_damaged(status, refused[0]) if refused else status)
        loaded += [replace(e, row=replace(e.row, state=checked[-1].state)) for e in entries]
    metrics = _config_metrics(loaded)
    rows = [e.row if e.group is None else _measured(e, metrics[e.row.config]) for e in loaded]
    node_runs = [
        _node_run(e, row, metrics[row.config])
        for e, row in zip(loaded, rows, strict=True)
        if e.group is not None
    ]
    return Merged(
        fleet=fleet,
        plan=plan,
        statuses=tuple(checked),
        rows=tuple(rows),
        groups=tuple(e.group for e in loaded if e.group is not None),
        differences=tuple(heterogeneity(node_runs)),
        outliers=tuple(outliers(node_runs)),
        notes=tuple(too_few_peers(node_runs)),
    )


def _config_metrics(loaded: Sequence[_Loaded]) -> dict[str, Metric]:
    """Each configuration's headline over the runs of every task that ran it."""
    results: dict[str, list[RunResult]] = {}
    for e in loaded:
        if e.group is not None:
            results.setdefault(e.row.config, []).extend(e.group.results)
    scenarios = {e.row.config: e.scenario for e in loaded}
    return {config: headline(scenarios[config], runs) for config, runs in results.items()}


def _measured(entry: _Loaded, metric: Metric) -> Row:
    """The entry's row with its headline's median and spread, validity and energy."""
    results = entry.group.results if entry.group else ()
    values = [metric.shown(v) for v in metric_values(results, metric)]
    return replace(
        entry.row,
        metric=metric.title,
        value=_median(values),
        spread_cov=_cov(values),
        trials=len(results),
        valid=_validity(results),
        perf_per_watt=_power(results, "samples_per_second_per_watt"),
        energy_mj=_power(results, "energy_per_inference_mj"),
        ttft_p99_ms=_median([TTFT_P99.shown(v) for v in metric_values(results, TTFT_P99)]),
        tpot_p99_ms=_median([TPOT_P99.shown(v) for v in metric_values(results, TPOT_P99)]),
    )


def _node_run(entry: _Loaded, row: Row, metric: Metric) -> NodeRun:
    results = entry.group.results if entry.group else ()
    return NodeRun(
        task=row.task,
        node=row.node or "?",
        hw=entry.hw,
        partition=entry.partition,
        config=row.config,
        metric=metric.title,
        higher_is_better=metric.higher_is_better,
        value=row.value,
        spread_cov=row.spread_cov,
        fingerprint=results[0].fingerprint.data if results else {},
    )


def _damaged(status: TaskStatus, why: str) -> TaskStatus:
    """A task whose record led out of its attempt: never merged, never counted as done."""
    detail = "; ".join(d for d in (status.detail, f"damaged record: {why}") if d)
    return replace(status, state="DAMAGED", detail=detail, problems=(*status.problems, why))


def _task_entries(
    fleet: Path, plan: FleetPlan, task: TaskSpec, status: TaskStatus
) -> list[_Loaded]:
    outcomes = {e.name: e for e in status.record.entries} if status.record else {}
    log = None if status.log is None else status.log.relative_to(fleet).as_posix()
    loaded = []
    for entry in task.entries:
        scenario = entry.scenario
        config = f"{scenario.model.name} {scenario.model.precision} {scenario.scenario}"
        config += f" batch {scenario.batch_size}"
        if plan.label is not None:
            config = f"{plan.label}: {config}"
        outcome = outcomes.get(scenario.name)
        run_dir, group, note = _load(status, outcome)
        if group is None and note is None and outcome is not None and outcome.error:
            note = outcome.error
        elif group is None and note is None:
            note = "no result: the task did not reach this entry"
        row = Row(
            task=task.index,
            node=status.node,
            state=status.state,
            config=config,
            scenario=scenario.scenario,
            metric=None,
            value=None,
            spread_cov=None,
            trials=0,
            valid="-",
            perf_per_watt=None,
            energy_mj=None,
            log=log,
            run=None if run_dir is None else run_dir.relative_to(fleet).as_posix(),
            note=note,
        )
        if group is not None:
            label = f"{status.node or '?'} task {task.index}: {plan.label or scenario.name}"
            group = replace(group, label=label)
        partition = _partition(plan, status)
        loaded.append(
            _Loaded(
                row=row, group=group, scenario=scenario.scenario, hw=plan.hw, partition=partition
            )
        )
    return loaded


def _load(
    status: TaskStatus, outcome: EntryRecord | None
) -> tuple[Path | None, Group | None, str | None]:
    """The entry's run directory and its results, or why they are not merged.

    The run a record names must lie inside its attempt directory, and so must every file
    and run directory it leads to: a record is as foreign as the node that wrote it.
    """
    if status.attempt is None or outcome is None or outcome.run is None:
        return None, None, None
    run_dir = status.attempt / outcome.run
    try:
        found = inside(status.attempt, Path(outcome.run), ResultError)
        check_tree(found, status.attempt)
        group = load_group(found)
        for path in group.runs.run_dirs:
            inside(status.attempt, path, ResultError)  # trials.json names its runs
    except ResultError as exc:
        where = status.attempt / TASK_RESULT_FILE
        return run_dir, None, f"{where}: entries: {outcome.name}: run: {exc}{REFUSED}"
    except HarnessError as exc:
        return run_dir, None, str(exc)
    return run_dir, group, None


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def _cov(values: Sequence[float]) -> float | None:
    """The sample coefficient of variation, as trials.json computes it; None under 2 values."""
    if len(values) < 2 or statistics.mean(values) == 0:
        return None
    return statistics.stdev(values) / statistics.mean(values)


def _validity(results: Sequence[RunResult]) -> str:
    invalid = sum(1 for r in results if not r.outcome.valid)
    return "yes" if invalid == 0 else f"no ({invalid} of {len(results)} INVALID)"


def _power(results: Sequence[RunResult], name: str) -> float | None:
    values = []
    for result in results:
        sources = {} if result.telemetry is None else result.telemetry.sources
        for source in sources.values():
            value = getattr(source, name)
            if value is not None:
                values.append(float(value))
                break
    return _median(values)


def _partition(plan: FleetPlan, status: TaskStatus) -> str | None:
    scheduler = plan.scheduler
    stated = scheduler.partition if isinstance(scheduler, SlurmScheduler) else None
    found = (status.record.partition if status.record else None) or stated
    return None if found is None else str(found)


def render_markdown(merged: Merged) -> str:
    """The merged comparison as Markdown: states, the table, then the findings."""
    plan = merged.plan
    lines = [
        f"# Fleet {merged.fleet.name}",
        "",
        f"Suite `{plan.suite}` on `{plan.hw}` through {plan.kind}, profile {plan.profile}, "
        f"{len(plan.tasks)} task(s).",
        "",
        "## Tasks",
        "",
        "| task | node | state | source | detail | log |",
        "|---:|---|---|---|---|---|",
    ]
    for s in merged.statuses:
        log = "-" if s.log is None else f"[{s.log.name}]({s.log.relative_to(merged.fleet)})"
        lines.append(
            f"| {s.index} | {s.node or '-'} | {s.state} | {s.source} | "
            f"{_cell(s.detail or '-')} | {log} |"
        )
    lines += [
        "",
        "## Results",
        "",
        "| task | node | configuration | metric | median | trial CoV | trials | valid | "
        "samples/s/W | mJ/inference | TTFT p99 (ms) | TPOT p99 (ms) |",
        "|---:|---|---|---|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    for r in merged.rows:
        lines.append(
            f"| {r.task} | {r.node or '-'} | {_cell(markdown_text(r.config))} | "
            f"{r.metric or '-'} | {_num(r.value)} | "
            f"{_pct(r.spread_cov)} | {r.trials} | {r.valid} | {_num(r.perf_per_watt)} | "
            f"{_num(r.energy_mj)} | {_num(r.ttft_p99_ms)} | {_num(r.tpot_p99_ms)} |"
        )
    failed = [r for r in merged.rows if r.value is None]
    if failed:
        lines += ["", "Rows without a result:"]
        lines += [f"- task {r.task} ({r.config}): {_cell(r.note or r.state)}" for r in failed]
    lines += ["", "## Findings", ""]
    findings = [f"- heterogeneous: {describe_difference(d)}" for d in merged.differences]
    findings += [f"- outlier: {describe_outlier(o)}" for o in merged.outliers]
    findings += [f"- {note}" for note in merged.notes]
    lines += findings or ["- none: every node alike in fingerprint, and none far from its peers"]
    return "\n".join(lines) + "\n"


def merged_dict(merged: Merged) -> JsonObject:
    """The merged comparison as JSON-ready data."""
    return {
        "schema_version": MERGED_SCHEMA_VERSION,
        "fleet": merged.fleet.name,
        "suite": merged.plan.suite,
        "hw": merged.plan.hw,
        "kind": merged.plan.kind,
        "tasks": [
            {
                "index": s.index,
                "node": s.node,
                "state": s.state,
                "source": s.source,
                "detail": s.detail,
                "log": None if s.log is None else s.log.relative_to(merged.fleet).as_posix(),
                "attempt": None
                if s.attempt is None
                else s.attempt.relative_to(merged.fleet).as_posix(),
            }
            for s in merged.statuses
        ],
        "rows": [asdict(r) for r in merged.rows],
        "heterogeneity": [asdict(d) for d in merged.differences],
        "outliers": [asdict(o) for o in merged.outliers],
        "notes": list(merged.notes),
    }


def write_merged(merged: Merged) -> tuple[Path, Path]:
    """fleet-merged.md and fleet-merged.json in the fleet directory, atomically."""
    markdown = merged.fleet / MERGED_MD
    data = merged.fleet / MERGED_JSON
    atomic_write_text(markdown, render_markdown(merged))
    atomic_write_text(data, json.dumps(merged_dict(merged), indent=2, default=str) + "\n")
    return markdown, data


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.3f}" if abs(value) < 1000 else f"{value:,.1f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f} %"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
