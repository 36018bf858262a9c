"""Find every result under some paths: runs, groups, sweeps, bundles, fleets, published records."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from harness.bundle.open import is_bundle
from harness.errors import ResultError
from harness.files import INCOMPLETE_FILE, RESULT_FILE, read_incomplete
from harness.fleet.plan import FLEET_FILE
from harness.results.groupfile import SWEEP_FILE, TRIALS_FILE
from harness.results.published import RECORD_FILE

EntryKind = Literal["run", "trials", "sweep", "bundle", "fleet", "published"]
KINDS: tuple[EntryKind, ...] = ("run", "trials", "sweep", "bundle", "fleet", "published")
# The file that makes a directory an entry of each kind, most specific first: a fleet holds
# runs, a sweep holds trials groups and runs, a trials group holds runs.
MARKERS: tuple[tuple[str, EntryKind], ...] = (
    (RECORD_FILE, "published"),
    (FLEET_FILE, "fleet"),
    (SWEEP_FILE, "sweep"),
    (TRIALS_FILE, "trials"),
    (RESULT_FILE, "run"),
)
BUNDLE_SUFFIX = ".tar"


@dataclass(frozen=True, kw_only=True)
class Found:
    """A result found on disk: what it is and where."""

    kind: EntryKind
    path: Path


@dataclass(frozen=True, kw_only=True)
class Skipped:
    """A directory that looked like a result but holds none, and why."""

    path: Path
    reason: str
    failed: bool = False  # True: it is a result that could not be read (not merely unfinished)


@dataclass(frozen=True, kw_only=True)
class Discovery:
    """Everything found under the paths given, in a stable order, and what was passed over."""

    found: tuple[Found, ...]
    skipped: tuple[Skipped, ...]


def discover(roots: Sequence[Path], *, exclude: Path | None = None) -> Discovery:
    """Walk each root for results; a result's own directory is not searched further.

    Hidden entries and symbolic links to directories are passed over (no loops); so is
    `exclude` (the site being written, when it lies under a root).

    Raises:
        ResultError: a root does not exist.
    """
    found: dict[Path, Found] = {}
    skipped: list[Skipped] = []
    for root in roots:
        if not root.exists():
            raise ResultError(f"{root}: no such file or directory; pass a results directory")
        for item in _walk(root, exclude.resolve() if exclude else None):
            if isinstance(item, Skipped):
                skipped.append(item)
            else:
                found.setdefault(item.path.resolve(), item)
    return Discovery(found=tuple(found.values()), skipped=tuple(skipped))


def kind_of(path: Path) -> EntryKind | None:
    """What a directory or file is as a result, or None when it is none."""
    if path.is_file():
        return "bundle" if is_bundle(path) else None
    return next((kind for marker, kind in MARKERS if (path / marker).is_file()), None)


def _walk(path: Path, exclude: Path | None) -> Iterator[Found | Skipped]:
    if exclude is not None and path.resolve() == exclude:
        return
    if path.is_file():
        if is_bundle(path):
            yield Found(kind="bundle", path=path)
        return
    kind = kind_of(path)
    if kind is not None:
        yield Found(kind=kind, path=path)
        return
    if (path / INCOMPLETE_FILE).is_file():
        incomplete = read_incomplete(path)
        yield Skipped(path=path, reason=f"incomplete: {incomplete.cause if incomplete else ''}")
        return
    yield from _children(path, exclude)


def _children(path: Path, exclude: Path | None) -> Iterator[Found | Skipped]:
    try:
        children = sorted(path.iterdir())
    except OSError as exc:
        yield Skipped(path=path, reason=f"not readable ({exc.strerror})")
        return
    for child in children:
        if child.name.startswith(".") or (child.is_symlink() and child.is_dir()):
            continue
        if child.is_dir() or child.name.endswith(BUNDLE_SUFFIX):
            yield from _walk(child, exclude)
