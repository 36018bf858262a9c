"""One published result's files (detail and summary logs, system and measurements JSON) read.

A file that stops the result being read (no detail log, a malformed line, no metric) raises
ResultError naming it; what only leaves a field unknown (no system JSON, an old LoadGen's
missing key) becomes an import warning recorded with the result.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.config import ScenarioName
from harness.errors import ResultError
from harness.loadgen.logparse import (
    DetailLog,
    effective_settings,
    latency_percentiles_ns,
    parse_detail_log,
    samples_per_second,
)
from harness.published.tree import Location, tree_version
from harness.results.published import MainMetric, PublishedResult, PublishedSystem, model_key
from harness.results.records import Latencies, SettingValue

DETAIL_LOG = "mlperf_log_detail.txt"
SUMMARY_LOG = "mlperf_log_summary.txt"
ACCURACY_FILE = "accuracy.txt"
# Each scenario's MLPerf metric: (record name, label, unit, the summary line that states it).
METRICS: Mapping[ScenarioName, tuple[str, str, str, str]] = {
    "Offline": ("samples_per_second", "Offline samples/s", "samples/s", "Samples per second"),
    "Server": (
        "scheduled_samples_per_second",
        "Server scheduled samples/s",
        "samples/s",
        "Scheduled samples per second",
    ),
    "SingleStream": (
        "latency_ns.p90",
        "SingleStream p90 latency",
        "ns",
        "90th percentile latency (ns)",
    ),
    "MultiStream": (
        "latency_ns.p99",
        "MultiStream p99 latency (per query)",
        "ns",
        "99th percentile latency (ns)",
    ),
}
_ABSENT = {"", "n/a", "na", "none", "-"}
# The detail-log key of each metric (MultiStream: LoadGen's per-query percentile).
_DETAIL_KEYS: Mapping[str, str] = {
    "samples_per_second": "result_samples_per_second",
    "scheduled_samples_per_second": "result_scheduled_samples_per_sec",
    "latency_ns.p90": "result_90.00_percentile_latency_ns",
    "latency_ns.p99": "result_99.00_percentile_per_query_latency_ns",
}


@dataclass(frozen=True, kw_only=True)
class Reading:
    """A result read: its record, and the tree's files to keep beside it (source, name)."""

    record: PublishedResult
    copies: tuple[tuple[Path, str], ...]


def read_result(loc: Location, *, mlperf_version: str | None, imported_utc: str) -> Reading:
    """Read one result; ResultError (naming the file) when it cannot be imported."""
    warnings: list[str] = []
    detail, summary = loc.run_dir / DETAIL_LOG, loc.run_dir / SUMMARY_LOG
    log = _detail(detail)
    _check_log(log, loc, detail)
    lat = _latencies(log, detail)
    metric = _metric(loc.scenario, log, lat, _optional_text(summary, warnings), detail, warnings)
    valid = _validity(log, detail, warnings)
    system_file = loc.org_dir / "systems" / f"{loc.system}.json"
    system_data = _json_object(system_file, "system description", warnings)
    _division_check(loc, system_data, system_file, warnings)
    measured = _measurements(loc, warnings)
    types = measured[1] if measured else {}
    accuracy = loc.scenario_dir / "accuracy" / ACCURACY_FILE
    copies = _copies(detail, summary, system_file, accuracy, measured)
    record = PublishedResult(
        source="published",
        org=loc.org,
        division=loc.division,
        mlperf_version=mlperf_version or tree_version(loc),
        loadgen_version=_text(log.get("loadgen_version")),
        system=_system(loc.system, system_data),
        benchmark=loc.benchmark,
        model=model_key(loc.benchmark),
        scenario=loc.scenario,
        precision=_text(types.get("weight_data_types")),
        input_precision=_text(types.get("input_data_types")),
        valid=valid,
        invalid_reasons=_invalid_reasons(log),
        metric=metric,
        samples_per_second=_number(samples_per_second, log),
        scheduled_samples_per_second=_number(
            lambda x: x.get(_DETAIL_KEYS["scheduled_samples_per_second"]), log
        ),
        latency_ns=Latencies(**lat),
        early_stopping_met=_bool(log.get("early_stopping_met")),
        settings=_settings(log),
        accuracy=_first_line(accuracy),
        loadgen_errors=log.errors,
        loadgen_warnings=log.warnings,
        import_warnings=tuple(warnings),
        source_path=str(loc.run_dir),
        files=tuple(name for _, name in copies),
        imported_utc=imported_utc,
    )
    return Reading(record=record, copies=copies)


def _invalid_reasons(log: DetailLog) -> tuple[str, ...]:
    reasons = log.get("result_invalid_reason", [])
    return tuple(str(r).strip() for r in reasons if str(r).strip())


def _detail(path: Path) -> DetailLog:
    if not path.is_file():
        raise ResultError(f"{path}: no detail log (LoadGen's {DETAIL_LOG}); the result has no data")
    try:
        return parse_detail_log(path)
    except UnicodeDecodeError as exc:
        raise ResultError(f"{path}: not UTF-8 text (byte {exc.start}); not a LoadGen log") from None
    except OSError as exc:
        raise ResultError(f"{path}: cannot read it ({exc.strerror or exc})") from None


def _check_log(log: DetailLog, loc: Location, path: Path) -> None:
    mode = log.get("effective_test_mode")
    if mode is not None and mode != "PerformanceOnly":
        raise ResultError(f"{path}: LoadGen ran {mode!r} here, not PerformanceOnly")
    scenario = log.get("effective_scenario")
    if scenario is not None and scenario != loc.scenario:
        raise ResultError(
            f"{path}: LoadGen ran {scenario!r}, but the directory says {loc.scenario!r}"
        )


def _metric(
    scenario: ScenarioName,
    log: DetailLog,
    lat: Mapping[str, int | None],
    summary: str | None,
    detail: Path,
    warnings: list[str],
) -> MainMetric:
    """The scenario's metric from the detail log, checked against (or else from) the summary."""
    name, label, unit, line = METRICS[scenario]
    key = _DETAIL_KEYS[name]
    value: Any = lat[name.split(".")[1]] if "." in name else log.get(key)
    stated = _summary_value(summary, line)
    if value is None and stated is None:
        raise ResultError(f"{detail}: no {key} (nor '{line}' in the summary); no {label}")
    raw: Any = value if value is not None else stated
    try:
        number = float(raw)
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number) or number < 0:
        raise ResultError(f"{detail}: {label} is {raw!r}, not a number LoadGen writes")
    if value is None:
        warnings.append(f"{detail}: no {key}; {label} taken from {SUMMARY_LOG}'s '{line}'")
    elif stated is not None and abs(number - stated) > 1e-3 * max(abs(stated), 1.0):
        warnings.append(f"{SUMMARY_LOG} says {line} {stated:g}; the detail log {number:g}")
    return MainMetric(name=name, label=label, value=number, unit=unit)


def _summary_value(text: str | None, line: str) -> float | None:
    match = re.search(rf"^{re.escape(line)}\s*:\s*([0-9.eE+\-]+)\s*$", text or "", re.M)
    try:
        return float(match.group(1)) if match else None
    except ValueError:
        return None


def _validity(log: DetailLog, path: Path, warnings: list[str]) -> bool | None:
    verdict = log.get("result_validity")
    if verdict is None:
        warnings.append(f"{path}: no result_validity (an old LoadGen?); validity unknown")
        return None
    return str(verdict).upper() == "VALID"


def _number(get: Any, log: DetailLog) -> float | None:
    """A number LoadGen logged, or None where it logged none or no finite number."""
    try:
        value = get(log)
        number = None if value is None else float(value)
    except (TypeError, ValueError):
        return None
    return number if number is not None and math.isfinite(number) else None


def _bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _settings(log: DetailLog) -> dict[str, SettingValue]:
    """LoadGen's effective settings that are plain JSON scalars (a NaN is not one)."""
    scalars = {k: v for k, v in effective_settings(log).items() if isinstance(v, str | int | bool)}
    finite = {
        k: v
        for k, v in effective_settings(log).items()
        if isinstance(v, float) and math.isfinite(v)
    }
    return dict(sorted({**scalars, **finite}.items()))


def _optional_text(path: Path, warnings: list[str]) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        warnings.append(f"{path}: no summary log; the detail log alone is imported")
    except OSError as exc:
        warnings.append(f"{path}: cannot read it ({exc.strerror or exc}); not imported")
    return None


def _first_line(path: Path) -> str | None:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return lines[0].strip() if lines and lines[0].strip() else None


def _json_object(path: Path, what: str, warnings: list[str]) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        warnings.append(f"{path}: no {what}; its fields are unknown")
        return {}
    except (OSError, ValueError) as exc:
        warnings.append(f"{path}: {what} not readable JSON ({exc}); its fields are unknown")
        return {}
    if not isinstance(data, dict):
        warnings.append(f"{path}: {what} is not a JSON object; its fields are unknown")
        return {}
    return data


def _measurements(loc: Location, warnings: list[str]) -> tuple[Path, dict[str, Any]] | None:
    """The measurements JSON that states the data types, if the tree has one."""
    folder = loc.org_dir / "measurements" / loc.system / loc.benchmark / loc.scenario_dir.name
    try:
        candidates = sorted(folder.glob("*.json"))
    except OSError:
        candidates = []
    for path in candidates:
        data = _json_object(path, "measurements JSON", warnings)
        if "weight_data_types" in data or "input_data_types" in data:
            return path, data
    return None


def _system(system_id: str, data: Mapping[str, Any]) -> PublishedSystem:
    return PublishedSystem(
        id=system_id,
        name=_text(data.get("system_name")),
        system_type=_text(data.get("system_type")),
        status=_text(data.get("status")),
        processor=_text(data.get("host_processor_model_name")),
        processors_per_node=_text(data.get("host_processors_per_node")),
        accelerator=_text(data.get("accelerator_model_name")),
        accelerators_per_node=_text(data.get("accelerators_per_node")),
        nodes=_text(data.get("number_of_nodes")),
        framework=_text(data.get("framework")),
        software=_text(data.get("other_software_stack")),
        operating_system=_text(data.get("operating_system")),
    )


def _text(value: Any) -> str | None:
    """A system JSON value as text; None where it says nothing (absent, empty, N/A)."""
    if isinstance(value, Mapping):
        text = "; ".join(f"{k} {_text(v) or ''}".strip() for k, v in value.items())
    elif isinstance(value, list):
        text = ", ".join(t for t in map(_text, value) if t)
    else:
        text = "" if value is None else str(value).strip()
    return None if text.lower() in _ABSENT else text


def _division_check(
    loc: Location, data: Mapping[str, Any], path: Path, warnings: list[str]
) -> None:
    stated = _text(data.get("division"))
    if stated is not None and stated.lower() != loc.division.lower():
        warnings.append(f"{path}: says division {stated!r}; the tree puts it in {loc.division!r}")


def _copies(
    detail: Path,
    summary: Path,
    system: Path,
    accuracy: Path,
    measurements: tuple[Path, dict[str, Any]] | None,
) -> tuple[tuple[Path, str], ...]:
    wanted = [
        (detail, DETAIL_LOG),
        (summary, SUMMARY_LOG),
        (system, f"systems/{system.name}"),
        (accuracy, f"accuracy/{ACCURACY_FILE}"),
    ]
    if measurements is not None:
        wanted.append((measurements[0], f"measurements/{measurements[0].name}"))
    return tuple((src, name) for src, name in wanted if src.is_file())


def _latencies(log: DetailLog, path: Path) -> dict[str, int | None]:
    try:
        return latency_percentiles_ns(log)
    except (TypeError, ValueError):
        raise ResultError(f"{path}: a latency percentile is not a whole number of ns") from None
