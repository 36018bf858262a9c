"""Published records on disk: one directory per result, with copies of the tree's files.

A record directory is built under a temporary name and renamed into place, so a reader sees
a whole record or none; an existing one is never overwritten.
"""

from __future__ import annotations

import os
import secrets
import shutil
from pathlib import Path

from harness.errors import ResultError
from harness.files import atomic_write_bytes
from harness.published.files import file_bytes
from harness.published.read import Reading
from harness.published.record import write_published
from harness.records.published import PublishedResult

DEFAULT_OUT = Path("results/published-imports")


def record_name(record: PublishedResult) -> str:
    """`v4.1-closed-<org>-<system>-<benchmark>-<scenario>`: one name per published result."""
    version = f"v{record.mlperf_version}" if record.mlperf_version else "vunknown"
    parts = (version, record.division, record.org, record.system.id, record.benchmark)
    return "-".join(_safe(p) for p in (*parts, record.scenario))


def prepare_out(out: Path) -> Path:
    """The records' root, created; ResultError naming it when it cannot be."""
    if out.exists() and not out.is_dir():
        raise ResultError(f"{out}: is a file, not a directory; pass a directory as --out")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ResultError(
            f"{out}: cannot create it ({exc.strerror}); pass a writable --out"
        ) from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise ResultError(f"{out}: not writable; pass a writable --out")
    return out


def store(reading: Reading, out: Path) -> Path | None:
    """Write the record and its files as `out/<record_name>/`; None when that already exists."""
    final = out / record_name(reading.record)
    if final.exists():
        return None
    tmp = out / f".{final.name}.{secrets.token_hex(4)}.tmp"  # the umask's mode, unlike mkdtemp
    try:
        tmp.mkdir()
        for source, name in reading.copies:
            atomic_write_bytes(tmp / name, file_bytes(reading.root, source))
        write_published(reading.record, tmp)
        os.rename(tmp, final)
    except FileExistsError:
        return None
    except OSError as exc:
        raise ResultError(f"{final}: cannot write the record ({exc.strerror or exc})") from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "_"
