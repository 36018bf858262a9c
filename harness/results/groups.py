"""Load a run, trials or sweep directory into one frozen group of results."""

from __future__ import annotations

from pathlib import Path

from harness.errors import ResultError
from harness.files import read_incomplete
from harness.records.group import Group, GroupKind, GroupPoint, RunSet, Sweep, UnfinishedRun
from harness.records.layout import LOAD_FILE, RESULT_FILE, SWEEP_FILE, TRIALS_FILE
from harness.records.runlabel import shared_label, shown_name
from harness.results.groupfile import SweepFilePoint, read_sweep, read_trials
from harness.results.runfile import load_result


def load_group(path: Path) -> Group:
    """Read a run directory (result.json), a trials group or a sweep group."""
    directory = path.parent if path.is_file() else path
    if not directory.is_dir():
        raise ResultError(f"{path}: no such directory; pass a run, trials or sweep directory")
    name = directory.resolve().name
    if (directory / LOAD_FILE).is_file():
        raise ResultError(
            f"{directory}: a load sweep ({LOAD_FILE}); `harness show` prints it, and each of "
            "its rates (qps-*/) is a trials group that report and compare read"
        )
    if (directory / SWEEP_FILE).is_file():
        sweep, runs = _load_sweep(directory)
        label = shown_name(shared_label(r.label for r in runs.results), name)
        return Group(path=directory, kind="sweep", label=label, runs=runs, sweep=sweep)
    runs = _load_runs(directory)
    kind: GroupKind = "trials" if runs.stats is not None else "run"
    label = shown_name(shared_label(r.label for r in runs.results), name)
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
        unfinished=_unfinished(directory, set(trials.runs)),
    )


def _unfinished(directory: Path, finished: set[str]) -> tuple[UnfinishedRun, ...]:
    """The trial directories beside the finished ones that an INCOMPLETE marker names."""
    found = []
    for child in sorted(directory.iterdir(), key=lambda p: p.name):
        if child.name in finished or child.is_symlink() or not child.is_dir():
            continue
        marker = read_incomplete(child)
        if marker is not None:
            found.append(UnfinishedRun(path=child, cause=marker.cause))
    return tuple(found)


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
