"""trials.json and sweep.json: the summary files of a trials group and a batch sweep.

One module reads and writes both, through the same checked codec as result.json.
History of GROUP_SCHEMA_VERSION: 1, the first (unchanged by result schema 3); 2 adds
`complete` and `failure` to both files: a group that failed or was stopped keeps the runs
or points that finished and says why (version 1 files read as complete); 3 adds `spreads`
to trials.json (every reported metric's spread, in its shown name and unit) and
`requested_batches`, `skipped`, `skip_reason` and `saturation` (the verdict with its
caveat) to sweep.json, and gives the trial warnings' values in the metric's shown unit
(ms, not ns). Older trials files read with no spreads and their warnings written anew from
their values, in shown units; older sweep files with their measured batches as the requested
ones, none skipped, and the verdict computed from their points.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

from harness.analysis.sweep import saturation_verdict
from harness.analysis.trials import trial_stats
from harness.config import ProfileName, ScenarioName
from harness.errors import ResultError
from harness.files import atomic_write_text
from harness.records.codec import from_data, to_data, to_object
from harness.records.metrics import metric
from harness.records.sweep import SaturationVerdict, StopReason, SweepLimit, SweepPoint
from harness.records.trials import MetricSpread, TrialStats
from harness.strictjson import Format, Json, JsonObject, read_versioned

GROUP_SCHEMA_VERSION = 3
OLDEST_READABLE = 1
GroupFileKind = Literal["trials", "sweep"]


def _group_format(kind: GroupFileKind) -> Format:
    return Format(
        what=f"a beyond-tops {kind} file",
        newest=GROUP_SCHEMA_VERSION,
        oldest=OLDEST_READABLE,
        kind=kind,
        older_fix="re-run it",
    )


GROUP_FORMATS: dict[GroupFileKind, Format] = {k: _group_format(k) for k in ("trials", "sweep")}
T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class TrialsFile:
    """A trials group: its run directories (names within the group) and one metric's stats."""

    scenario_name: str
    scenario: ScenarioName
    batch_size: int
    profile: ProfileName
    requested: int
    runs: tuple[str, ...]
    metric: str
    stats: TrialStats  # over the runs that finished
    complete: bool = True  # False: a trial failed or was stopped; `runs` are those before it
    failure: str | None = None  # why it is not complete
    spreads: tuple[MetricSpread, ...] = ()  # every reported metric (); () before version 3


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepFilePoint:
    """One batch size: its directory within the sweep and its samples/s over trials."""

    batch_size: int
    dir: str
    samples_per_second: TrialStats


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepFile:
    """A batch sweep: its points in order, where it saturated and why it stopped."""

    scenario_name: str
    profile: ProfileName
    points: tuple[SweepFilePoint, ...]
    saturation_batch: int | None
    best_batch: int | None
    stopped: StopReason
    limit: SweepLimit | None
    complete: bool = True  # False: a point failed (not out of memory) or the sweep was stopped
    failure: str | None = None  # why it is not complete
    requested_batches: tuple[int, ...] = ()  # every batch size asked for, in order
    skipped: tuple[int, ...] = ()  # requested but never run, after the one it stopped at
    skip_reason: str | None = None  # why they were skipped
    saturation: SaturationVerdict | None = None  # None only in a record not yet written


def write_trials(path: Path, trials: TrialsFile) -> None:
    """Write trials.json atomically."""
    _write(path, "trials", trials)


def write_sweep(path: Path, sweep: SweepFile) -> None:
    """Write sweep.json atomically."""
    _write(path, "sweep", sweep)


def read_trials(path: Path) -> TrialsFile:
    """Read trials.json; ResultError, in one line, for anything this version cannot read."""
    return _read(path, "trials", TrialsFile)


def read_sweep(path: Path) -> SweepFile:
    """Read sweep.json; ResultError, in one line, for anything this version cannot read."""
    return _read(path, "sweep", SweepFile)


def _write(path: Path, kind: GroupFileKind, record: object) -> None:
    data = {"schema_version": GROUP_SCHEMA_VERSION, "kind": kind, **to_object(record)}
    atomic_write_text(path, json.dumps(data, indent=2) + "\n")


def _read(path: Path, kind: GroupFileKind, cls: type[T]) -> T:
    read = read_versioned(path, GROUP_FORMATS[kind], ResultError)
    version = read.version
    data = {k: v for k, v in read.data.items() if k not in ("schema_version", "kind")}
    try:
        record = from_data(cls, _migrated(kind, data, version))
        if isinstance(record, TrialsFile):
            _check_metrics(record)
        return record
    except ResultError as exc:
        raise ResultError(f"{path}: {exc}; re-run it") from None


def _check_metrics(trials: TrialsFile) -> None:
    """The metrics a trials file names are the catalogue's (ResultError names the bad one)."""
    named = [("metric", trials.metric)]
    named += [(f"spreads[{i}].metric", s.metric) for i, s in enumerate(trials.spreads)]
    for where, key in named:
        try:
            metric(key)
        except ResultError as exc:
            raise ResultError(f"{where}: {exc}") from None


def _migrated(kind: GroupFileKind, data: JsonObject, version: int) -> JsonObject:
    """A version 1 or 2 file's data as version 3: what it did not record, derived or empty."""
    if version == 1:  # written only when the whole group finished
        data = {"complete": True, "failure": None, **data}
    if version >= 3:
        return data
    if kind == "trials":
        return {**data, "spreads": [], "stats": _warnings_as_shown(data)}
    raw = data.get("points")
    if not isinstance(raw, list):
        return data  # from_data says what is wrong
    points = [from_data(SweepFilePoint, p, f"points[{i}]") for i, p in enumerate(raw)]
    measured: list[Json] = [p.batch_size for p in points]
    limit = data.get("limit")
    if isinstance(limit, dict) and isinstance(size := limit.get("batch_size"), int):
        measured.append(size)
    verdict = saturation_verdict(
        [SweepPoint(batch_size=p.batch_size, stats=p.samples_per_second) for p in points]
    )
    return {
        **data,
        "requested_batches": measured,
        "skipped": [],
        "skip_reason": None,
        "saturation": to_data(verdict),
    }


def _warnings_as_shown(data: JsonObject) -> Json:
    """A pre-3 trials file's stats, its warnings (written in the stored unit) anew as shown."""
    raw, name = data.get("stats"), data.get("metric")
    if not isinstance(raw, dict) or not isinstance(name, str):
        return raw  # from_data says what is wrong
    try:
        stats = from_data(TrialStats, raw, "stats")
        how = metric(name)
    except ResultError:
        return raw  # reading the whole file says what is wrong, in the file's order
    if not stats.values:
        return raw
    again = trial_stats(
        stats.values,
        requested=stats.requested,
        higher_is_better=stats.higher_is_better,
        shown=how,
    )
    warnings: list[Json] = list(again.warnings)
    return {**raw, "warnings": warnings}
