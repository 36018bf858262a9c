"""Copy each result found into the site and load it from there, so the site is relocatable."""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.errors import ResultError
from harness.inspect.opener import Member, Opened, Side, load_side, open_path
from harness.inspect.trust import Judge, trust_of
from harness.records.group import Group
from harness.records.layout import BUNDLE_SUFFIX
from harness.records.published import PublishedResult
from harness.records.runlabel import shared_label
from harness.records.trust import Trust
from harness.site.discover import EntryKind, Found

# Files larger than this stay where they are: the entry page names them and their path.
MAX_COPY_BYTES = 16 * 1024 * 1024
DATA_DIR = "data"


@dataclass(frozen=True, kw_only=True)
class Entry:
    """One result of the site: its groups and published records, loaded from the site's copy.

    ``slug`` names its folder under the site's entries/; ``data`` is its copied tree there;
    ``notes`` say what a reader should know (a bundle's verification, files not copied);
    ``trust`` is each group's, then each published record's (harness.inspect.trust).
    """

    slug: str
    kind: EntryKind
    title: str
    source: Path
    groups: tuple[Group, ...]
    published: tuple[PublishedResult, ...]
    data: Path
    notes: tuple[str, ...]
    trust: tuple[Trust, ...] = ()

    def trust_of(self, side: Side) -> Trust | None:
        """The trust of one of its groups or published records (by identity)."""
        sides: list[Side] = [*self.groups, *self.published]
        found = [t for s, t in zip(sides, self.trust, strict=False) if s is side]
        return found[0] if found else None


@dataclass(frozen=True, kw_only=True)
class Copied:
    """A tree copied into the site, and what was left out of it."""

    path: Path
    left_out: tuple[str, ...]


def load_entry(
    found: Found, slug: str, entry_dir: Path, trust: Sequence[Path], judge: Judge = trust_of
) -> Entry:
    """Copy what `found` holds (harness.inspect.opener) under entry_dir/data; load the copy.

    `judge` gives each result's trust from what it and its files say (harness.inspect.trust).

    Raises:
        HarnessError: as the loader of its kind does (ResultError, BundleError, ...).
    """
    data = entry_dir / DATA_DIR
    with contextlib.ExitStack() as stack:  # a bundle's unpacked tree lives until copied
        opened = open_path(found.path, trust, stack)
        copies = [(m, copy_tree(m.path, data / _place(opened, m))) for m in opened.members]
    sides = [load_side(dataclasses.replace(m, path=c.path)) for m, c in copies]
    groups = tuple(
        dataclasses.replace(side, label=_label(opened, member, copied, side))
        for (member, copied), side in zip(copies, sides, strict=True)
        if isinstance(side, Group)
    )
    published = tuple(side for side in sides if not isinstance(side, Group))
    left_out = _left_out(c for _, c in copies)
    every: list[Side] = [*groups, *published]
    trusts = tuple(judge(side, opened) for side in every)
    return Entry(
        slug=slug,
        kind=found.kind,
        title=_title(opened, groups, published),
        source=found.path,
        groups=groups,
        published=published,
        data=data,
        notes=(*_bundle_note(opened), *opened.notes, *left_out),
        trust=trusts,
    )


def _place(opened: Opened, member: Member) -> Path:
    """Where a member's copy goes under data/: a fleet's keeps its path in the fleet."""
    if opened.kind == "fleet":
        return member.path.relative_to(opened.path)
    return Path(member.path.name)


def _label(opened: Opened, member: Member, copied: Copied, group: Group) -> str:
    """The group's --label where it has one, else where it came from."""
    given = shared_label(r.label for r in group.results)
    if member.task is not None:
        return f"task {member.task} {given or copied.path.name}"
    if given is not None:
        return given
    return opened.path.name if opened.kind != "bundle" else copied.path.name


def _title(opened: Opened, groups: Sequence[Group], published: Sequence[PublishedResult]) -> str:
    if opened.kind == "bundle":
        name = opened.path.name.removesuffix(BUNDLE_SUFFIX).removesuffix(".bundle")
        return f"bundle {name}"
    if opened.kind == "fleet":
        return f"fleet {opened.path.name}"
    first = published[0].label if published else groups[0].label if groups else None
    return first or opened.path.name


def _bundle_note(opened: Opened) -> tuple[str, ...]:
    bundle = opened.bundle
    if bundle is None:
        return ()
    signer = "trusted" if bundle.trusted else "NOT checked (pass --trust KEY.pub)"
    note = f"bundle {opened.path.name}: verified; signer {bundle.signer_fingerprint} {signer}"
    return (note,)


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
