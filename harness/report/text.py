"""Results as text: what `show` prints and a campaign ends with; a campaign's progress lines.

One text for each kind: a run is its summary (render_summary); a trials group the spread of
its headline metric and every reported metric's warning; a sweep a row per requested batch
size, what it skipped, its verdict and its warnings, each once; both then list their runs.
A fleet or a bundle is the text of each result it holds; a published record its own rows.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from pathlib import Path

from harness.analysis.groups import group_warnings, warning_count
from harness.analysis.spread import metric_spreads
from harness.analysis.trials import trial_stats
from harness.analysis.values import headline, metric_values, value_of
from harness.published.describe import describe
from harness.records.group import Group, RunSet, UnfinishedRun
from harness.records.metrics import Metric, number
from harness.records.metrics import metric as shown
from harness.records.published import PublishedResult
from harness.records.result import RunResult
from harness.records.runlabel import shared_label
from harness.records.trust import Trust
from harness.report.badges import trust_rows
from harness.report.cells import cov_cell
from harness.report.memory import group_memory_line
from harness.report.summary import render_summary
from harness.results.groupfile import SweepFile, TrialsFile
from harness.text import printable

Placed = tuple[str, str]  # (where, text): "batch 4" for a point's spread, else a run's label


def render_group(
    group: Group,
    name: str,
    sweep: SweepFile | None = None,
    trust: Trust | None = None,
    said: Collection[str] = (),
) -> str:
    """The group as one block of text, titled `name` (its directory, as the user gave it).

    `sweep` is a sweep group's sweep.json as recorded: what it skipped and how sure its
    verdict is are there only. A run is its summary. `trust` (harness.inspect.trust): its
    tier and badges, below the title. `said`: run warnings this command printed already,
    word for word: a trials group leaves them out of its list (its count still holds them).

    Raises:
        ValueError: a sweep group without its `sweep`.
    """
    if group.kind == "run" and group.results:
        return render_summary(group.results[0], name, trust)
    first = group.results[0] if group.results else None
    what = f"{first.scenario_name}: {first.scenario}" if first else "no run measured"
    given = shared_label(r.label for r in group.results)
    title = name if given is None else f"{printable(given, newlines=False)} ({name})"
    lines = [f"{title}: {group.kind} group, {what}"]
    if trust is not None:
        lines += [f"  {key:<11} {value}" for key, value in trust_rows(trust)]
    if group.sweep is None:
        lines += _trials_table(group.runs)
        placed = [(w, t) for w, t in group_warnings(group) if w != "trials" and t not in said]
        lines += _grouped_warnings(placed, len(group.results))
    elif sweep is None:
        raise ValueError(f"{name}: a sweep group is rendered from its sweep.json record")
    else:
        lines += _sweep_lines(group, sweep)
    lines.append(f"  memory: {group_memory_line(group.results)}")
    count = warning_count(group)
    lines.append(
        f"  {count} warning{'s' * (count != 1)} in all, each distinct one counted once "
        "(as the report and the site count them)"
    )
    return "\n".join([*lines, *_run_lines(group)])


def render_published(record: PublishedResult, where: Path, trust: Trust | None = None) -> str:
    """An imported MLPerf result: its label, then its own rows and where its record is."""
    rows = [*(trust_rows(trust) if trust else []), *describe(record), ("record", str(where))]
    lines = [f"  {field:<16}{printable(value, newlines=False)}" for field, value in rows]
    return "\n".join([printable(record.label, newlines=False), *lines])


# --- a trials group ----------------------------------------------------------------------------


def _trials_table(runs: RunSet) -> list[str]:
    """The trials' spread of their headline metric, then each reported metric's warnings."""
    results = runs.results
    if runs.stats is None or not results:
        return ["  no trial statistics"]
    metric = headline(results[0].scenario, results)
    values = metric_values(results, metric)
    if not values:
        return [f"  no trial has a value of {metric.title}"]
    requested = runs.requested
    stats = trial_stats(
        values, requested=requested, higher_is_better=metric.higher_is_better, shown=metric
    )
    better = "higher" if stats.higher_is_better else "lower"
    cells = [metric.format(v) for v in (stats.median, stats.best, stats.mean, stats.stdev)]
    cells.append(cov_cell(stats))
    header = ["median", "best", "mean", "stdev", "CoV"]
    widths = [max(len(h), len(c)) for h, c in zip(header, cells, strict=True)]
    flags = [s.flag for s in metric_spreads(results, requested=requested) if s.flag]
    return [
        f"  {len(stats.values)} trials of {metric.title}, {better} is better "
        f"({requested} requested)",
        "    " + "  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True)),
        "    " + "  ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True)),
        *(f"  warning: {flag}" for flag in flags),
    ]


# --- a sweep -----------------------------------------------------------------------------------


def _sweep_lines(group: Group, sweep: SweepFile) -> list[str]:
    """A row per requested batch size, what it skipped and why it stopped, the verdict, warnings."""
    runs = sum(len(p.samples_per_second.values) for p in sweep.points)
    lines = [
        f"  batch sweep: {len(sweep.points)} of {len(sweep.requested_batches)} requested "
        f"batch sizes run ({runs} runs)",
        *_sweep_table(sweep),
    ]
    if sweep.skipped:
        sizes = ", ".join(str(b) for b in sweep.skipped)
        lines.append(f"  skipped: batch {sizes} ({sweep.skip_reason})")
    if sweep.limit is not None:
        lines.append(f"  stopped at batch {sweep.limit.batch_size}: {sweep.limit.error}")
    verdict = sweep.saturation
    if verdict is not None and verdict.caveat is not None:
        lines.append(f"  {verdict.caveat}")
    certainty = "" if verdict is None or verdict.certain else " (uncertain)"
    lines.append(
        f"  sweep: saturation at batch {sweep.saturation_batch}{certainty}, best at batch "
        f"{sweep.best_batch}, stopped: {sweep.stopped}"
    )
    return lines + _grouped_warnings(group_warnings(group), runs)


def _sweep_table(sweep: SweepFile) -> list[str]:
    measured = {p.batch_size: p.samples_per_second for p in sweep.points}
    rows = [("batch", "median samples/s", "CoV", "range", "runs", "verdict")]
    for batch in sweep.requested_batches or tuple(measured):
        stats = measured.get(batch)
        if stats is None:
            rows.append((str(batch), "-", "-", "-", "0", _mark(sweep, batch)))
            continue
        spread = f"{number(min(stats.values))}-{number(max(stats.values))}"
        cov = cov_cell(stats)
        runs = str(len(stats.values))
        rows.append((str(batch), number(stats.median), cov, spread, runs, _mark(sweep, batch)))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    return [_table_line(row, widths) for row in rows]


def _table_line(row: tuple[str, ...], widths: Sequence[int]) -> str:
    """Numbers right-aligned, the range left-aligned, the verdict as it is."""
    pairs = zip(row[:5], widths, strict=True)
    cells = [c.ljust(w) if i == 3 else c.rjust(w) for i, (c, w) in enumerate(pairs)]
    return ("    " + "  ".join([*cells, row[5]])).rstrip()


def _mark(sweep: SweepFile, batch: int) -> str:
    """The verdict column: saturation (with ? when uncertain), best, the limit, skipped."""
    if batch in sweep.skipped:
        return "skipped"
    if sweep.limit is not None and batch == sweep.limit.batch_size:
        return "out-of-memory" if sweep.stopped == "out_of_memory" else "failed"
    marks = []
    if batch == sweep.saturation_batch:
        sure = sweep.saturation is not None and sweep.saturation.certain
        marks.append("saturation" if sure else "saturation?")
    if batch == sweep.best_batch:
        marks.append("best")
    return " ".join(marks)


def _grouped_warnings(warnings: Sequence[Placed], runs: int) -> list[str]:
    """Each warning once: a batch's as it is, a run's with how many runs gave it."""
    batch_flags = [f"    {where}: {text}" for where, text in warnings if where.startswith("batch ")]
    by_shape: dict[str, list[str]] = {}
    for where, text in warnings:
        if not where.startswith("batch "):
            by_shape.setdefault(re.sub(r"\d+(?:\.\d+)?", "#", text), []).append(text)
    run_lines = [
        f"    {texts[0]} ({len(texts)} of {runs} runs"
        + ("; numbers vary)" if len(set(texts)) > 1 else ")")
        for texts in by_shape.values()
    ]
    lines = batch_flags + run_lines
    return ["  warnings, each once:", *lines] if lines else []


# --- every run of a group ----------------------------------------------------------------------


def _run_lines(group: Group) -> list[str]:
    """One line per run, in order, with the headline metric of all of them."""
    lines = ["  runs:"]
    every = [r for runs in group.all_runs for r in runs.results]
    if every:
        metric = headline(every[0].scenario, every)
        for runs in group.all_runs:
            lines += [f"    {_run_line(a, d, r, metric)}" for a, d, r in group.labelled(runs)]
    for runs in group.all_runs:
        lines += [f"    {_unfinished_line(group, u)}" for u in runs.unfinished]
    return lines


def _unfinished_line(group: Group, run: UnfinishedRun) -> str:
    """A trial that left no result: listed, marked, with its marker's cause (never dropped)."""
    label = run.path.relative_to(group.path).as_posix()
    return f"{label:<14} INCOMPLETE  no result: {run.cause}  {run.path}"


def _run_line(label: str, run_dir: Path, result: RunResult, metric: Metric) -> str:
    verdict = "VALID" if result.outcome.valid else "INVALID"
    value = metric.format(value_of(result, metric))
    return f"{label:<14} {verdict:<7}  {metric.label} {value} {metric.unit}  {run_dir}"


# --- a campaign's progress, while it runs ------------------------------------------------------


def brief_trials(batch: int, trials: TrialsFile) -> str:
    """A sweep point's trials in one line; their warnings come once, in the sweep's table."""
    stats, how = trials.stats, shown(trials.metric)
    return (
        f"  batch {batch}: {len(stats.values)} trials, median {how.text(stats.median)}, "
        f"CoV {cov_cell(stats)}"
    )


def run_line(result: RunResult, run_dir: Path) -> str:
    """A run in one line: where, throughput and LoadGen's verdict (warnings come later)."""
    rate = "n/a" if result.samples_per_second is None else number(result.samples_per_second)
    verdict = "VALID" if result.outcome.valid else "INVALID"
    return f"  {run_dir.parent.name}/{run_dir.name}: {rate} samples/s, {verdict}"
