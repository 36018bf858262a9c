"""What a run, trials or sweep directory holds, as one frozen group of results."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from harness.records.result import RunResult
from harness.records.sweep import StopReason, SweepLimit
from harness.records.trials import TrialStats

GroupKind = Literal["run", "trials", "sweep"]


@dataclass(frozen=True, kw_only=True)
class UnfinishedRun:
    """A run directory of a group that holds no result: its INCOMPLETE marker's cause."""

    path: Path
    cause: str


@dataclass(frozen=True, kw_only=True)
class RunSet:
    """Runs of one configuration: a single run, or the trials of a trials group."""

    path: Path
    run_dirs: tuple[Path, ...]
    results: tuple[RunResult, ...]
    stats: TrialStats | None  # trials.json's statistics; None for a single run
    metric: str | None  # the metric the statistics are over
    requested: int
    unfinished: tuple[UnfinishedRun, ...] = ()  # trials left INCOMPLETE, listed, never measured


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


def _label(run_dir: Path, group: Group) -> str:
    relative = run_dir.relative_to(group.path).as_posix()
    return group.label if relative == "." else relative
