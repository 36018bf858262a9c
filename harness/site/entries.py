"""Copy each result found into the site and load it from there, so the site is relocatable."""

from __future__ import annotations

import dataclasses
import re
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.analysis.groups import Group, load_group
from harness.bundle.open import open_bundle
from harness.errors import ResultError
from harness.fleet.plan import TASKS_DIR
from harness.fleet.state import latest_attempt
from harness.results.published import PublishedResult, load_published
from harness.site.discover import EntryKind, Found, discover

# Files larger than this stay where they are: the entry page names them and their path.
MAX_COPY_BYTES = 16 * 1024 * 1024
DATA_DIR = "data"


@dataclass(frozen=True, kw_only=True)
class Entry:
    """One result of the site: its groups and published records, loaded from the site's copy.

    ``slug`` names its folder under the site's entries/; ``data`` is its copied tree there;
    ``notes`` say what a reader should know (a bundle's verification, files not copied).
    """

    slug: str
    kind: EntryKind
    title: str
    source: Path
    groups: tuple[Group, ...]
    published: tuple[PublishedResult, ...]
    data: Path
    notes: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class Copied:
    """A tree copied into the site, and what was left out of it."""

    path: Path
    left_out: tuple[str, ...]


def load_entry(found: Found, slug: str, entry_dir: Path, trust: Sequence[Path]) -> Entry:
    """Copy `found` under entry_dir/data and load it from the copy.

    Raises:
        HarnessError: as the loader of its kind does (ResultError, BundleError, ...).
    """
    data = entry_dir / DATA_DIR
    if found.kind == "bundle":
        return _bundle(found, slug, data, trust)
    if found.kind == "fleet":
        return _fleet(found, slug, data)
    copied = copy_tree(found.path, data / found.path.name)
    base = Entry(
        slug=slug,
        kind=found.kind,
        title=found.path.name,
        source=found.path,
        groups=(),
        published=(),
        data=data,
        notes=copied.left_out,
    )
    if found.kind == "published":
        record = load_published(copied.path)
        return dataclasses.replace(base, title=record.label, published=(record,))
    group = _load(copied.path, found.path.name)
    return dataclasses.replace(base, title=group.label, groups=(group,))


def _load(path: Path, label: str) -> Group:
    return dataclasses.replace(load_group(path), label=label)


def _bundle(found: Found, slug: str, data: Path, trust: Sequence[Path]) -> Entry:
    name = found.path.name.removesuffix(".tar").removesuffix(".bundle")
    with tempfile.TemporaryDirectory(prefix="site-bundle-") as tmp:
        opened = open_bundle(found.path, Path(tmp) / "open", trust)
        copies = [copy_tree(d, data / d.name) for d in opened.run_dirs]
    signer = "trusted" if opened.trusted else "NOT checked (pass --trust KEY.pub)"
    note = f"bundle {found.path.name}: verified; signer {opened.signer_fingerprint} {signer}"
    groups = tuple(_load(c.path, c.path.name) for c in copies)
    return Entry(
        slug=slug,
        kind="bundle",
        title=f"bundle {name}",
        source=found.path,
        groups=groups,
        published=(),
        data=data,
        notes=(note, *_left_out(copies)),
    )


def _fleet(found: Found, slug: str, data: Path) -> Entry:
    """The results of each task's latest attempt; earlier attempts are left out, as collect does."""
    copies: list[tuple[str, Copied]] = []
    notes: list[str] = []
    for task in _task_dirs(found.path / TASKS_DIR):
        latest = latest_attempt(task)
        if latest is None:
            notes.append(f"task {task.name}: no attempt has recorded a result")
            continue
        attempt = latest[0]
        inner = discover([attempt]).found
        notes += [f"task {task.name}: no result in {attempt.name}"] if not inner else []
        for item in inner:
            relative = item.path.relative_to(found.path)
            copies.append((task.name, copy_tree(item.path, data / relative)))
    groups = tuple(_load(c.path, f"task {task} {c.path.name}") for task, c in copies)
    return Entry(
        slug=slug,
        kind="fleet",
        title=f"fleet {found.path.name}",
        source=found.path,
        groups=groups,
        published=(),
        data=data,
        notes=(*notes, *_left_out(c for _, c in copies)),
    )


def _task_dirs(tasks: Path) -> list[Path]:
    if not tasks.is_dir():
        return []
    return sorted(p for p in tasks.iterdir() if p.is_dir() and re.fullmatch(r"\d+", p.name))


def _left_out(copies: Iterable[Copied]) -> tuple[str, ...]:
    return tuple(line for c in copies for line in c.left_out)


def copy_tree(source: Path, dest: Path) -> Copied:
    """Copy a result's directory; files over MAX_COPY_BYTES and links stay behind, named."""
    left_out: list[str] = []

    def ignore(directory: str, names: list[str]) -> set[str]:
        skipped = set()
        for name in names:
            path = Path(directory) / name
            if path.is_symlink():
                skipped.add(name)
                left_out.append(f"{path}: a symbolic link, not copied")
            elif path.is_file() and path.stat().st_size > MAX_COPY_BYTES:
                skipped.add(name)
                size_mib = path.stat().st_size / 2**20
                left_out.append(f"{path}: {size_mib:,.0f} MiB, not copied (read it there)")
        return skipped

    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(source, dest, ignore=ignore)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ResultError(f"{source}: cannot copy it into the site ({reason})") from None
    return Copied(path=dest, left_out=tuple(left_out))
