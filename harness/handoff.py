"""The small files a worker leaves for its parent: retry.json and peak.json, each versioned.

retry.json: LoadGen's run was sized too small, so the worker asks to be run again expecting
the speed it measured. peak.json: what Server's capacity search found. Both carry
`kind` and `schema_version`; a reader refuses another kind or version by name, and reads
files of schema 0 (written before they were versioned: the same fields, no version).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from harness.errors import ResultError
from harness.files import atomic_write_text
from harness.records.layout import PEAK_FILE, RETRY_FILE
from harness.records.request import Expectation
from harness.strictjson import Format, JsonObject, read_versioned

RETRY_KIND, PEAK_KIND = "beyond-tops retry", "beyond-tops peak search"
SCHEMA_VERSION = 1


@dataclass(frozen=True, kw_only=True)
class PeakSearch:
    """What Server's peak search found: the rate, where it started and each rate it tried.

    ``max_wait_ms``: the batcher's hold during the search (derived from noisy warm-up costs:
    the confirming runs keep it, so they test the SUT the search measured); None in older files.
    ``runs``: the LoadGen runs the search took (each rate tried); ``failed_qps``: the lowest
    rate it saw miss the bound (the confirmations' upper end); None in older files.
    """

    found_qps: float
    start_qps: float
    steps: list[str]
    max_wait_ms: float | None = None
    runs: int | None = None
    failed_qps: float | None = None


def write_retry(run_dir: Path, expected: Expectation) -> None:
    """Ask the parent to run this test again, expecting `expected`."""
    fields: JsonObject = {
        "latency_ns": expected.latency_ns,
        "samples_per_second": expected.samples_per_second,
    }
    _write(run_dir / RETRY_FILE, RETRY_KIND, fields)


def read_retry(run_dir: Path) -> Expectation | None:
    """The expectation a first attempt asked to be re-run with, if it asked."""
    path = run_dir / RETRY_FILE
    if not path.is_file():
        return None
    data = _read(path, RETRY_KIND)
    return Expectation(
        latency_ns=_number(data, "latency_ns", path),
        samples_per_second=_number(data, "samples_per_second", path),
    )


def write_peak(run_dir: Path, search: PeakSearch) -> None:
    """What the peak search found, for the pipeline and the result's record."""
    fields: JsonObject = {
        "found_qps": search.found_qps,
        "start_qps": search.start_qps,
        "steps": list(search.steps),
    }
    if search.max_wait_ms is not None:
        fields["max_wait_ms"] = search.max_wait_ms
    if search.runs is not None:
        fields["runs"] = search.runs
    if search.failed_qps is not None:
        fields["failed_qps"] = search.failed_qps
    _write(run_dir / PEAK_FILE, PEAK_KIND, fields)


def read_peak(run_dir: Path) -> PeakSearch:
    """The peak search in `run_dir` (its own directory); ResultError naming what is wrong."""
    path = run_dir / PEAK_FILE
    if not path.is_file():
        raise ResultError(f"{path}: the peak search left no rate")
    data = _read(path, PEAK_KIND)
    steps = _strings(data, "steps", path)
    return PeakSearch(
        found_qps=_number(data, "found_qps", path),
        start_qps=_number(data, "start_qps", path),
        steps=steps,
        max_wait_ms=_number(data, "max_wait_ms", path) if "max_wait_ms" in data else None,
        runs=_count(data, "runs", path) if "runs" in data else None,
        failed_qps=_number(data, "failed_qps", path) if "failed_qps" in data else None,
    )


def _write(path: Path, kind: str, fields: JsonObject) -> None:
    data: JsonObject = {"kind": kind, "schema_version": SCHEMA_VERSION, **fields}
    atomic_write_text(path, json.dumps(data, indent=2) + "\n")


def _read(path: Path, kind: str) -> JsonObject:
    return read_versioned(path, handoff_format(kind), ResultError).data


def handoff_format(kind: str) -> Format:
    """retry.json's or peak.json's format: schema 0 files (no kind, no version) still read."""
    return Format(
        what=f"a {kind} file",
        newest=SCHEMA_VERSION,
        oldest=0,
        kind=kind,
        unversioned=0,  # written before these files had versions
        older_fix="run the test again",
    )


def _number(data: JsonObject, key: str, path: Path) -> float:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ResultError(f"{path}: {key}: expected a finite number, got {value!r}")
    return float(value)


def _count(data: JsonObject, key: str, path: Path) -> int:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ResultError(f"{path}: {key}: expected a whole number >= 0, got {value!r}")
    return value


def _strings(data: JsonObject, key: str, path: Path) -> list[str]:
    listed = data.get(key)
    strings = [s for s in listed if isinstance(s, str)] if isinstance(listed, list) else []
    if not isinstance(listed, list) or len(strings) != len(listed):
        raise ResultError(f"{path}: {key}: expected a list of strings")
    return strings
