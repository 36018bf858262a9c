"""A fleet directory made whole or not at all: planned beside its name, then moved there.

`harness fleet slurm|k8s` writes the plan, the task files, the staged models and the scripts
into a hidden directory next to the fleet's final name (`.NAME.planning`), and renames it into
place only once every file is written. A plan refused or interrupted on the way leaves
nothing behind: no half-planned fleet directory, and no --out directory it created itself.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from harness.errors import ConfigError, ResultError
from harness.fleet.plan import Entry
from harness.foreign import Progress, sha256_file
from harness.records.layout import LOGS_DIR, MODELS_DIR, TASKS_DIR


@dataclass(frozen=True, kw_only=True)
class Staging:
    """Where a fleet is being planned (`work`) and the name it will have (`final`)."""

    work: Path
    final: Path  # absolute: scripts and manifests name the fleet by it


def fleet_name(suite: str) -> str:
    """A new fleet directory's name: `<UTC time>-fleet-<suite>-<6 hex digits>`."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return f"{stamp}-fleet-{suite}-{secrets.token_hex(3)}"


def final_path(out: Path, suite: str) -> Path:
    """The absolute path the next fleet of `suite` will have under `out` (nothing made yet)."""
    for _ in range(10):
        path = out.absolute() / fleet_name(suite)
        if not path.exists():
            return path
    raise ResultError(f"{out}: could not find a free fleet directory name")


@contextmanager
def planned(final: Path) -> Iterator[Staging]:
    """A staging directory for the fleet `final`, renamed to it when the block ends well."""
    out = final.parent
    made = _make_out(out)
    work = out / f".{final.name}.planning"
    committed = False
    try:
        _mkdir(work)
        for sub in (TASKS_DIR, MODELS_DIR, LOGS_DIR):
            (work / sub).mkdir()
        yield Staging(work=work, final=final)
        _commit(work, final)
        committed = True
    finally:
        if not committed:
            shutil.rmtree(work, ignore_errors=True)
            for directory in made:  # deepest first
                _remove_empty(directory)


def _make_out(out: Path) -> list[Path]:
    """Create --out if it is missing; the directories created here, deepest first."""
    if out.exists():
        if not out.is_dir():
            raise ResultError(f"{out}: is a file, not a directory; pass a directory as --out")
        if not os.access(out, os.W_OK | os.X_OK):
            raise ResultError(
                f"{out}: results directory is not writable; pass a writable --out"
            ) from None
        return []
    missing = [p for p in [out, *out.parents] if not p.exists()]
    try:
        out.mkdir(parents=True)
    except OSError as exc:
        raise ResultError(
            f"{out}: cannot create the results directory ({exc.strerror}); pass a writable --out"
        ) from None
    return missing


def _remove_empty(out: Path) -> None:
    with contextlib.suppress(OSError):  # not empty: someone else wrote there meanwhile
        out.rmdir()


def _mkdir(path: Path) -> None:
    try:
        path.mkdir()
    except OSError as exc:
        raise ResultError(
            f"{path}: cannot create it ({exc.strerror}); pass a writable --out"
        ) from None


def _commit(work: Path, final: Path) -> None:
    if final.exists():
        raise ResultError(f"{final}: already exists; a fleet directory is never overwritten")
    try:
        work.rename(final)
    except OSError as exc:
        raise ResultError(
            f"{final}: cannot move the planned fleet there ({exc.strerror})"
        ) from None


def stage_models(fleet: Path, entries: Sequence[Entry]) -> tuple[Entry, ...]:
    """Copy each model file a scenario names into FLEET/models/ and point the scenario there.

    Every node then reads the same bytes, wherever FLEET is mounted. The copy is named by its
    content (models/<sha256 prefix>/<its own name>), so two scenarios naming one file share
    it. Zoo models are generated on each node (deterministically: their checksum is in every
    result).
    """
    staged: list[Entry] = []
    for entry in entries:
        path = entry.scenario.model.path
        if path is None:
            staged.append(entry)
            continue
        source = Path(path)
        if not source.is_file():
            raise ConfigError(
                f"{entry.scenario_path}: model.path: {path} is not a file; fix the path"
            )
        digest = sha256_file(source, ConfigError, progress=_progress(source))
        target = fleet / MODELS_DIR / digest[:16] / source.name  # the name is the model's name
        if not target.exists():
            target.parent.mkdir(exist_ok=True)
            _copy(source, target)
        model = replace(entry.scenario.model, path=target.relative_to(fleet).as_posix())
        staged.append(replace(entry, scenario=replace(entry.scenario, model=model)))
    return tuple(staged)


def _progress(source: Path) -> Progress:
    def say(done: int, total: int) -> None:
        print(f"== hashing {source}: {done >> 30} of {total >> 30} GiB", file=sys.stderr)

    return say


def _copy(source: Path, target: Path) -> None:
    tmp = target.with_name(f".{target.name}.tmp")
    try:
        shutil.copyfile(source, tmp)
        tmp.replace(target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise ResultError(f"{target}: cannot copy the model there ({exc.strerror})") from None
