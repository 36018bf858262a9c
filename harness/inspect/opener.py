"""What a path stands for (run, trials group, sweep, bundle, fleet, published record), opened.

`open_path` says what a path is and which result directories it holds: itself for a run, a
group or a published record; a bundle's runs and groups, verified and unpacked; the results
each fleet task's latest attempt recorded. `load_side` reads one of them. `show`, `report`,
`compare` and the site all open what they are given here.

Fleets and bundles are foreign trees: a task's directory, its attempts and the runs their
records name are checked to stay inside the fleet (harness.fleet.state.read_attempts); a
bundle is verified before anything in it is read (harness.bundle.open).
"""

from __future__ import annotations

import contextlib
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from harness.bundle.open import OpenedBundle, is_bundle, open_bundle
from harness.errors import ResultError
from harness.files import read_incomplete
from harness.fleet.state import read_attempts
from harness.published.record import is_published, load_published
from harness.records.group import Group
from harness.records.layout import (
    FLEET_FILE,
    PUBLISHED_FILE,
    RESULT_FILE,
    SWEEP_FILE,
    TASKS_DIR,
    TRIALS_FILE,
)
from harness.records.published import PublishedResult
from harness.results.groups import load_group

ResultKind = Literal["run", "trials", "sweep", "published"]
Kind = Literal["run", "trials", "sweep", "bundle", "fleet", "published"]
KINDS: tuple[Kind, ...] = ("run", "trials", "sweep", "bundle", "fleet", "published")
# The file that makes a directory a result of each kind, most specific first: a fleet holds
# runs, a sweep holds trials groups and runs, a trials group holds runs.
MARKERS: tuple[tuple[str, Kind], ...] = (
    (PUBLISHED_FILE, "published"),
    (FLEET_FILE, "fleet"),
    (SWEEP_FILE, "sweep"),
    (TRIALS_FILE, "trials"),
    (RESULT_FILE, "run"),
)
# The files that stand for the result directory holding them.
RESULT_FILES: tuple[str, ...] = (RESULT_FILE, TRIALS_FILE, SWEEP_FILE, PUBLISHED_FILE)
GROUP_MARKERS: tuple[tuple[str, ResultKind], ...] = ((SWEEP_FILE, "sweep"), (TRIALS_FILE, "trials"))
Side = Group | PublishedResult


@dataclass(frozen=True, kw_only=True)
class Member:
    """One result directory a path holds: a run, a trials group, a sweep or a published record.

    ``task`` and ``attempt`` say where a fleet's result was found: the task's directory name
    (e.g. "000") and its latest attempt's (e.g. "slurm-7_0"); None elsewhere.
    """

    kind: ResultKind
    path: Path
    task: str | None = None
    attempt: str | None = None


@dataclass(frozen=True, kw_only=True)
class Opened:
    """What a path stands for and the results it holds, in order.

    ``bundle`` is what verifying a bundle found (its signer, whether trusted); ``notes`` say
    what a fleet's tasks did not leave (no attempt, no result, an unfinished run).
    """

    kind: Kind
    path: Path
    members: tuple[Member, ...]
    bundle: OpenedBundle | None = None
    notes: tuple[str, ...] = ()


def kind_of(path: Path) -> Kind | None:
    """What a directory or file is as a result, or None when it is none."""
    if path.is_file():
        return "bundle" if is_bundle(path) else None
    return next((kind for marker, kind in MARKERS if (path / marker).is_file()), None)


def open_path(path: Path, trust: Sequence[Path], stack: contextlib.ExitStack) -> Opened:
    """What `path` stands for, opened; a bundle is unpacked in a directory `stack` removes.

    Anything that is neither a bundle nor a fleet is one result: a run where nothing else
    fits, so that its loader says what is missing.

    Raises:
        HarnessError: a bundle that fails verification (BundleError and its kinds), a trusted
            key that cannot be read (ConfigError), a file that is neither a bundle nor one
            of a result directory's files (ResultError).
    """
    if is_bundle(path):
        return _bundle(path, trust, stack)
    if path.is_file() and path.name not in RESULT_FILES:
        raise ResultError(
            f"{path}: a file that holds no result; pass a run, trials, sweep or fleet "
            f"directory, one of its files ({', '.join(RESULT_FILES)}), or a bundle "
            "`harness bundle` wrote"
        )
    if (path / FLEET_FILE).is_file():
        return _fleet(path)
    member = _member(path)
    return Opened(kind=member.kind, path=path, members=(member,))


def load_side(member: Member) -> Side:
    """A member read: a published record, or a run, trials or sweep directory as a group."""
    return load_published(member.path) if member.kind == "published" else load_group(member.path)


def _member(path: Path, task: str | None = None, attempt: str | None = None) -> Member:
    """A result path as a member: a group by its directory, a run or record as given."""
    if is_published(path):
        return Member(kind="published", path=path, task=task, attempt=attempt)
    directory = path.parent if path.is_file() else path
    for marker, kind in GROUP_MARKERS:
        if (directory / marker).is_file():
            return Member(kind=kind, path=directory, task=task, attempt=attempt)
    return Member(kind="run", path=path, task=task, attempt=attempt)


def _bundle(path: Path, trust: Sequence[Path], stack: contextlib.ExitStack) -> Opened:
    """A bundle's runs and groups, verified and unpacked into a temporary directory."""
    dest = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bundle-"))) / "open"
    opened = open_bundle(path, dest, trust)
    members = tuple(_member(d) for d in opened.run_dirs)
    return Opened(kind="bundle", path=path, members=members, bundle=opened)


def _fleet(path: Path) -> Opened:
    """The results each task's latest attempt recorded; earlier attempts are left out."""
    members: list[Member] = []
    notes: list[str] = []
    for task in _task_dirs(path / TASKS_DIR):
        attempts = read_attempts(task, path)
        if attempts.latest is None:
            damaged = f" ({attempts.problems[0]})" if attempts.problems else ""
            notes.append(f"task {task.name}: no attempt has recorded a result{damaged}")
            continue
        attempt, record = attempts.latest
        runs = [attempt / e.run for e in record.entries if e.run is not None]
        finished = []
        for run in (r for r in runs if r.is_dir()):
            incomplete = read_incomplete(run)
            if incomplete is None:
                finished.append(_member(run, task.name, attempt.name))
            else:
                notes.append(f"task {task.name}: {run.name}: incomplete: {incomplete.cause}")
        members += finished
        if not finished:
            notes.append(f"task {task.name}: no result in {attempt.name}")
    return Opened(kind="fleet", path=path, members=tuple(members), notes=tuple(notes))


def _task_dirs(tasks: Path) -> list[Path]:
    """The fleet's task directories (tasks/000, tasks/001, ...), in index order."""
    if not tasks.is_dir():
        return []
    return sorted(p for p in tasks.iterdir() if p.is_dir() and re.fullmatch(r"\d+", p.name))
