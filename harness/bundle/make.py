"""`harness bundle`: finished runs and groups into one signed, byte-for-byte reproducible tar."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from harness.analysis.plausibility import refuse_implausible
from harness.bundle.manifest import FileEntry, Provenance, manifest_bytes, run_record
from harness.bundle.numbers import check_run, describe_all
from harness.bundle.signature import signature_bytes
from harness.bundle.tarball import (
    CHUNK_BYTES,
    MAX_MEMBER_BYTES,
    MAX_MEMBERS,
    Member,
    unsafe_reason,
    write_tar,
)
from harness.errors import ConfigError, EditedResultError, ImplausibleError, ResultError
from harness.files import INCOMPLETE_FILE, atomic_create, read_incomplete
from harness.records.layout import (
    BUNDLE_RUNS_DIR,
    MANIFEST_FILE,
    RESULT_FILE,
    SIGNATURE_FILE,
    SWEEP_FILE,
    TRIALS_FILE,
)
from harness.results.runfile import from_dict
from harness.strictjson import JsonObject, read_json
from harness.text import printable

# What makes a directory a root a bundle takes, by the file that marks it, in this order.
ROOT_KINDS = ((RESULT_FILE, "run"), (TRIALS_FILE, "trials"), (SWEEP_FILE, "sweep"))


@dataclass(frozen=True, kw_only=True)
class BundleRequest:
    """What to bundle, the key to sign with, the new tar, and the harness that makes it."""

    sources: tuple[Path, ...]
    key: Ed25519PrivateKey
    out: Path
    made_by: Provenance


@dataclass(frozen=True, kw_only=True)
class Bundled:
    """A bundle as written: its path, top-level roots (path in the tar: kind) and file count."""

    path: Path
    roots: dict[str, str]
    files: int


@dataclass(frozen=True, kw_only=True)
class _Item:
    name: str  # in the tar
    source: Path
    is_dir: bool


def make_bundle(request: BundleRequest) -> Bundled:
    """Check the sources, hash every file, sign the manifest and write the tar atomically.

    Raises:
        ResultError: a source is not a finished run or group, holds a link or a special file,
            or the output exists (never overwritten) or cannot be written.
        EditedResultError: a result.json disagrees with its own LoadGen log.
        ConfigError: two sources share a name, or one lies inside another.
    """
    _check_out(request.out)
    roots = _roots(request.sources)
    items = [item for name, path in roots.items() for item in _walk(path, name)]
    if len(items) + 3 > MAX_MEMBERS:  # + MANIFEST.json, MANIFEST.sig, runs/
        raise ResultError(
            f"{request.sources[0]}: {len(items):,} files and directories, more than the "
            f"{MAX_MEMBERS:,} a bundle may hold; bundle fewer runs at once"
        )
    files = [_entry(item) for item in items if not item.is_dir]
    runs = [_run(item) for item in items if item.source.name == RESULT_FILE and not item.is_dir]
    kinds = {name: _kind(path) for name, path in roots.items()}
    manifest = manifest_bytes(files=files, roots=kinds, runs=runs, made_by=request.made_by)
    members = [
        Member(name=MANIFEST_FILE, data=manifest),
        Member(name=SIGNATURE_FILE, data=signature_bytes(request.key, manifest)),
        Member(name=BUNDLE_RUNS_DIR),
        *_members(items, {f.path: f for f in files}),
    ]
    try:
        atomic_create(request.out, lambda handle: write_tar(handle, members))
    except FileExistsError:
        raise ResultError(_out_exists(request.out)) from None
    except OSError as exc:
        raise ResultError(f"{request.out}: cannot write the bundle ({exc.strerror})") from None
    return Bundled(path=request.out, roots=kinds, files=len(files))


def _check_out(out: Path) -> None:
    if out.exists() or out.is_symlink():
        raise ResultError(_out_exists(out))
    if not out.parent.is_dir():
        raise ResultError(f"{out.parent}: no such directory; create it or pass another --out")


def _out_exists(out: Path) -> str:
    return f"{out}: already exists; a bundle is never overwritten: pass another --out"


def _roots(sources: Sequence[Path]) -> dict[str, Path]:
    """Each source under its tar name, runs/<directory name>, once checked to be a root."""
    roots: dict[str, Path] = {}
    for source in sources:
        path = source.resolve()
        _kind(path)
        name = f"{BUNDLE_RUNS_DIR}/{path.name}"
        if name in roots:
            raise ConfigError(
                f"{source}: another source is also named {path.name!r}; bundle them separately"
            )
        for other in roots.values():
            if path.is_relative_to(other) or other.is_relative_to(path):
                raise ConfigError(f"{source}: lies inside {other} or holds it; give it once")
        roots[name] = path
    return roots


def _kind(path: Path) -> str:
    if not path.is_dir():
        raise ResultError(f"{path}: not a directory; pass run directories or trials/sweep groups")
    for marker, kind in ROOT_KINDS:
        if (path / marker).is_file():
            return kind
    if (path / INCOMPLETE_FILE).exists():
        raise ResultError(_incomplete(path))
    raise ResultError(
        f"{path}: not a run or group (no {', '.join(m for m, _ in ROOT_KINDS)}); pass a "
        "directory that `harness run`, `bench` or `sweep` wrote"
    )


def _walk(directory: Path, name: str) -> Iterator[_Item]:
    """Every directory and file under `directory`, sorted by name; links and the like refused."""
    yield _Item(name=name, source=directory, is_dir=True)
    try:
        with os.scandir(directory) as scan:
            entries = sorted(scan, key=lambda entry: entry.name)
    except OSError as exc:
        raise ResultError(f"{directory}: cannot list it ({exc.strerror})") from None
    for entry in entries:
        path, child = Path(entry.path), f"{name}/{entry.name}"
        unsafe = unsafe_reason(child)
        if unsafe is not None:
            raise ResultError(f"{path}: a name a bundle cannot hold ({unsafe}); rename it")
        if entry.name == INCOMPLETE_FILE:
            raise ResultError(_incomplete(path.parent))
        if entry.is_symlink():
            raise ResultError(
                f"{path}: a symbolic link; a bundle holds regular files only: copy the file here"
            )
        if entry.is_dir(follow_symlinks=False):
            yield from _walk(path, child)
        elif entry.is_file(follow_symlinks=False):
            yield _Item(name=child, source=path, is_dir=False)
        else:
            raise ResultError(f"{path}: not a regular file (a FIFO, socket or device); remove it")


def _incomplete(run_dir: Path) -> str:
    marker = read_incomplete(run_dir)
    cause = marker.cause if marker is not None else "marked INCOMPLETE"
    return f"{run_dir}: incomplete ({cause}); bundle only finished runs: run it again"


def _entry(item: _Item) -> FileEntry:
    digest, size = hashlib.sha256(), 0
    try:
        with item.source.open("rb") as handle:
            while chunk := handle.read(CHUNK_BYTES):
                digest.update(chunk)
                size += len(chunk)
                if size > MAX_MEMBER_BYTES:
                    raise ResultError(
                        f"{item.source}: larger than the {MAX_MEMBER_BYTES:,} bytes a bundled "
                        "file may hold (verify would refuse it); leave it out of the run"
                    )
    except OSError as exc:
        raise ResultError(f"{item.source}: cannot read it ({exc.strerror})") from None
    return FileEntry(path=item.name, sha256=digest.hexdigest(), size_bytes=size)


def _run(item: _Item) -> JsonObject:
    """The run's provenance; a result.json whose numbers are not its log's is refused."""
    found = check_run(item.source)
    if found:
        raise EditedResultError(
            f"{item.source}: {describe_all(found)}; it was edited after the run: bundle the "
            "run as it was measured"
        )
    result = read_json(item.source, ResultError)  # bounded, strict: no NaN, no deep nesting
    if isinstance(result, dict):
        _refuse_implausible(item.source, result)
    return run_record(item.name.rpartition("/")[0], result if isinstance(result, dict) else {})


def _refuse_implausible(source: Path, result: JsonObject) -> None:
    """An IMPLAUSIBLE run is not bundled: judged again where the result reads as one."""
    try:
        loaded = from_dict(result, str(source))
    except ResultError:  # not a whole result: its recorded verdict alone can be read
        block = result.get("plausibility")
        if isinstance(block, dict) and block.get("verdict") == "IMPLAUSIBLE":
            raise ImplausibleError(
                f"{source}: IMPLAUSIBLE ({printable(str(block.get('figure')), newlines=False)}): "
                "this machine cannot compute "
                "that fast, so the run is not bundled"
            ) from None
        return
    refuse_implausible(loaded, str(source), "bundled")


def _members(items: Sequence[_Item], entries: dict[str, FileEntry]) -> Iterator[Member]:
    """Tar members in the order of their path parts: a directory before what it holds."""
    for item in sorted(items, key=lambda i: i.name.split("/")):
        if item.is_dir:
            yield Member(name=item.name)
        else:
            entry = entries[item.name]
            yield Member(
                name=item.name, source=item.source, sha256=entry.sha256, size=entry.size_bytes
            )
