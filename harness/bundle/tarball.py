"""Deterministic tar writing, and tar reading that refuses links, devices and escaping paths.

Reading never uses tarfile's extraction: it creates only directories and regular files, by
names checked here, inside a directory the caller made for it. Every header is checked before
anything is written: at most MAX_MEMBERS members, each file at most MAX_MEMBER_BYTES (a kept
one, read into memory, MAX_KEPT_BYTES), MAX_TOTAL_BYTES in all.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import BinaryIO

from harness.errors import BundleError, ResultError
from harness.foreign import MAX_JSON_BYTES

BUNDLE_MTIME = 0  # every member's mtime (the epoch): the same runs give the same bytes
FILE_MODE = 0o644
DIR_MODE = 0o755
CHUNK_BYTES = 1 << 20
# Bounds on what a bundle may hold: a run directory has ~20 files, the largest (an accuracy
# log of a big data set) some hundred MiB; a sweep of trials a few thousand files.
MAX_MEMBERS = 50_000
MAX_MEMBER_BYTES = 4 * 1024**3
MAX_TOTAL_BYTES = 64 * 1024**3
MAX_KEPT_BYTES = MAX_JSON_BYTES  # MANIFEST.json and MANIFEST.sig
# Plain files only: not GNU sparse or contiguous ones, which `harness bundle` never writes.
_PLAIN_FILE_TYPES = (tarfile.REGTYPE, tarfile.AREGTYPE)
_KINDS = {
    tarfile.SYMTYPE: "a symbolic link",
    tarfile.LNKTYPE: "a hard link",
    tarfile.CHRTYPE: "a character device",
    tarfile.BLKTYPE: "a block device",
    tarfile.FIFOTYPE: "a FIFO",
}


@dataclass(frozen=True, kw_only=True)
class Member:
    """One tar entry: bytes, a file copied from disk (its sha256 checked on the way), or a dir."""

    name: str
    data: bytes | None = None
    source: Path | None = None
    sha256: str = ""  # of `source`, as the manifest lists it
    size: int = 0  # of `source`


@dataclass(frozen=True, kw_only=True)
class Unpacked:
    """What unpack wrote: each regular file's (sha256, size), and the contents of those kept."""

    files: Mapping[str, tuple[str, int]]
    kept: Mapping[str, bytes]


def unsafe_reason(name: str) -> str | None:
    """Why a member name may not be written under a directory, or None when it may."""
    if not name:
        return "has an empty name"
    if name.startswith("/") or PureWindowsPath(name).drive:
        return "is an absolute path"
    parts = name.split("/")
    if ".." in parts:
        return "climbs out of the bundle with `..`"
    if any(part in ("", ".") for part in parts):
        return "is not a plain relative path (an empty or `.` part)"
    if "\\" in name or "\0" in name or "\n" in name:
        return "holds a backslash, a newline or a NUL"
    return None


def write_tar(handle: BinaryIO, members: Iterable[Member]) -> None:
    """Write members in the order given: mtime 0, uid/gid 0, no owner names, modes 0644/0755.

    GNU format: long names need no pax header, so no pax timestamps either.
    """
    with tarfile.open(fileobj=handle, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for member in members:
            if member.source is not None:
                _add_source(tar, member, member.source)
            elif member.data is not None:
                tar.addfile(_info(member.name, size=len(member.data)), io.BytesIO(member.data))
            else:
                tar.addfile(_info(member.name, directory=True))


def unpack(archive: Path, into: Path, keep: Collection[str] = ()) -> Unpacked:
    """Write the archive's directories and regular files under `into`, hashing each file.

    Raises:
        BundleError: the file is no plain tar, a member is a link, a device, an absolute
            or `..` path, appears twice or clashes with another, or the members pass the
            bounds (count, size); nothing is followed, and past a bound nothing is written.
    """
    files: dict[str, tuple[str, int]] = {}
    kept: dict[str, bytes] = {}
    with _open_tar(archive) as tar:
        try:
            for member in _checked_members(archive, tar, keep):
                if member.isdir():
                    _mkdir(archive, into, member.name)
                else:
                    files[member.name] = _write_member(archive, tar, member, into, keep, kept)
        except tarfile.TarError as exc:
            raise BundleError(
                f"{archive}: a damaged tar ({_first_line(exc)}); copy it again"
            ) from None
    return Unpacked(files=files, kept=kept)


def _open_tar(archive: Path) -> tarfile.TarFile:
    try:
        return tarfile.open(archive, mode="r:")
    except (OSError, tarfile.TarError) as exc:
        raise BundleError(
            f"{archive}: not a readable tar ({_first_line(exc)}); pass what `harness bundle` wrote"
        ) from None


def _checked_members(
    archive: Path, tar: tarfile.TarFile, keep: Collection[str]
) -> list[tarfile.TarInfo]:
    """Every member's header, each checked and all within the bounds, before any is written."""
    members: list[tarfile.TarInfo] = []
    seen: set[str] = set()
    total = 0
    for member in tar:
        if len(members) == MAX_MEMBERS:
            raise BundleError(
                f"{archive}: more than {MAX_MEMBERS:,} members, more than a bundle of runs "
                "holds; refused before unpacking"
            )
        _check_member(archive, member, seen)
        limit = MAX_KEPT_BYTES if member.name in keep else MAX_MEMBER_BYTES
        if member.size > limit:
            raise BundleError(
                f"{archive}: member {member.name!r} holds {member.size:,} bytes, more than the "
                f"{limit:,} a bundled file may; refused before unpacking"
            )
        total += member.size
        if total > MAX_TOTAL_BYTES:
            raise BundleError(
                f"{archive}: its members hold more than {MAX_TOTAL_BYTES:,} bytes in all; "
                "refused before unpacking"
            )
        members.append(member)
    return members


def _check_member(archive: Path, member: tarfile.TarInfo, seen: set[str]) -> None:
    reason = unsafe_reason(member.name)
    if reason is not None:
        raise BundleError(f"{archive}: member {member.name!r} {reason}; refused, not written")
    if not member.isdir() and member.type not in _PLAIN_FILE_TYPES:
        kind = _KINDS.get(member.type, f"a special member (tar type {member.type!r})")
        raise BundleError(
            f"{archive}: member {member.name!r} is {kind}; a bundle holds only regular files "
            "and directories: refused"
        )
    if member.name in seen:
        raise BundleError(f"{archive}: member {member.name!r} appears twice; refused")
    seen.add(member.name)


def _mkdir(archive: Path, into: Path, name: str) -> Path:
    target = into.joinpath(*PurePosixPath(name).parts)
    try:
        target.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):  # a file member of that name is in the way
        raise BundleError(
            f"{archive}: member {name!r} clashes with a file member; refused"
        ) from None
    except OSError as exc:
        raise ResultError(f"{into}: cannot unpack the bundle here ({exc.strerror})") from None
    return target


def _write_member(
    archive: Path,
    tar: tarfile.TarFile,
    member: tarfile.TarInfo,
    into: Path,
    keep: Collection[str],
    kept: dict[str, bytes],
) -> tuple[str, int]:
    parent, _, base = member.name.rpartition("/")
    directory = _mkdir(archive, into, parent) if parent else into
    source = tar.extractfile(member)
    if source is None:  # cannot happen for a regular file; refuse rather than guess
        raise BundleError(f"{archive}: member {member.name!r} has no data; refused")
    digest, size = hashlib.sha256(), 0
    chunks: list[bytes] = []
    try:
        with source, (directory / base).open("xb") as out:
            while chunk := source.read(CHUNK_BYTES):
                digest.update(chunk)
                size += len(chunk)
                out.write(chunk)
                if member.name in keep:
                    chunks.append(chunk)
    except (FileExistsError, IsADirectoryError):  # a directory member of that name came first
        raise BundleError(
            f"{archive}: member {member.name!r} clashes with a directory member; refused"
        ) from None
    except OSError as exc:
        raise ResultError(
            f"{into}: cannot unpack the bundle here ({exc.strerror}); free space or use another"
        ) from None
    if member.name in keep:
        kept[member.name] = b"".join(chunks)
    return digest.hexdigest(), size


def _info(name: str, *, size: int = 0, directory: bool = False) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE if directory else tarfile.REGTYPE
    info.mode = DIR_MODE if directory else FILE_MODE
    info.mtime = BUNDLE_MTIME
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.size = size
    return info


class _HashingReader:
    """A file read through: what tarfile copies is hashed on the way."""

    def __init__(self, handle: BinaryIO) -> None:
        self._handle = handle
        self.digest = hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        chunk = self._handle.read(size)
        self.digest.update(chunk)
        return chunk


def _add_source(tar: tarfile.TarFile, member: Member, source: Path) -> None:
    """Copy a file in; it must still be the bytes the manifest hashed."""
    changed = ResultError(
        f"{source}: changed while it was bundled; bundle again once nothing writes to it"
    )
    try:
        with source.open("rb") as handle:
            reader = _HashingReader(handle)
            tar.addfile(_info(member.name, size=member.size), reader)
    except OSError:  # it shrank (tarfile: "unexpected end of data") or went away
        raise changed from None
    if reader.digest.hexdigest() != member.sha256:
        raise changed


def _first_line(exc: Exception) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
