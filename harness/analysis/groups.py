"""Load a run, trials or sweep directory into one frozen group of results."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from harness.analysis.sweep import StopReason, SweepLimit
from harness.analysis.trials import TrialStats
from harness.errors import ResultError
from harness.files import RESULT_FILE
from harness.records.metrics import metric as metric_row
from harness.results.groupfile import (
    SWEEP_FILE,
    TRIALS_FILE,
    SweepFilePoint,
    read_sweep,
    read_trials,
)
from harness.results.records import RunResult
from harness.results.runfile import load_result

GroupKind = Literal["run", "trials", "sweep"]


@dataclass(frozen=True, kw_only=True)
class RunSet:
    """Runs of one configuration: a single run, or the trials of a trials group."""

    path: Path
    run_dirs: tuple[Path, ...]
    results: tuple[RunResult, ...]
    stats: TrialStats | None  # trials.json's statistics; None for a single run
    metric: str | None  # the metric the statistics are over
    requested: int


@dataclass(frozen=True, kw_only=True)
class GroupPoint:
    """One batch size of a sweep: its runs and throughput statistics."""

    batch_size: int
    runs: RunSet
    stats: TrialStats


@dataclass(frozen=True, kw_only=True)
class Sweep:
    """A sweep's points, where it saturated and why it stopped."""

    points: tuple[GroupPoint, ...]
    saturation_batch: int | None
    best_batch: int | None
    stopped: StopReason
    limit: SweepLimit | None


@dataclass(frozen=True, kw_only=True)
class Group:
    """What one directory holds; `runs` are the results compared (a sweep's best point)."""

    path: Path
    kind: GroupKind
    label: str
    runs: RunSet
    sweep: Sweep | None = None

    @property
    def results(self) -> tuple[RunResult, ...]:
        """The results that stand for this group in reports and comparisons."""
        return self.runs.results

    @property
    def all_runs(self) -> tuple[RunSet, ...]:
        """Every run set in the group: a sweep's points in order, else the group's runs."""
        return tuple(p.runs for p in self.sweep.points) if self.sweep else (self.runs,)

    def labelled(self, runs: RunSet) -> list[tuple[str, Path, RunResult]]:
        """(label, directory, result) per run; the label is the directory within the group."""
        return [(_label(d, self), d, r) for d, r in zip(runs.run_dirs, runs.results, strict=True)]


def group_warnings(group: Group) -> list[tuple[str, str]]:
    """(where, text) for every warning of the group, in order.

    Trial and sweep statistics, the sweep's limit, and each run's warnings, LoadGen INVALID
    reasons and errors, and telemetry errors.
    """
    out: list[tuple[str, str]] = []
    if group.runs.stats is not None and group.sweep is None:
        name = metric_row(group.runs.metric).label if group.runs.metric else "trials"
        out += [("trials", f"{name}: {w}") for w in group.runs.stats.warnings]
    for point in group.sweep.points if group.sweep else ():
        out += [(f"batch {point.batch_size}", f"throughput: {w}") for w in point.stats.warnings]
    limit = group.sweep.limit if group.sweep else None
    if limit is not None:
        out.append(("sweep", f"stopped at batch {limit.batch_size}: out of memory ({limit.error})"))
    for runs in group.all_runs:
        out += [(label, text) for label, _, r in group.labelled(runs) for text in _warnings(r)]
    return out


def _warnings(r: RunResult) -> list[str]:
    errors = r.telemetry.errors if r.telemetry is not None else ()
    return [
        *r.warnings,
        *(f"LoadGen INVALID: {reason}" for reason in r.outcome.invalid_reasons),
        *(f"LoadGen error: {error}" for error in r.outcome.loadgen_errors),
        *(f"telemetry error, {e.source}: {e.error}" for e in errors),
    ]


def _label(run_dir: Path, group: Group) -> str:
    relative = run_dir.relative_to(group.path).as_posix()
    return group.label if relative == "." else relative


def load_group(path: Path) -> Group:
    """Read a run directory (result.json), a trials group or a sweep group."""
    directory = path.parent if path.is_file() else path
    if not directory.is_dir():
        raise ResultError(f"{path}: no such directory; pass a run, trials or sweep directory")
    label = directory.resolve().name
    if (directory / SWEEP_FILE).is_file():
        sweep, runs = _load_sweep(directory)
        return Group(path=directory, kind="sweep", label=label, runs=runs, sweep=sweep)
    runs = _load_runs(directory)
    kind: GroupKind = "trials" if runs.stats is not None else "run"
    return Group(path=directory, kind=kind, label=label, runs=runs)


def _load_runs(directory: Path) -> RunSet:
    if (directory / TRIALS_FILE).is_file():
        return _load_trials(directory)
    if not (directory / RESULT_FILE).is_file():
        raise ResultError(
            f"{directory}: no {RESULT_FILE}, {TRIALS_FILE} or {SWEEP_FILE}; "
            "not a beyond-tops result directory"
        )
    return RunSet(
        path=directory,
        run_dirs=(directory,),
        results=(load_result(directory),),
        stats=None,
        metric=None,
        requested=1,
    )


def _load_trials(directory: Path) -> RunSet:
    trials = read_trials(directory / TRIALS_FILE)
    run_dirs = tuple(directory / name for name in trials.runs)
    return RunSet(
        path=directory,
        run_dirs=run_dirs,
        results=tuple(load_result(d) for d in run_dirs),
        stats=trials.stats,
        metric=trials.metric,
        requested=trials.requested,
    )


def _load_sweep(directory: Path) -> tuple[Sweep, RunSet]:
    data = read_sweep(directory / SWEEP_FILE)
    points = tuple(_point(directory, p) for p in data.points)
    sweep = Sweep(
        points=points,
        saturation_batch=data.saturation_batch,
        best_batch=data.best_batch,
        stopped=data.stopped,
        limit=data.limit,
    )
    best = data.best_batch
    chosen = [p.runs for p in points if p.batch_size == best] or [p.runs for p in points[-1:]]
    empty = RunSet(path=directory, run_dirs=(), results=(), stats=None, metric=None, requested=0)
    return sweep, chosen[0] if chosen else empty


def _point(directory: Path, point: SweepFilePoint) -> GroupPoint:
    return GroupPoint(
        batch_size=point.batch_size,
        runs=_load_runs(directory / point.dir),
        stats=point.samples_per_second,
    )
