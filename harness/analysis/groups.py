"""A group's warnings, in order: its statistics', its sweep limit's and each run's (pure)."""

from __future__ import annotations

from harness.analysis.spread import metric_spreads
from harness.records.group import Group
from harness.records.result import RunResult


def group_warnings(group: Group) -> list[tuple[str, str]]:
    """(where, text) for every warning of the group, in order.

    The spread flags of every reported metric, of a trials group or each point of a sweep
    (what `show` prints), the sweep's limit, and each run's warnings, LoadGen INVALID
    reasons and errors, and telemetry errors.
    """
    out: list[tuple[str, str]] = []
    if group.runs.stats is not None and group.sweep is None and group.results:
        # every reported metric's spread, as `show` flags them (not trials.json's headline only)
        spreads = metric_spreads(group.results, requested=group.runs.requested)
        out += [("trials", s.flag) for s in spreads if s.flag]
    for point in group.sweep.points if group.sweep else ():
        spreads = metric_spreads(point.runs.results, requested=point.runs.requested)
        out += [(f"batch {point.batch_size}", s.flag) for s in spreads if s.flag]
    limit = group.sweep.limit if group.sweep else None
    if limit is not None:
        out.append(("sweep", f"stopped at batch {limit.batch_size}: out of memory ({limit.error})"))
    for runs in group.all_runs:
        out += [(label, text) for label, _, r in group.labelled(runs) for text in _warnings(r)]
    return out


def distinct_warnings(group: Group) -> list[str]:
    """Each warning text of the group once, in first-seen order (a trial's repeats count once)."""
    return list(dict.fromkeys(text for _, text in group_warnings(group)))


def warning_count(group: Group) -> int:
    """The one count of a group's warnings that every output prints: distinct texts."""
    return len(distinct_warnings(group))


def _warnings(r: RunResult) -> list[str]:
    errors = r.telemetry.errors if r.telemetry is not None else ()
    return [
        *r.warnings,
        *(f"LoadGen INVALID: {reason}" for reason in r.outcome.invalid_reasons),
        *(f"LoadGen error: {error}" for error in r.outcome.loadgen_errors),
        *(f"telemetry error, {e.source}: {e.error}" for e in errors),
    ]
