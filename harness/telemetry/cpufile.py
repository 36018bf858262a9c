"""cpu_telemetry.csv: the host CPU's clocks, busy share, load and temperatures over the window.

One row per sample, one column per series (``busy_pct``, ``cpuN_busy_pct``, ``cpuN_mhz``,
``load_1m``, ``temp_<sensor>_c``); an empty cell is a value that could not be read. '#' header
lines (JSON after the colon) give the window, each column's unit and source, each series that
could not be sampled at all and why, and each read error.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import ResultError
from harness.files import atomic_write_text

FORMAT = 1
TIME_COLUMNS = ("t_ns", "t_s")
NS_PER_S = 1_000_000_000


@dataclass(frozen=True, kw_only=True)
class CpuSeries:
    """One column: its name, unit, kind ("busy", "clock", "load", "temperature") and source file."""

    column: str
    unit: str
    kind: str
    source: str


@dataclass(frozen=True, kw_only=True)
class CpuRow:
    """One sample: its monotonic time (ns) and a value per series (None: not read)."""

    t_ns: int
    values: tuple[float | None, ...]


@dataclass(frozen=True, kw_only=True)
class CpuTelemetry:
    """Everything the CPU sampler recorded in one window; ``unavailable`` says what and why."""

    window_start_ns: int
    window_end_ns: int
    interval_s: float
    series: tuple[CpuSeries, ...]
    rows: tuple[CpuRow, ...]
    unavailable: tuple[tuple[str, str], ...] = ()
    errors: tuple[tuple[str, str], ...] = ()

    def of_kind(self, kind: str) -> tuple[CpuSeries, ...]:
        """The series of one kind, in column order."""
        return tuple(s for s in self.series if s.kind == kind)

    def points(self, column: str) -> list[tuple[float, float]]:
        """(seconds into the window, value) of one column, skipping empty cells."""
        index = [s.column for s in self.series].index(column)
        return [
            ((row.t_ns - self.window_start_ns) / NS_PER_S, value)
            for row in self.rows
            if (value := row.values[index]) is not None
        ]

    def why_missing(self, kind: str) -> str | None:
        """Why a kind of series has no values (None when it has some)."""
        columns = self.of_kind(kind)
        if any(self.points(s.column) for s in columns):
            return None
        reasons = [reason for name, reason in self.unavailable if name == kind]
        if reasons:
            return "; ".join(reasons)
        if columns:
            return "no sample could be read in the window"
        return "not sampled"


def render_cpu_csv(t: CpuTelemetry) -> str:
    """The file's text: '#' header lines, then one row per sample."""
    out = io.StringIO()
    rate = f"{1 / t.interval_s:g} Hz" if t.interval_s > 0 else "n/a"
    window = {"start_ns": t.window_start_ns, "end_ns": t.window_end_ns, "interval_s": t.interval_s}
    out.write(f"# beyond-tops CPU telemetry, format {FORMAT}; sampled every {t.interval_s:g} s")
    out.write(f" ({rate})\n# window: {json.dumps(window)}\n")
    for s in t.series:
        meta = {"column": s.column, "unit": s.unit, "kind": s.kind, "source": s.source}
        out.write(f"# series: {json.dumps(meta)}\n")
    for name, reason in t.unavailable:
        out.write(f"# unavailable: {json.dumps({'source': name, 'reason': reason})}\n")
    for name, error in t.errors:
        out.write(f"# error: {json.dumps({'source': name, 'error': error})}\n")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow((*TIME_COLUMNS, *(s.column for s in t.series)))
    for row in t.rows:
        t_s = (row.t_ns - t.window_start_ns) / NS_PER_S
        cells = ("" if v is None else f"{v:.6g}" for v in row.values)
        writer.writerow((str(row.t_ns), f"{t_s:.6f}", *cells))
    return out.getvalue()


def write_cpu_csv(t: CpuTelemetry, path: Path) -> None:
    """Write cpu_telemetry.csv atomically."""
    atomic_write_text(path, render_cpu_csv(t))


def read_cpu_csv(path: Path) -> CpuTelemetry:
    """Read a cpu_telemetry.csv back; ResultError names the file and what is wrong."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ResultError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        return _parse(text)
    except (KeyError, ValueError, TypeError, IndexError) as exc:
        raise ResultError(f"{path}: not a beyond-tops cpu_telemetry.csv ({exc})") from None


def header_entries(text: str) -> dict[str, list[dict[str, Any]]]:
    """The JSON payloads of '# key: {...}' header lines, by key (shared by both CSV files)."""
    meta: dict[str, list[dict[str, Any]]] = {}
    for line in text.splitlines():
        if line.startswith("# ") and ": {" in line:
            key, _, payload = line[2:].partition(": ")
            meta.setdefault(key, []).append(json.loads(payload))
    return meta


def _parse(text: str) -> CpuTelemetry:
    meta = header_entries(text)
    window = meta["window"][0]
    series = tuple(
        CpuSeries(column=s["column"], unit=s["unit"], kind=s["kind"], source=s["source"])
        for s in meta.get("series", [])
    )
    body = [line for line in text.splitlines() if line and not line.startswith("#")]
    reader = csv.reader(body)
    columns = next(reader)
    expected = [*TIME_COLUMNS, *(s.column for s in series)]
    if columns != expected:
        raise ValueError(f"columns {columns[:4]}... do not match the header's series")
    return CpuTelemetry(
        window_start_ns=int(window["start_ns"]),
        window_end_ns=int(window["end_ns"]),
        interval_s=float(window["interval_s"]),
        series=series,
        rows=tuple(_row(cells) for cells in reader),
        unavailable=_pairs(meta.get("unavailable", []), "reason"),
        errors=_pairs(meta.get("error", []), "error"),
    )


def _row(cells: Sequence[str]) -> CpuRow:
    values = tuple(float(c) if c else None for c in cells[2:])
    if any(v is not None and not math.isfinite(v) for v in values):
        raise ValueError(f"a non-finite value in the row at t_ns {cells[0]}")
    return CpuRow(t_ns=int(cells[0]), values=values)


def _pairs(entries: list[dict[str, Any]], key: str) -> tuple[tuple[str, str], ...]:
    return tuple((str(e["source"]), str(e[key])) for e in entries)
