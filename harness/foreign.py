"""Reading files from trees we did not write: inside the tree, regular files only, bounded.

Grammar of what is read (issue #23): a path given relative to a tree's root, or found by
walking it, is resolved (symbolic links followed) and must stay inside the resolved root;
the file it names must be a regular file (no FIFO, socket or device); at most `limit_bytes`
are read, and a text line may hold at most MAX_LINE_CHARS characters. Every refusal is a
`HarnessError` of the caller's kind that names the file and says why.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable
from pathlib import Path

from harness.errors import HarnessError

MAX_LOG_BYTES = 64 * 1024 * 1024  # a LoadGen detail log of a long Server run is ~10 MiB
MAX_JSON_BYTES = 16 * 1024 * 1024  # result.json, system JSON, manifests, task records
MAX_LINE_CHARS = 1024 * 1024  # one line of a log or a JSON file
MAX_MODEL_BYTES = 64 * 1024**3  # the largest model file hashed (llama2-70b FP16 is ~140 GB:
# such a model is split into external-data files, each well under this)
HASH_CHUNK_BYTES = 4 * 1024 * 1024
PROGRESS_EVERY_BYTES = 1024**3  # a progress line each GiB hashed

ErrorType = type[HarnessError]
Progress = Callable[[int, int], None]  # (bytes done, bytes in all)


def inside(root: Path, path: Path, error: ErrorType) -> Path:
    """`path` resolved, if it stays inside `root` (resolved); else `error` naming both."""
    try:
        base = root.resolve(strict=True)
        target = (root / path).resolve(strict=True)
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop on Python < 3.13
        raise error(f"{root / path}: cannot be resolved ({_why(exc)})") from exc
    if not target.is_relative_to(base):
        raise error(
            f"{root / path}: leads out of {root} (to {target}); "
            "a foreign tree may only link inside itself"
        )
    return target


def open_regular(path: Path, error: ErrorType) -> int:
    """An fd opened for reading, if `path` is a regular file; never blocks on a FIFO."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (OSError, RuntimeError) as exc:
        raise error(f"{path}: cannot be read ({_why(exc)})") from exc
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise error(f"{path}: is a {_kind(mode)}, not a regular file; give a regular file")
    os.set_blocking(fd, True)
    return fd


def read_bytes(path: Path, error: ErrorType, limit_bytes: int = MAX_JSON_BYTES) -> bytes:
    """A regular file's bytes, refused with `error` past `limit_bytes`."""
    fd = open_regular(path, error)
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(limit_bytes + 1)
    if len(data) > limit_bytes:
        raise error(
            f"{path}: larger than {_mib(limit_bytes)}, the most read of such a file; "
            "is it the right file?"
        )
    return data


def read_text(path: Path, error: ErrorType, limit_bytes: int = MAX_JSON_BYTES) -> str:
    """A regular file's UTF-8 text, bounded in size and line length, refused otherwise."""
    data = read_bytes(path, error, limit_bytes)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(
            f"{path}: not UTF-8 text (byte {exc.start}: {data[exc.start : exc.start + 1]!r}); "
            "give the file as written by its tool"
        ) from None
    longest = max((len(line) for line in text.splitlines()), default=0)
    if longest > MAX_LINE_CHARS:
        raise error(f"{path}: a line of {longest:,} characters (at most {MAX_LINE_CHARS:,})")
    return text


def sha256_file(
    path: Path,
    error: ErrorType,
    limit_bytes: int = MAX_MODEL_BYTES,
    progress: Progress | None = None,
) -> str:
    """The sha256 of a regular file of at most `limit_bytes`, calling `progress` each GiB."""
    fd = open_regular(path, error)
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > limit_bytes:
            raise error(f"{path}: {_mib(size)}, larger than the {_mib(limit_bytes)} hashed")
        digest, done, next_report = hashlib.sha256(), 0, PROGRESS_EVERY_BYTES
        while chunk := handle.read(HASH_CHUNK_BYTES):
            digest.update(chunk)
            done += len(chunk)
            if done > limit_bytes:  # grew while hashed
                raise error(f"{path}: grew past {_mib(limit_bytes)} while it was hashed")
            if progress is not None and done >= next_report:
                progress(done, size)
                next_report += PROGRESS_EVERY_BYTES
    return digest.hexdigest()


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    if stat.S_ISDIR(mode):
        return "directory"
    return "special file"


def _why(exc: BaseException) -> str:
    if isinstance(exc, RuntimeError) or getattr(exc, "errno", None) == 40:  # ELOOP
        return "a symbolic link loop"
    return getattr(exc, "strerror", None) or type(exc).__name__


def _mib(n_bytes: int) -> str:
    if n_bytes < 1024**2:
        return f"{n_bytes:,} bytes"
    return f"{n_bytes / 1024**2:,.0f} MiB"
