"""`harness import mlperf`: every result under a path read, each written as its own record."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.errors import ResultError
from harness.published.read import Reading, read_result
from harness.published.store import prepare_out, record_name, store
from harness.published.tree import find_locations

LAYOUT = "<division>/<org>/results/<system>/<benchmark>/<scenario>/performance/run_1"


@dataclass(frozen=True, kw_only=True)
class Imported:
    """What an import wrote, and one line per result it skipped or read only in part."""

    written: tuple[Path, ...]
    skipped: tuple[str, ...]
    notes: tuple[str, ...]  # each written record's import warnings, prefixed with its name


def import_mlperf(
    path: Path,
    out: Path,
    *,
    mlperf_version: str | None = None,
    now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.timezone.utc),
    on_skip: Callable[[str], None] = lambda line: None,
) -> Imported:
    """Import every result under `path` into `out`; one bad result is skipped, not fatal.

    Each skipped result is also passed to `on_skip` as it happens (the CLI prints it).

    Raises:
        ResultError: `path` does not exist, `out` cannot be written, or nothing under `path`
            could be imported (the message counts what was skipped and says what to pass).
    """
    if not path.exists():
        raise ResultError(f"{path}: no such file or directory; pass an MLPerf results tree")
    locations, skipped = find_locations(path)
    for line in skipped:
        on_skip(line)
    imported_utc = now().isoformat(timespec="seconds")
    readings: list[Reading] = []
    for loc in locations:
        try:
            readings.append(
                read_result(loc, mlperf_version=mlperf_version, imported_utc=imported_utc)
            )
        except ResultError as exc:
            skipped.append(f"{exc}; skipped")
            on_skip(skipped[-1])
    written: list[Path] = []
    notes: list[str] = []
    existing = 0
    root = prepare_out(out) if readings else out
    for reading in readings:
        name = record_name(reading.record)
        try:
            target = store(reading, root)
        except ResultError as exc:  # a file changed since it was read, or out is unwritable
            skipped.append(f"{exc}; skipped")
            on_skip(skipped[-1])
            continue
        if target is None:
            existing += 1
            skipped.append(f"{root / name}: already exists; a record is never overwritten")
            on_skip(skipped[-1])
            continue
        written.append(target)
        notes += [f"{name}: {w}" for w in reading.record.import_warnings]
    if not written:
        raise ResultError(
            _nothing(path, len(locations), skipped, existed=existing == len(readings) > 0)
        )
    return Imported(written=tuple(written), skipped=tuple(skipped), notes=tuple(notes))


def _nothing(path: Path, found: int, skipped: list[str], *, existed: bool) -> str:
    if existed:
        return (
            f"{path}: every result is already imported ({len(skipped)} record(s) exist, e.g. "
            f"{skipped[0]}); pass another --out to import them again"
        )
    if skipped:
        return (
            f"{path}: none of the {max(found, len(skipped))} result(s) found could be imported "
            f"(the first: {skipped[0]}); fix or leave out those files"
        )
    return (
        f"{path}: no MLPerf result found (looked for {LAYOUT}); pass a results tree, a "
        "division, an org, a scenario or a performance/run_1 directory"
    )
