"""The immutable result of one run: frozen, slotted records with units in their names."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from harness.config import Precision, ProfileName, ScenarioName
from harness.records.accuracy import Accuracy
from harness.records.fingerprint import Fingerprint
from harness.records.generation import GenerationRecord
from harness.records.measures import Plausibility, PrecisionRecord, Utilization
from harness.records.memory import MemoryFootprint
from harness.records.telemetry import TelemetrySummary

# A LoadGen effective_* setting's value, as its detail log states it.
SettingValue = str | int | float | bool
DataPath = Literal["host", "device", "device+host-copies"]
# Field metadata: the record's keys sit in its parent's JSON object instead of a nested one.
INLINE = {"json": "inline"}


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRecord:
    """The measured model file; ``dims`` are the free dimensions it ran at."""

    name: str
    path: str
    sha256: str
    precision: Precision
    opset: int
    dims: Mapping[str, int]


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadGenOutcome:
    """LoadGen's verdict on the timed test, and whether it counts for a submission.

    ``submission_valid``: VALID, no LoadGen error, accuracy passed, not IMPLAUSIBLE, under the
    submission profile. In result.json these keys sit at the top level.
    """

    mode: Literal["performance", "accuracy"]
    profile: ProfileName
    submission_valid: bool
    valid: bool
    invalid_reasons: tuple[str, ...]
    loadgen_errors: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Latencies:
    """Query latencies in ns from LoadGen's detail log; None where it logged none.

    ``early_stopping_p90`` is LoadGen's early-stopping estimate of the p90 (an upper bound),
    SingleStream only; ``early_stopping_p99`` the p99's (MultiStream, and SingleStream after
    662 queries; LoadGen logs 0 when it has none: None here). MultiStream's percentiles are
    per query (MLPerf's 8 samples); Offline "latencies" are completion times within one query.
    """

    p50: int | None
    p90: int | None
    p95: int | None
    p97: int | None
    p99: int | None
    p999: int | None
    mean: int | None
    min: int | None
    max: int | None
    early_stopping_p90: int | None
    early_stopping_p99: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Hardware:
    """The target and the few machine facts a reader wants first (the rest: fingerprint)."""

    target: str
    fingerprint_id: str
    cpu_model: str | None
    usable_cpus: int | None
    gpus: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeRecord:
    """The onnxruntime session as it ran: options, providers, node placement, data path."""

    graph_optimization_level: str
    intra_op_threads: int
    inter_op_threads: int
    execution_mode: str
    allow_spinning: bool
    free_dimension_overrides: Mapping[str, int]
    provider_options: Mapping[str, Mapping[str, str]]
    requested_providers: tuple[str, ...]
    cpu_fallback_allowed: bool
    cuda_graphs: bool
    node_placement: Mapping[str, int]
    data_path: DataPath


@dataclass(frozen=True, slots=True, kw_only=True)
class Versions:
    """Versions of the software that measured."""

    harness: str
    python: str
    onnxruntime: str
    loadgen: str
    numpy: str
    onnx: str


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadGenConfig:
    """The LoadGen configuration files used, by hash."""

    model_key: str
    mlperf_conf_sha256: str
    user_conf_sha256: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Warmup:
    """The untimed inferences before LoadGen's test, which size its expectations."""

    queries: int
    duration_ms: float
    median_latency_ns: float
    min_latency_ns: int
    samples_per_second: float


@dataclass(frozen=True, slots=True, kw_only=True)
class MeasuredWindow:
    """LoadGen's timed window (first query issued to last completed)."""

    duration_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class PreflightRecord:
    """A preflight check that failed before the run (also among the warnings)."""

    code: str
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ContainerImage:
    """The harness image the run ran in."""

    id: str
    tag: str


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueDelays:
    """Percentiles of Server's per-query or per-batch waits, in ns."""

    p50: int
    p90: int
    p99: int
    max: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerRecord:
    """The Server scenario: the arrival rate asked for and what the system made of it.

    ``scheduled_samples_per_second`` is LoadGen's issued rate (MLPerf's Server metric when
    the run is VALID), ``completed_samples_per_second`` what was answered. The latency bound
    is LoadGen's effective one (ns at ``latency_percentile``); ``latency_constraint_met`` its
    verdict on it, ``overlatency_queries`` the queries over the bound. ``target_qps_source``
    says where the rate came from: the scenario, or the peak search with its logs.
    The batcher: ``compiled_batch`` (the scenario's batch_size) and the compiled batches below
    it with their measured costs; ``max_batch`` and ``max_wait_ms`` as derived (``batching``
    says how) or set; ``batch_sizes`` counts batches by queries in them (keys are sizes);
    ``queue_delay_ns`` is each query's wait from LoadGen's issue to its batch's start, and
    ``hold_ns`` each batch's time held open for more queries: max_wait_ms, plus the thread's
    wake-up when the wait ran out (the OS's, outside the harness's control).
    """

    target_qps: float
    target_qps_source: str
    scheduled_samples_per_second: float | None
    completed_samples_per_second: float | None
    latency_bound_ns: int | None
    latency_percentile: float | None
    latency_constraint_met: bool | None
    overlatency_queries: int | None
    early_stopping_met: bool | None
    early_stopping_result: str | None
    compiled_batch: int
    max_batch: int
    max_wait_ms: float
    batching: str | None
    batch_costs_ms: Mapping[str, float]
    queue_depth: int
    workers: int
    batches: int
    mean_batch: float | None
    batch_sizes: Mapping[str, int]
    queue_delay_ns: QueueDelays | None
    hold_ns: QueueDelays | None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResult:
    """Everything one run measured and everything needed to reproduce or compare it.

    ``settings`` are LoadGen's own effective_* settings, verbatim: their keys are LoadGen's
    and change with its version. ``fingerprint`` is the environment as the fingerprint
    collectors produced it: a JSON mapping inside its record, with its own versioned shape
    (harness.records.fingerprint). ``telemetry`` is None when the window never opened; ``image``
    when the run was not in a harness container. Throughput is samples/s (Server: completed;
    MultiStream: samples per query over the mean query latency); the qps values are LoadGen's
    (None in Offline). ``server`` is the Server scenario's record, None in the others.
    ``files`` names the data files the harness wrote into the run directory beside LoadGen's
    logs, by what they hold ("query_latencies", "telemetry", "cpu_telemetry"); None in a
    result from before schema 5, which did not list them. ``plausibility`` is the physics
    check's verdict on ``utilization`` (harness.analysis.plausibility); a result from before
    schema 7 is judged when it is read. ``label`` is the name given with ``--label``
    (harness.records.runlabel), None when none was; ``memory`` the worker's footprint over the
    window (None before schema 8, or when the window never opened).
    ``generation`` is a generative model's token figures
    (tokens/s, TTFT, TPOT, output lengths; harness.records.generation), None for any other.
    """

    run_id: str
    label: str | None
    created_utc: str
    scenario: ScenarioName
    scenario_name: str
    outcome: LoadGenOutcome = field(metadata=INLINE)
    latency_ns: Latencies
    samples_per_second: float | None
    qps_with_loadgen_overhead: float | None
    qps_without_loadgen_overhead: float | None
    batch_size: int
    model: ModelRecord
    hardware: Hardware
    providers: tuple[str, ...]
    runtime: RuntimeRecord
    versions: Versions
    settings: Mapping[str, SettingValue]
    loadgen_config: LoadGenConfig
    warmup: Warmup
    window: MeasuredWindow
    warnings: tuple[str, ...]
    preflight: tuple[PreflightRecord, ...]
    fingerprint: Fingerprint
    telemetry: TelemetrySummary | None
    memory: MemoryFootprint | None
    image: ContainerImage | None
    utilization: Utilization
    plausibility: Plausibility
    precision: PrecisionRecord
    accuracy: Accuracy
    server: ServerRecord | None
    files: Mapping[str, str] | None
    generation: GenerationRecord | None = None

    @property
    def valid(self) -> bool:
        """LoadGen's verdict, outcome.valid: the one field callers gate exit codes on."""
        return self.outcome.valid
