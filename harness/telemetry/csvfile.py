"""telemetry.csv: the window's time series, with its sampling rate and methods in the header."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from harness.errors import ResultError
from harness.files import atomic_write_text
from harness.telemetry.base import Sample, SourceCounters, Telemetry
from harness.telemetry.energy import NS_PER_S

FORMAT = 1
COLUMNS = (
    "t_ns",
    "t_s",
    "source",
    "power_w",
    "temp_c",
    "sm_clock_mhz",
    "mem_clock_mhz",
    "util_pct",
    "throttle",
)
NO_THROTTLE = "none"  # no reason active; an empty cell means the source does not report them


def render_telemetry_csv(t: Telemetry) -> str:
    """The file's text: '#' header lines (JSON after the colon), then one row per sample."""
    out = io.StringIO()
    rate = f"{1 / t.interval_s:g} Hz" if t.interval_s > 0 else "n/a"
    window = {
        "start_ns": t.window_start_ns,
        "end_ns": t.window_end_ns,
        "start_unix_ns": t.window_start_unix_ns,
        "interval_s": t.interval_s,
    }
    out.write(
        f"# beyond-tops telemetry, format {FORMAT}; sampled every {t.interval_s:g} s ({rate})\n"
    )
    out.write(f"# window: {json.dumps(window)}\n")
    for c in t.counters:
        out.write(f"# source: {json.dumps(_counters_json(c))}\n")
    for name, reason in t.unavailable:
        out.write(f"# unavailable: {json.dumps({'source': name, 'reason': reason})}\n")
    for name, error in t.errors:
        out.write(f"# error: {json.dumps({'source': name, 'error': error})}\n")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for s in t.samples:
        writer.writerow(_row(s, t.window_start_ns))
    return out.getvalue()


def write_telemetry_csv(t: Telemetry, path: Path) -> None:
    """Write telemetry.csv atomically (temp file, then rename)."""
    atomic_write_text(path, render_telemetry_csv(t))


def _counters_json(c: SourceCounters) -> dict[str, object]:
    return {
        "name": c.name,
        "kind": c.kind,
        "power_method": c.power_method,
        "energy_method": c.energy_method,
        "energy_start_mj": c.energy_start_mj,
        "energy_end_mj": c.energy_end_mj,
        "violations_ns": [list(v) for v in c.violations_ns],
        "logged": c.logged,
    }


def _row(s: Sample, start_ns: int) -> list[str]:
    values = (s.power_w, s.temp_c, s.sm_clock_mhz, s.mem_clock_mhz, s.util_pct)
    throttle = "" if s.throttle is None else "|".join(s.throttle) or NO_THROTTLE
    return [
        str(s.t_ns),
        f"{(s.t_ns - start_ns) / NS_PER_S:.6f}",
        s.source,
        *("" if v is None else repr(v) for v in values),
        throttle,
    ]


def read_telemetry_csv(path: Path) -> Telemetry:
    """Read a telemetry.csv back (for reports and comparisons)."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ResultError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        return _parse(text)
    except (KeyError, ValueError, TypeError) as exc:
        raise ResultError(f"{path}: not a beyond-tops telemetry.csv ({exc})") from None


def _parse(text: str) -> Telemetry:
    header = [line[2:] for line in text.splitlines() if line.startswith("# ")]
    meta: dict[str, list[dict[str, Any]]] = {}
    for line in header[1:]:
        key, _, payload = line.partition(": ")
        meta.setdefault(key, []).append(json.loads(payload))
    window = meta["window"][0]
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    rows = list(csv.DictReader(io.StringIO(body)))
    return Telemetry(
        window_start_ns=int(window["start_ns"]),
        window_end_ns=int(window["end_ns"]),
        interval_s=float(window["interval_s"]),
        samples=tuple(_sample(r) for r in rows),
        counters=tuple(_counters(c) for c in meta.get("source", [])),
        unavailable=tuple(
            (str(u["source"]), str(u["reason"])) for u in meta.get("unavailable", [])
        ),
        errors=tuple((str(e["source"]), str(e["error"])) for e in meta.get("error", [])),
        window_start_unix_ns=_int_or_none(window.get("start_unix_ns")),
    )


def _float(text: str) -> float | None:
    return float(text) if text else None


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def _sample(row: dict[str, str]) -> Sample:
    throttle = row["throttle"]
    return Sample(
        t_ns=int(row["t_ns"]),
        source=row["source"],
        power_w=_float(row["power_w"]),
        temp_c=_float(row["temp_c"]),
        sm_clock_mhz=_float(row["sm_clock_mhz"]),
        mem_clock_mhz=_float(row["mem_clock_mhz"]),
        util_pct=_float(row["util_pct"]),
        throttle=None
        if not throttle
        else ()
        if throttle == NO_THROTTLE
        else tuple(throttle.split("|")),
    )


def _counters(c: dict[str, Any]) -> SourceCounters:
    return SourceCounters(
        name=str(c["name"]),
        kind=str(c["kind"]),
        power_method=str(c["power_method"]),
        energy_method=str(c["energy_method"]),
        energy_start_mj=c["energy_start_mj"],
        energy_end_mj=c["energy_end_mj"],
        violations_ns=tuple((str(v[0]), int(v[1]), int(v[2])) for v in c["violations_ns"]),
        logged=bool(c["logged"]),
    )
