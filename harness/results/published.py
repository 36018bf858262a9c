"""published.json: one published MLPerf result, imported beside local runs, and its loader.

The importer (harness.published) reads MLPerf's results trees; this module only holds the
record, its versioned JSON form and the accessors compare, report and show use, so reading a
record never imports LoadGen. History of PUBLISHED_SCHEMA_VERSION: 1, the first.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from harness.config import ScenarioName
from harness.errors import ResultError
from harness.files import atomic_write_text
from harness.results.codec import from_data, schema_problem, to_data
from harness.results.records import Latencies, SettingValue
from harness.strictjson import loads

PUBLISHED_SCHEMA_VERSION = 1
RECORD_FILE = "published.json"
SCHEMA_FILE = "published.schema.json"
# MLPerf's benchmark directories -> the model key of LoadGen's mlperf.conf they stand for
# (v5.1 renamed resnet50's directory to resnet); other benchmarks are their own key.
MODEL_KEYS: Mapping[str, str] = {"resnet": "resnet50", "resnet50": "resnet50"}
# weight_data_types as submitters write them -> the harness's precision names.
PRECISION_NAMES: Mapping[str, str] = {
    "fp32": "fp32",
    "float32": "fp32",
    "fp16": "fp16",
    "float16": "fp16",
    "bf16": "bf16",
    "bfloat16": "bf16",
    "int8": "int8",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class PublishedSystem:
    """The submitter's system description (systems/<id>.json); None where it says nothing."""

    id: str  # the tree's <system> directory name
    name: str | None
    system_type: str | None
    status: str | None
    processor: str | None
    processors_per_node: str | None
    accelerator: str | None
    accelerators_per_node: str | None
    nodes: str | None
    framework: str | None
    software: str | None
    operating_system: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class MainMetric:
    """The scenario's MLPerf metric, as LoadGen logged it (latencies in ns)."""

    name: str  # samples_per_second, scheduled_samples_per_second, latency_ns.p90 or .p99
    label: str
    value: float
    unit: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PublishedResult:
    """One (division, org, system, benchmark, scenario) of a published MLPerf results tree.

    ``benchmark`` is the tree's directory name; ``model`` the LoadGen model key it stands
    for (what a local run's ``loadgen_config.model_key`` says). ``mlperf_version`` is the
    round, known only from the tree's name (``inference_results_v4.1``) or ``--version``;
    ``loadgen_version`` what the detail log says, which can be an older round's LoadGen.
    ``precision`` and ``input_precision`` are the measurements JSON's weight and input data
    types, None where the tree has none. ``settings`` are LoadGen's effective_* settings;
    ``files`` the copies of the tree's files kept beside the record.
    """

    source: Literal["published"]
    org: str
    division: str
    mlperf_version: str | None
    loadgen_version: str | None
    system: PublishedSystem
    benchmark: str
    model: str
    scenario: ScenarioName
    precision: str | None
    input_precision: str | None
    valid: bool | None
    invalid_reasons: tuple[str, ...]
    metric: MainMetric
    samples_per_second: float | None
    scheduled_samples_per_second: float | None
    latency_ns: Latencies
    early_stopping_met: bool | None
    settings: Mapping[str, SettingValue]
    accuracy: str | None
    loadgen_errors: tuple[str, ...]
    loadgen_warnings: tuple[str, ...]
    import_warnings: tuple[str, ...]
    source_path: str
    files: tuple[str, ...]
    imported_utc: str

    @property
    def label(self) -> str:
        """How every output names it: published, org, system, round and division."""
        version = f"v{self.mlperf_version}" if self.mlperf_version else "version unknown"
        return f"published: {self.org} {self.system.id} ({version}, {self.division})"

    @property
    def harness_precision(self) -> str | None:
        """The weight precision in the harness's names (fp32, int8, ...), else as written."""
        if self.precision is None:
            return None
        key = self.precision.strip().lower()
        return PRECISION_NAMES.get(key, key)


def model_key(benchmark: str) -> str:
    """The LoadGen model key a benchmark directory stands for."""
    return MODEL_KEYS.get(benchmark, benchmark)


def published_value(record: PublishedResult, metric: str) -> float | None:
    """A harness.results.metrics metric of a published result; None where it has none."""
    if metric == "samples_per_second":
        return record.samples_per_second
    if metric.startswith("latency_ns."):
        value = getattr(record.latency_ns, metric.removeprefix("latency_ns."), None)
        return None if value is None else float(value)
    return None


def is_published(path: Path) -> bool:
    """Whether a path is a published record: its published.json or the directory holding it."""
    return path.name == RECORD_FILE if path.is_file() else (path / RECORD_FILE).is_file()


def to_json(record: PublishedResult) -> str:
    """The record as indented JSON, schema_version first."""
    data = {"schema_version": PUBLISHED_SCHEMA_VERSION, **to_data(record)}
    try:
        return json.dumps(data, indent=2, allow_nan=False) + "\n"
    except ValueError:
        raise ResultError(f"{record.label}: a value is not a finite number; not written") from None


def write_published(record: PublishedResult, directory: Path) -> Path:
    """Write published.json into `directory`, atomically."""
    path = directory / RECORD_FILE
    atomic_write_text(path, to_json(record))
    return path


def load_published(path: Path) -> PublishedResult:
    """Read a published record (its directory or published.json); one line for any problem."""
    file = path / RECORD_FILE if path.is_dir() else path
    try:
        # strict: no NaN or Infinity (issue #23), each refused by its key
        data: Any = loads(file.read_text(encoding="utf-8"), str(file), ResultError)
    except FileNotFoundError:
        raise ResultError(
            f"{file}: no such published record; import one with `harness import mlperf`"
        ) from None
    except (OSError, ValueError) as exc:
        raise ResultError(f"{file}: not readable JSON ({exc})") from None
    version = data.get("schema_version") if isinstance(data, dict) else None
    if not isinstance(version, int) or isinstance(version, bool):
        raise ResultError(f"{file}: no schema_version; not a beyond-tops published record")
    if version > PUBLISHED_SCHEMA_VERSION:
        raise ResultError(
            f"{file}: schema_version {version} was written by a newer beyond-tops; "
            "upgrade beyond-tops"
        )
    if version < PUBLISHED_SCHEMA_VERSION:
        raise ResultError(f"{file}: schema_version {version} is not one this reads; import again")
    problem = schema_problem(data, SCHEMA_FILE)
    body = {k: v for k, v in data.items() if k != "schema_version"}
    if problem is None:
        try:
            return from_data(PublishedResult, body)
        except ResultError as exc:
            problem = str(exc)
    raise ResultError(f"{file}: not a published record ({problem}); import it again")


def describe(record: PublishedResult) -> list[tuple[str, str]]:
    """(field, value) rows a person reads first: for `harness show` and the report."""
    s, lat = record.system, record.latency_ns
    verdict = {True: "VALID", False: "INVALID", None: "not logged"}[record.valid]
    rows = [
        ("source", f"{record.label}; never measured here"),
        ("org", record.org),
        ("system", f"{s.id}" + (f" ({s.name})" if s.name and s.name != s.id else "")),
        ("division", record.division),
        ("MLPerf version", record.mlperf_version or "unknown (not in the tree; give --version)"),
        ("LoadGen", record.loadgen_version or "not logged"),
        ("benchmark", f"{record.benchmark} (model {record.model})"),
        ("scenario", record.scenario),
        ("precision", _precision(record)),
        ("result", verdict + "".join(f"; {r}" for r in record.invalid_reasons)),
        ("metric", f"{record.metric.label} {_metric_value(record.metric)}"),
        ("latency", _latency(lat)),
        ("processor", _times(s.processor, s.processors_per_node)),
        ("accelerator", _times(s.accelerator, s.accelerators_per_node)),
        ("nodes", s.nodes or "not stated"),
        ("software", ", ".join(x for x in (s.framework, s.software) if x) or "not stated"),
        ("status", f"{s.status or 'not stated'}; system type {s.system_type or 'not stated'}"),
    ]
    if record.accuracy:
        rows.append(("accuracy", record.accuracy))
    rows += [("warning", w) for w in (*record.loadgen_warnings, *record.import_warnings)]
    rows.append(("from", record.source_path))
    return rows


def _precision(record: PublishedResult) -> str:
    if record.precision is None:
        return "not stated (no measurements JSON with weight_data_types)"
    inputs = f", inputs {record.input_precision}" if record.input_precision else ""
    return f"weights {record.precision}{inputs}"


def _metric_value(metric: MainMetric) -> str:
    if metric.unit == "ns":
        return f"{metric.value / 1e6:,.3f} ms"
    return f"{metric.value:,.2f} {metric.unit}"


def _latency(lat: Latencies) -> str:
    parts = [
        f"{name} {value / 1e6:,.3f} ms"
        for name, value in (("p50", lat.p50), ("p90", lat.p90), ("p99", lat.p99))
        if value is not None
    ]
    early = lat.early_stopping_p90 or lat.early_stopping_p99
    if early is not None:
        which = "p90" if lat.early_stopping_p90 is not None else "p99"
        parts.append(f"early-stopping {which} {early / 1e6:,.3f} ms")
    return "  ".join(parts) or "not logged"


def _times(model: str | None, count: str | None) -> str:
    if not model:
        return "none"
    return f"{count} x {model}" if count else model
