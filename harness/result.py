"""The immutable result of one run, and its versioned JSON form."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import ResultError
from harness.files import atomic_write_text

SCHEMA_VERSION = 2
RESULT_FILE = "result.json"
INCOMPLETE_FILE = "INCOMPLETE"


@dataclass(frozen=True, kw_only=True)
class RunResult:
    """Everything one run measured and everything needed to reproduce or compare it."""

    schema_version: int = SCHEMA_VERSION
    run_id: str
    created_utc: str
    scenario: str
    scenario_name: str
    mode: str
    profile: str
    submission_valid: bool
    valid: bool
    invalid_reasons: Sequence[str]
    loadgen_errors: Sequence[str]
    latency_ns: Mapping[str, int | None]
    samples_per_second: float | None
    qps_with_loadgen_overhead: float | None
    qps_without_loadgen_overhead: float | None
    batch_size: int
    model: Mapping[str, Any]
    hardware: Mapping[str, Any]
    providers: Sequence[str]
    runtime: Mapping[str, Any]
    versions: Mapping[str, str]
    settings: Mapping[str, Any]
    loadgen_config: Mapping[str, Any]
    warmup: Mapping[str, Any]
    window: Mapping[str, Any]
    warnings: Sequence[str]
    preflight: Sequence[Mapping[str, str]]
    fingerprint: Mapping[str, Any]
    telemetry: Mapping[str, Any] | None
    image: Mapping[str, str] | None
    utilization: Mapping[str, Any]
    precision: Mapping[str, Any]
    accuracy: Mapping[str, Any]


def to_json(result: RunResult) -> str:
    """Serialise a result as indented JSON."""
    return json.dumps(dataclasses.asdict(result), indent=2) + "\n"


def write_result(result: RunResult, run_dir: Path) -> Path:
    """Write result.json atomically: readers see the whole file or none."""
    path = run_dir / RESULT_FILE
    atomic_write_text(path, to_json(result))
    return path


def load_result(run_dir: Path) -> RunResult:
    """Read a run directory's result.json, refusing versions this code does not understand."""
    path = run_dir / RESULT_FILE if run_dir.is_dir() else run_dir
    if (path.parent / INCOMPLETE_FILE).exists():
        reason = (path.parent / INCOMPLETE_FILE).read_text(encoding="utf-8").strip()
        raise ResultError(f"{path.parent}: run is incomplete ({reason}); run it again")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultError(
            f"{path}: no such result; pass a run directory under results/runs/"
        ) from None
    except (OSError, json.JSONDecodeError) as exc:
        raise ResultError(f"{path}: not readable JSON ({exc})") from None
    version = data.get("schema_version") if isinstance(data, dict) else None
    if not isinstance(version, int):
        raise ResultError(f"{path}: no schema_version; not a beyond-tops result")
    if version > SCHEMA_VERSION:
        raise ResultError(
            f"{path}: schema_version {version} was written by a newer beyond-tops; upgrade"
        )
    if version < SCHEMA_VERSION:
        raise ResultError(
            f"{path}: schema_version {version} is older than {SCHEMA_VERSION}; re-run it"
        )
    names = {f.name for f in dataclasses.fields(RunResult)}
    if set(data) != names:
        raise ResultError(f"{path}: keys do not match schema_version {version}; re-run it")
    return RunResult(**data)
