"""Trials and sweeps as text: the trials' spread, a sweep's table and warnings, a run's line."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from harness.analysis.stats import number, percent, trial_stats
from harness.records.metrics import metric as shown
from harness.results.groupfile import SweepFile, TrialsFile
from harness.results.records import RunResult


def render_sweep(sweep: SweepFile, warnings: Sequence[tuple[str, str]] = ()) -> str:
    """The sweep at a glance: a row per requested batch size, what it skipped, the verdict.

    `warnings` are (where, text) pairs: a batch's spread flags are listed as they are; a run
    warning once, with the number of runs that gave it (numbers in it may vary by run).
    """
    runs = sum(len(p.samples_per_second.values) for p in sweep.points)
    lines = [
        f"{sweep.scenario_name}: batch sweep, {len(sweep.points)} of "
        f"{len(sweep.requested_batches)} requested batch sizes run ({runs} runs)",
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
    lines += _grouped_warnings(warnings, runs)
    certainty = "" if verdict is None or verdict.certain else " (uncertain)"
    lines.append(
        f"sweep: saturation at batch {sweep.saturation_batch}{certainty}, best at batch "
        f"{sweep.best_batch}, stopped: {sweep.stopped}"
    )
    return "\n".join(lines)


def _sweep_table(sweep: SweepFile) -> list[str]:
    measured = {p.batch_size: p.samples_per_second for p in sweep.points}
    rows = [("batch", "median samples/s", "CoV", "range", "runs", "verdict")]
    for batch in sweep.requested_batches or tuple(measured):
        stats = measured.get(batch)
        if stats is None:
            rows.append((str(batch), "-", "-", "-", "0", _mark(sweep, batch)))
            continue
        spread = f"{number(min(stats.values))}-{number(max(stats.values))}"
        cov = percent(stats.cov) if len(stats.values) > 1 else "-"
        rows.append(
            (
                str(batch),
                number(stats.median),
                cov,
                spread,
                str(len(stats.values)),
                _mark(sweep, batch),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    return [_table_line(row, widths) for row in rows]


def _table_line(row: tuple[str, ...], widths: Sequence[int]) -> str:
    """Numbers right-aligned, the range left-aligned, the verdict as it is."""
    pairs = zip(row[:5], widths, strict=True)
    cells = [c.ljust(w) if i == 3 else c.rjust(w) for i, (c, w) in enumerate(pairs)]
    return ("  " + "  ".join([*cells, row[5]])).rstrip()


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


def _grouped_warnings(warnings: Sequence[tuple[str, str]], runs: int) -> list[str]:
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


def render_trials(trials: TrialsFile) -> str:
    """One block of text: the trials' spread of the headline metric, and every metric's flags."""
    stats, how = trials.stats, shown(trials.metric)
    lines = [
        f"{trials.scenario_name}: {len(stats.values)} trials of {how.name}: "
        f"median {how.text(stats.median)}, best {how.text(stats.best)}, "
        f"CoV {stats.cov * 100:.2f} %"
    ]
    flags = [s.flag for s in trials.spreads if s.flag]
    if trials.metric not in {s.metric for s in trials.spreads}:  # a file before spreads
        again = trial_stats(
            stats.values,
            requested=trials.requested,
            higher_is_better=stats.higher_is_better,
            shown=how,
        )
        flags = [f"{how.name}: {w}" for w in again.warnings] + flags
    lines += [f"  warning: {flag}" for flag in flags]
    return "\n".join(lines)


def brief_trials(batch: int, trials: TrialsFile) -> str:
    """A sweep point's trials in one line; their warnings come once, in the sweep's table."""
    stats, how = trials.stats, shown(trials.metric)
    return (
        f"  batch {batch}: {len(stats.values)} trials, median {how.text(stats.median)}, "
        f"CoV {percent(stats.cov)}"
    )


def run_line(result: RunResult, run_dir: Path) -> str:
    """A run in one line: where, throughput and LoadGen's verdict (warnings come later)."""
    rate = "n/a" if result.samples_per_second is None else number(result.samples_per_second)
    verdict = "VALID" if result.outcome.valid else "INVALID"
    return f"  {run_dir.parent.name}/{run_dir.name}: {rate} samples/s, {verdict}"
