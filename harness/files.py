"""Atomic file writes and run directories that are never overwritten."""

from __future__ import annotations

import errno
import os
import secrets
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from harness.errors import ResultError
from harness.text import printable

# The marker's name; every other file of a run directory is named in harness.records.layout.
INCOMPLETE_FILE = "INCOMPLETE"  # present while a run directory holds no finished result
MAX_INCOMPLETE_BYTES = 64 * 1024  # a cause and an exit code: the rest of a longer one is not read


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write a file so readers see either nothing or all of it (temp file, fsync, rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:  # clean up on any exit, including Ctrl-C, then re-raise
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)  # the rename itself survives a crash only once its directory is synced


def atomic_write_text(path: Path, text: str) -> None:
    """Atomic write of UTF-8 text."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_create(
    path: Path, write: Callable[[BinaryIO], object], *, mode: int | None = None
) -> None:
    """Write a new file atomically, never replacing one: FileExistsError if `path` exists.

    `write` fills a temp file beside `path`; it is synced, given `mode` (default: 0666 less
    the umask), then hard-linked into place, which fails rather than overwrite.
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, (0o666 & ~_umask()) if mode is None else mode)
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        _link_new(Path(tmp), path)
    finally:  # on success the link holds the data; on any exit, the temp name goes
        Path(tmp).unlink(missing_ok=True)
    _fsync_dir(path.parent)


def _link_new(tmp: Path, path: Path) -> None:
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise
    except OSError:  # a filesystem without hard links: check, then rename (a narrow race)
        if path.exists():
            raise FileExistsError(errno.EEXIST, "File exists", str(path)) from None
        os.replace(tmp, path)


def create_run_dir(root: Path, *, model: str, scenario: str, name: str | None = None) -> Path:
    """Make `<root>/<UTC time>-<model>-<scenario>-<short id>/`; never reuses an existing one."""
    if root.exists() and not root.is_dir():
        raise ResultError(f"{root}: is a file, not a directory; pass a directory as --out")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ResultError(
            f"{root}: cannot create the results directory ({exc.strerror}); pass a writable --out"
        ) from None
    if not os.access(root, os.W_OK | os.X_OK):
        raise ResultError(f"{root}: results directory is not writable; pass a writable --out")
    if name is not None:
        return _make_named(root / name)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for _ in range(10):
        path = root / f"{stamp}-{_safe(model)}-{scenario}-{secrets.token_hex(3)}"
        try:
            path.mkdir()
        except FileExistsError:
            continue
        except OSError as exc:
            raise ResultError(f"{root}: cannot create a run directory ({exc.strerror})") from None
        return path
    raise ResultError(f"{root}: could not find a free run directory name")


def _make_named(path: Path) -> Path:
    try:
        path.mkdir()
    except FileExistsError:
        raise ResultError(f"{path}: already exists; a run directory is never overwritten") from None
    except OSError as exc:
        raise ResultError(f"{path}: cannot create the run directory ({exc.strerror})") from None
    return path


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return  # a platform that cannot open directories cannot sync them either
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems (and Windows) refuse fsync on a directory; the data is synced
    finally:
        os.close(fd)


def _umask(status: Path = Path("/proc/self/status")) -> int:
    """The process umask, read without changing it where /proc tells it.

    os.umask can only read the mask by setting it, which for a moment gives every other
    thread (and any child forked then) a umask of 0; Linux 4.7+ reports it in /proc.
    """
    try:
        for line in status.read_text(encoding="ascii").splitlines():
            if line.startswith("Umask:"):
                return int(line.split(":", 1)[1].strip(), 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0)  # no /proc: the only portable way to read it
    os.umask(mask)
    return mask


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


@dataclass(frozen=True, kw_only=True)
class Incomplete:
    """Why a run directory holds no result: the cause, and the exit code when it failed."""

    cause: str
    exit_code: int | None = None


def mark_incomplete(run_dir: Path, cause: str, exit_code: int | None = None) -> None:
    """Write INCOMPLETE: the cause on its first line, then `exit_code: N` when known."""
    text = cause.strip() + "\n" + (f"exit_code: {exit_code}\n" if exit_code is not None else "")
    atomic_write_text(run_dir / INCOMPLETE_FILE, text)


def read_incomplete(run_dir: Path) -> Incomplete | None:
    """The INCOMPLETE marker of a run directory, or None when there is none."""
    try:
        fd = os.open(run_dir / INCOMPLETE_FILE, os.O_RDONLY | os.O_NONBLOCK)  # never blocks
        with os.fdopen(fd, "rb") as handle:  # bounded: the marker may be foreign
            head = handle.read(MAX_INCOMPLETE_BYTES)
    except FileNotFoundError:
        return None
    except OSError as exc:  # a directory or an unreadable file in its place
        return Incomplete(cause=f"INCOMPLETE unreadable ({exc.strerror})", exit_code=None)
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:  # a marker we did not write, or cut inside a character
        return Incomplete(cause="INCOMPLETE is not UTF-8 text", exit_code=None)
    lines = printable(text).splitlines()
    code = next((ln.split(":", 1)[1] for ln in lines[1:] if ln.startswith("exit_code:")), None)
    cause = lines[0] if lines else "no cause recorded"
    return Incomplete(cause=cause, exit_code=int(code) if code and code.strip().isdigit() else None)


def mark_complete(run_dir: Path) -> None:
    """Remove INCOMPLETE once the run directory holds its finished result."""
    (run_dir / INCOMPLETE_FILE).unlink(missing_ok=True)
