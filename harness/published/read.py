"""One published result's files (detail and summary logs, system and measurements JSON) read.

A file that stops the result being read (no detail log, a malformed line, no metric) raises
ResultError naming it; what only leaves a field unknown (no system JSON, an old LoadGen's
missing key) becomes an import warning recorded with the result. Every file is read through
harness.published.files: inside the tree, regular, bounded; only files read and accepted
are copied into the record.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.errors import ResultError
from harness.published import files
from harness.published.compliance import read_compliance
from harness.published.metric import LOGGED, generation, main_metric
from harness.published.tree import Location, tree_version
from harness.records.layout import (
    ACCURACY_DIR,
    ACCURACY_TXT,
    DETAIL_LOG,
    MEASUREMENTS_FILE,
    SUMMARY_LOG,
)
from harness.records.loadgen_log import (
    DetailLog,
    effective_settings,
    latency_percentiles_ns,
    logged_float,
    samples_per_second,
)
from harness.records.metrics import SCHEDULED
from harness.records.published import PublishedResult, PublishedSystem, model_key
from harness.records.result import Latencies, SettingValue
from harness.strictjson import Json, JsonObject

_ABSENT = {"", "n/a", "na", "none", "-"}


@dataclass(frozen=True, kw_only=True)
class Reading:
    """A result read: its record, and the tree's files to keep beside it (source, name).

    Each source was read and accepted; `root` is the tree, which a copy must not leave.
    """

    record: PublishedResult
    copies: tuple[tuple[Path, str], ...]
    root: Path


def read_result(loc: Location, *, mlperf_version: str | None, imported_utc: str) -> Reading:
    """Read one result; ResultError (naming the file) when it cannot be imported."""
    warnings: list[str] = []
    copies: list[tuple[Path, str]] = []
    detail, summary = loc.run_dir / DETAIL_LOG, loc.run_dir / SUMMARY_LOG
    log = _detail(loc.root, detail)
    copies.append((detail, DETAIL_LOG))
    _check_log(log, loc, detail)
    lat = _latencies(log, detail)
    summary_text = _summary(loc.root, summary, warnings, copies)
    version = mlperf_version or tree_version(loc)
    metric = main_metric(loc.scenario, version, log, summary_text, detail, warnings)
    tokens = generation(metric, log, summary_text, warnings)
    valid = _validity(log, detail, warnings)
    system_file = loc.org_dir / "systems" / f"{loc.system}.json"
    system_data = _json_object(loc.root, system_file, "system description", warnings)
    if system_data is not None:
        copies.append((system_file, f"systems/{system_file.name}"))
    _division_check(loc, system_data or {}, system_file, warnings)
    measured = _measurements(loc, warnings)
    types = measured[1] if measured else {}
    if measured is not None:
        copies.append((measured[0], f"measurements/{measured[0].name}"))
    accuracy = loc.scenario_dir / ACCURACY_DIR / ACCURACY_TXT
    accuracy_line = _accuracy(loc.root, accuracy, warnings, copies)
    compliance = read_compliance(loc, warnings, copies)
    record = PublishedResult(
        source="published",
        org=loc.org,
        division=loc.division,
        mlperf_version=version,
        loadgen_version=_text(log.get("loadgen_version")),
        system=_system(loc.system, system_data or {}),
        benchmark=loc.benchmark,
        model=model_key(loc.benchmark),
        scenario=loc.scenario,
        precision=_text(types.get("weight_data_types")),
        input_precision=_text(types.get("input_data_types")),
        valid=valid,
        invalid_reasons=_invalid_reasons(log),
        metric=metric,
        samples_per_second=samples_per_second(log),
        scheduled_samples_per_second=logged_float(log, LOGGED[SCHEDULED.key][0]),
        latency_ns=Latencies(**lat),
        early_stopping_met=_bool(log.get("early_stopping_met")),
        settings=_settings(log),
        accuracy=accuracy_line,
        compliance=compliance,
        loadgen_errors=log.errors,
        loadgen_warnings=log.warnings,
        import_warnings=tuple(warnings),
        # from the tree's own directory down: where it came from, not where it was unpacked
        source_path=str(loc.run_dir.relative_to(loc.root.parent)),
        files=tuple(name for _, name in copies),
        imported_utc=imported_utc,
        generation=tokens,
    )
    return Reading(record=record, copies=tuple(copies), root=loc.root)


def _invalid_reasons(log: DetailLog) -> tuple[str, ...]:
    reasons = log.get("result_invalid_reason", [])
    return tuple(str(r).strip() for r in reasons if str(r).strip())


def _detail(root: Path, path: Path) -> DetailLog:
    if not files.present(path):
        raise ResultError(f"{path}: no detail log (LoadGen's {DETAIL_LOG}); the result has no data")
    return files.detail_log(root, path)


def _check_log(log: DetailLog, loc: Location, path: Path) -> None:
    mode = log.get("effective_test_mode")
    if mode is not None and mode != "PerformanceOnly":
        raise ResultError(f"{path}: LoadGen ran {mode!r} here, not PerformanceOnly")
    scenario = log.get("effective_scenario")
    if scenario is not None and scenario != loc.scenario:
        raise ResultError(
            f"{path}: LoadGen ran {scenario!r}, but the directory says {loc.scenario!r}"
        )


def _validity(log: DetailLog, path: Path, warnings: list[str]) -> bool | None:
    verdict = log.get("result_validity")
    if verdict is None:
        warnings.append(f"{path}: no result_validity (an old LoadGen?); validity unknown")
        return None
    return str(verdict).upper() == "VALID"


def _bool(value: object) -> bool | None:
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


def _summary(
    root: Path, path: Path, warnings: list[str], copies: list[tuple[Path, str]]
) -> str | None:
    """The summary log's text, copied; a warning naming it when absent or not one."""
    if not files.present(path):
        warnings.append(f"{path}: no summary log; the detail log alone is imported")
        return None
    try:
        text = files.summary_log(root, path)
    except ResultError as exc:
        warnings.append(f"{exc}; not imported: the detail log alone is")
        return None
    copies.append((path, SUMMARY_LOG))
    return text


def _accuracy(
    root: Path, path: Path, warnings: list[str], copies: list[tuple[Path, str]]
) -> str | None:
    """accuracy.txt's first line, the file copied; None where the tree has no readable one.

    An accuracy.txt that cannot be read (a link out of the tree, a FIFO, binary) is a
    warning naming it: its result still imports, with no accuracy.
    """
    if not files.present(path):
        return None
    try:
        lines = files.text_file(root, path).splitlines()
    except ResultError as exc:
        warnings.append(f"{exc}; accuracy not imported")
        return None
    copies.append((path, f"{ACCURACY_DIR}/{ACCURACY_TXT}"))
    first = lines[0].strip() if lines else ""
    return first[: files.MAX_FIELD_CHARS] or None


def _json_object(root: Path, path: Path, what: str, warnings: list[str]) -> JsonObject | None:
    """A system JSON's well-typed fields; None (with a warning naming it) where it is not one."""
    if not files.present(path):
        warnings.append(f"{path}: no {what}; its fields are unknown")
        return None
    try:
        return files.json_fields(root, path, files.SYSTEM_FIELDS, warnings)
    except ResultError as exc:
        warnings.append(f"{exc}; {what} not imported: its fields are unknown")
        return None


def _measurements(loc: Location, warnings: list[str]) -> tuple[Path, JsonObject] | None:
    """The measurements JSON that states the data types, if the tree has one.

    v6 trees keep it beside the result (<scenario>/measurements.json), older rounds under
    <org>/measurements/<system>/<benchmark>/<scenario>/.
    """
    folder = loc.org_dir / "measurements" / loc.system / loc.benchmark / loc.scenario_dir.name
    try:
        candidates = sorted(folder.glob("*.json"))
    except OSError:
        candidates = []
    beside = loc.scenario_dir / MEASUREMENTS_FILE
    for path in [beside] if files.present(beside) else candidates:
        try:
            data = files.json_fields(loc.root, path, files.MEASUREMENT_FIELDS, warnings)
        except ResultError as exc:
            warnings.append(f"{exc}; measurements JSON not imported")
            continue
        if data:
            return path, data
    return None


def _system(system_id: str, data: Mapping[str, Json]) -> PublishedSystem:
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


def _text(value: object) -> str | None:
    """A system JSON value as text; None where it says nothing (absent, empty, N/A)."""
    if isinstance(value, Mapping):
        text = "; ".join(f"{k} {_text(v) or ''}".strip() for k, v in value.items())
    elif isinstance(value, list):
        text = ", ".join(t for t in map(_text, value) if t)
    else:
        text = "" if value is None else str(value).strip()
    return None if text.lower() in _ABSENT else text


def _division_check(
    loc: Location, data: Mapping[str, Json], path: Path, warnings: list[str]
) -> None:
    stated = _text(data.get("division"))
    if stated is not None and stated.lower() != loc.division.lower():
        warnings.append(f"{path}: says division {stated!r}; the tree puts it in {loc.division!r}")


def _latencies(log: DetailLog, path: Path) -> dict[str, int | None]:
    return latency_percentiles_ns(log)
