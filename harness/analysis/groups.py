"""Load a run, trials or sweep directory into one frozen group of results."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal

from harness.analysis.stats import TrialStats
from harness.errors import ResultError
from harness.result import RESULT_FILE, RunResult, load_result

TRIALS_FILE = "trials.json"
SWEEP_FILE = "sweep.json"
GROUP_SCHEMA_VERSION = 1
GroupKind = Literal["run", "trials", "sweep"]
_KINDS = {list: "a list", dict: "an object", str: "a string", int: "an integer"}
RESULT_FIELDS = frozenset(f.name for f in fields(RunResult))


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
    stopped: str
    limit: Mapping[str, Any] | None


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
        out += [("trials", f"{group.runs.metric}: {w}") for w in group.runs.stats.warnings]
    for point in group.sweep.points if group.sweep else ():
        out += [
            (f"batch {point.batch_size}", f"samples_per_second: {w}") for w in point.stats.warnings
        ]
    limit = group.sweep.limit if group.sweep else None
    if limit is not None:
        batch, error = limit.get("batch_size"), limit.get("error")
        out.append(("sweep", f"stopped at batch {batch}: out of memory ({error})"))
    for runs in group.all_runs:
        out += [(label, text) for label, _, r in group.labelled(runs) for text in _warnings(r)]
    return out


def _warnings(r: RunResult) -> list[str]:
    errors = (r.telemetry or {}).get("errors") or []
    return [
        *r.warnings,
        *(f"LoadGen INVALID: {reason}" for reason in r.invalid_reasons),
        *(f"LoadGen error: {error}" for error in r.loadgen_errors),
        *(f"telemetry error, {e.get('source')}: {e.get('error')}" for e in errors),
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


def values_of(results: Sequence[RunResult], metric: str) -> list[float]:
    """The metric's value in each result that has one; null or absent values are skipped.

    Metrics are result.json paths: "samples_per_second", "latency_ns.p90",
    "telemetry.sources.gpu0.avg_power_w".
    """
    head, *rest = metric.split(".")
    if head not in RESULT_FIELDS:
        raise ResultError(
            f"unknown metric {metric!r}; use a result.json path such as "
            "samples_per_second or latency_ns.p90"
        )
    values = []
    for result in results:
        value: Any = getattr(result, head, None)
        for key in rest:
            value = value.get(key) if isinstance(value, Mapping) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            values.append(float(value))
    return values


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
    path = directory / TRIALS_FILE
    data = _read_group_file(path, "trials")
    runs = _field(data, path, "runs", list)
    run_dirs = tuple(directory / str(name) for name in runs)
    return RunSet(
        path=directory,
        run_dirs=run_dirs,
        results=tuple(load_result(d) for d in run_dirs),
        stats=_stats(_field(data, path, "stats", dict), path),
        metric=str(_field(data, path, "metric", str)),
        requested=int(_field(data, path, "requested", int)),
    )


def _load_sweep(directory: Path) -> tuple[Sweep, RunSet]:
    path = directory / SWEEP_FILE
    data = _read_group_file(path, "sweep")
    points = tuple(_point(directory, path, item) for item in _field(data, path, "points", list))
    best = _optional(data, path, "best_batch", int)
    sweep = Sweep(
        points=points,
        saturation_batch=_optional(data, path, "saturation_batch", int),
        best_batch=best,
        stopped=str(_field(data, path, "stopped", str)),
        limit=_optional(data, path, "limit", dict),
    )
    chosen = [p.runs for p in points if p.batch_size == best] or [p.runs for p in points[-1:]]
    empty = RunSet(path=directory, run_dirs=(), results=(), stats=None, metric=None, requested=0)
    return sweep, chosen[0] if chosen else empty


def _point(directory: Path, path: Path, item: Any) -> GroupPoint:
    if not isinstance(item, Mapping):
        raise ResultError(f"{path}: a sweep point is not an object; re-run the sweep")
    point_dir = directory / str(_field(item, path, "dir", str))
    return GroupPoint(
        batch_size=int(_field(item, path, "batch_size", int)),
        runs=_load_runs(point_dir),
        stats=_stats(_field(item, path, "samples_per_second", dict), path),
    )


def _read_group_file(path: Path, kind: str) -> Mapping[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ResultError(f"{path}: not readable JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("kind") != kind:
        raise ResultError(f"{path}: not a beyond-tops {kind} file (kind is not {kind!r})")
    version = data.get("schema_version")
    if not isinstance(version, int):
        raise ResultError(f"{path}: no schema_version; not a beyond-tops {kind} file")
    if version > GROUP_SCHEMA_VERSION:
        raise ResultError(
            f"{path}: schema_version {version} was written by a newer beyond-tops; upgrade"
        )
    return data


def _field(data: Mapping[str, Any], path: Path, key: str, kind: type) -> Any:
    value = data.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise ResultError(f"{path}: {key!r} absent or not {_KINDS[kind]}; re-run it")
    return value


def _optional(data: Mapping[str, Any], path: Path, key: str, kind: type) -> Any:
    return None if data.get(key) is None else _field(data, path, key, kind)


def _stats(data: Mapping[str, Any], path: Path) -> TrialStats:
    try:
        return TrialStats.from_dict(data)
    except ResultError as exc:
        raise ResultError(f"{path}: {exc}") from None
