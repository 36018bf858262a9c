"""A tar read into memory and written back: the tests that edit a bundle as an insider would."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

Members = dict[str, bytes | None]  # tar name: data, or None for a directory


def read_members(archive: Path) -> Members:
    """Every member of `archive`, in order: a file's bytes, None for a directory."""
    members: Members = {}
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            handle = tar.extractfile(member) if member.isfile() else None
            members[member.name] = None if handle is None else handle.read()
    return members


def write_members(archive: Path, members: Members) -> Path:
    """Write `members` (as read_members returns them) as a plain tar at `archive`."""
    with tarfile.open(archive, "w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
            else:
                info.size = len(data)
            tar.addfile(info, None if data is None else io.BytesIO(data))
    return archive
