"""Find every result under some paths: runs, groups, sweeps, bundles, fleets, published records."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.bundle.open import is_bundle
from harness.errors import ResultError
from harness.files import INCOMPLETE_FILE, read_incomplete
from harness.inspect.opener import Kind, kind_of
from harness.records.layout import BUNDLE_SUFFIX

EntryKind = Kind  # what a result found is: the opener's kinds (harness.inspect.opener)


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
