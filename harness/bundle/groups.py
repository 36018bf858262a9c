"""trials.json and sweep.json against their trials' results, recomputed by the same analysis.

A trials group's statistics (median, best, mean, stdev, CoV, warnings, every reported
metric's spread) are computed again from its bundled result.json files with
harness.analysis, as `harness run` computed them; a sweep's points must be its points'
trials.json statistics, and its saturation and best batch are computed again from them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import PurePosixPath

from harness.analysis.spread import metric_spreads
from harness.analysis.sweep import best_batch, saturation_batch, saturation_verdict
from harness.analysis.trials import trial_stats
from harness.analysis.values import headline, metric_values
from harness.bundle.crosscheck import Contents, Passed
from harness.errors import ResultError
from harness.records.codec import to_data
from harness.records.layout import RESULT_FILE, SWEEP_FILE, TRIALS_FILE
from harness.records.metrics import metric
from harness.records.result import RunResult
from harness.records.sweep import SweepPoint
from harness.records.trials import TrialStats
from harness.results.groupfile import TrialsFile, read_sweep, read_trials
from harness.results.runfile import load_result
from harness.strictjson import Json

TRIALS, SWEEP = "trials", "sweep"


def check_trials(contents: Contents) -> Passed:
    """Each trials.json's statistics are those of its trials' results."""
    groups = list(contents.named(TRIALS_FILE))
    runs = sum(_check_trials(contents, member) for member in groups)
    if not groups:
        return Passed(check=TRIALS, detail=f"no {TRIALS_FILE} bundled")
    return Passed(
        check=TRIALS,
        detail=f"{len(groups)} {TRIALS_FILE}, statistics recomputed from their {runs} trials' "
        f"{RESULT_FILE}",
    )


def check_sweeps(contents: Contents) -> Passed:
    """Each sweep.json's points are its points' trials, its verdict recomputed from them."""
    sweeps = list(contents.named(SWEEP_FILE))
    for member in sweeps:
        _check_sweep(contents, member)
    if not sweeps:
        return Passed(check=SWEEP, detail=f"no {SWEEP_FILE} bundled")
    return Passed(
        check=SWEEP,
        detail=f"{len(sweeps)} {SWEEP_FILE}, points equal to their {TRIALS_FILE}, saturation "
        "and best batch recomputed",
    )


def _check_trials(contents: Contents, member: str) -> int:
    try:
        trials = read_trials(contents.path(member))
    except ResultError as exc:
        raise contents.failed(TRIALS, contents.shown(str(exc))) from None
    listed = [_child(contents, TRIALS, member, name, RESULT_FILE) for name in trials.runs]
    _no_unlisted(contents, member, listed)
    if trials.complete and len(listed) != trials.requested:
        raise contents.failed(
            TRIALS,
            f"{member} says complete with {len(listed)} of {trials.requested} requested trials",
        )
    results = [_result(contents, TRIALS, path) for path in listed]
    for path, result in zip(listed, results, strict=True):
        if result.outcome.profile != trials.profile or result.scenario != trials.scenario:
            raise contents.failed(
                TRIALS,
                f"{member} says profile {trials.profile}, scenario {trials.scenario} but {path} "
                f"says profile {result.outcome.profile}, scenario {result.scenario}",
            )
    problem = _stats_problem(trials, results)
    if problem is not None:
        raise contents.failed(TRIALS, f"{member}: {problem}")
    return len(results)


def _stats_problem(trials: TrialsFile, results: Sequence[RunResult]) -> str | None:
    """The first statistic of trials.json that its results do not give, in words."""
    count = f"its {len(results)} trials' {RESULT_FILE}"
    judged = headline(trials.scenario, results).key  # the metric `harness run` judges by
    if trials.metric != judged:
        return f"metric is {trials.metric}, but MLPerf's metric of {count} is {judged}"
    how = metric(trials.metric)
    again = trial_stats(
        metric_values(results, how),
        requested=trials.requested,
        higher_is_better=how.higher_is_better,
        shown=how,
    )
    problem = _differs(f"stats ({trials.metric})", trials.stats, again, count)
    if problem is not None or not trials.spreads:
        return problem
    spreads = {s.metric: s for s in metric_spreads(results, requested=trials.requested)}
    for recorded in trials.spreads:
        computed = spreads.pop(recorded.metric, None)
        if computed is None:
            return f"spreads names {recorded.metric}, which {count} do not report"
        problem = _differs(f"spreads ({recorded.metric})", recorded.stats, computed.stats, count)
        if problem is not None:
            return problem
    if spreads:
        return f"spreads leaves out {sorted(spreads)[0]}, which {count} report"
    return None


def _check_sweep(contents: Contents, member: str) -> None:
    try:
        sweep = read_sweep(contents.path(member))
    except ResultError as exc:
        raise contents.failed(SWEEP, contents.shown(str(exc))) from None
    points = []
    for point in sweep.points:
        path = _child(contents, SWEEP, member, point.dir, TRIALS_FILE)
        try:
            measured = read_trials(contents.path(path)).stats
        except ResultError as exc:
            raise contents.failed(SWEEP, contents.shown(str(exc))) from None
        problem = _differs(
            f"batch {point.batch_size}'s samples_per_second",
            point.samples_per_second,
            measured,
            path,
        )
        if problem is not None:
            raise contents.failed(SWEEP, f"{member}: {problem}")
        points.append(SweepPoint(batch_size=point.batch_size, stats=measured))
    again: dict[str, object] = {
        "saturation_batch": saturation_batch(points),
        "best_batch": best_batch(points),
        "saturation": saturation_verdict(points),
    }
    for key, value in again.items():
        recorded = getattr(sweep, key)
        if to_data(recorded) != to_data(value):
            raise contents.failed(
                SWEEP,
                f"{member}: {key} is {_text(to_data(recorded))} but its points give "
                f"{_text(to_data(value))}",
            )


def _child(contents: Contents, check: str, member: str, name: str, file: str) -> str:
    """GROUP/name/file for a name a group file lists: one plain name, and bundled."""
    if not name or "/" in name or "\\" in name or name in (".", ".."):
        raise contents.failed(check, f"{member} lists {name!r:.80}, not a directory name")
    path = str(PurePosixPath(member).parent / name / file)
    if not contents.has(path):
        raise contents.failed(check, f"{member} lists {name!r:.80}, but {path} is not bundled")
    return path


def _no_unlisted(contents: Contents, member: str, listed: Sequence[str]) -> None:
    """A trial run in the group that trials.json leaves out is a trial dropped from its stats."""
    group = PurePosixPath(member).parent
    for path in contents.results():
        pure = PurePosixPath(path)
        if pure.parent.parent == group and path not in listed:
            raise contents.failed(
                TRIALS, f"{path} is a trial of {member}'s group, which its runs leave out"
            )


def _result(contents: Contents, check: str, path: str) -> RunResult:
    try:
        return load_result(contents.path(path))
    except ResultError as exc:
        raise contents.failed(check, contents.shown(str(exc))) from None


def _differs(what: str, recorded: TrialStats, again: TrialStats, source: str) -> str | None:
    """The first field of `recorded` that `again` (recomputed from `source`) does not equal."""
    for key in _STATS_FIELDS:
        mine, theirs = getattr(recorded, key), getattr(again, key)
        if not _same(mine, theirs):
            return (
                f"{what} {key} is {_text(to_data(mine))}, recomputed from {source}: "
                f"{_text(to_data(theirs))}"
            )
    return None


_STATS_FIELDS = (
    "values",
    "requested",
    "higher_is_better",
    "median",
    "best",
    "mean",
    "stdev",
    "cov",
    "warnings",
)


def _same(a: object, b: object) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float | int) and isinstance(b, float | int) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def _text(value: Json) -> str:
    text = str(value)
    return text if len(text) <= 80 else text[:77] + "..."
