"""Records of what other components measured for a run: accuracy, precision, power, FLOP/s."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from harness.config import Precision

# How a peak was found; see Utilization.
PeakBasis = Literal["datasheet", "derived", "guess", "user"]

# Opaque JSON owned by another component (a recipe's parameters): kept as it was written.
JsonValue = Any


@dataclass(frozen=True, slots=True, kw_only=True)
class Fp32Agreement:
    """How closely the outputs match the FP32 source model's on the same samples.

    ``top1_agreement`` is None for tensor outputs; the error metrics are None for classifiers
    that output a class index. Cosines are means (and minimum) over samples.
    """

    kind: Literal["classifier", "tensor"]
    count: int
    top1_agreement: float | None
    max_abs_error: float | None
    mean_abs_error: float | None
    cosine_similarity: float | None
    min_cosine_similarity: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ClosedDivision:
    """MLPerf's closed-division rule: accuracy must reach ``fraction`` of the FP32 reference."""

    accuracy: float
    reference: float
    fraction: float
    target: float
    passed: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class LabelAccuracy:
    """Top-k accuracy against the dataset's labels, and the FP32 model's on the same samples."""

    count: int
    label_offset: int
    top1: float | None
    top5: float | None
    fp32_top1: float | None
    fp32_top5: float | None
    closed_division: ClosedDivision


@dataclass(frozen=True, slots=True, kw_only=True)
class Accuracy:
    """LoadGen's AccuracyOnly pass, scored against FP32 (and labels when the data has them)."""

    samples: int
    against_fp32: Fp32Agreement
    against_labels: LabelAccuracy | None
    passed: bool
    criterion: str
    reference: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RecipeRecord:
    """How a model was converted: method and its parameters (as the converter took them)."""

    method: str
    params: Mapping[str, JsonValue]
    precision: Precision


@dataclass(frozen=True, slots=True, kw_only=True)
class CalibrationRecord:
    """The calibration set of a static INT8 conversion."""

    seed: int
    count: int
    indices: tuple[int, ...]
    source: str
    sha256: str


@dataclass(frozen=True, slots=True, kw_only=True)
class IsaRecord:
    """CPU instruction sets that speed up the precision, and which this CPU offers.

    ``used_by_onnxruntime`` is None: onnxruntime does not say which ISA its kernels dispatch to.
    """

    precision: Precision
    relevant: tuple[str, ...]
    offered: tuple[str, ...]
    missing: tuple[str, ...]
    used_by_onnxruntime: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class PrecisionRecord:
    """How the measured model was produced from its FP32 source (file is the model's name)."""

    precision: Precision
    file: str
    sha256: str
    source_sha256: str
    recipe: RecipeRecord
    weights_dtype: str
    activations_dtype: str
    io_dtype: str
    calibration: CalibrationRecord | None
    fp32_ops: tuple[str, ...]
    tools: Mapping[str, str]
    tool_messages: tuple[str, ...]
    isa: IsaRecord


@dataclass(frozen=True, slots=True, kw_only=True)
class Utilization:
    """Achieved FLOP/s (samples/s x FLOPs per sample) against the peak of the precision used.

    A value that cannot be known is None, never 0, and ``note`` says why (None: nothing
    missing). ``fraction_of_peak`` is achieved / peak (1.0 is the whole peak).
    ``peak_basis`` says how much the peak can be trusted: ``datasheet`` (the vendor's table),
    ``derived`` (from the ISA and the cpufreq maximum clock), ``guess`` (a clock or vector width
    the machine does not reveal) or ``user`` (the scenario's peak_tflops). The attainable rate
    is measured: a GEMM through onnxruntime at the run's precision (``attainable_method``);
    ``fraction_of_attainable`` is achieved / attainable.
    """

    flops_per_sample: float | None
    macs_per_sample: float | None
    achieved_tflops: float | None
    peak_name: str | None
    peak_tflops: float | None
    peak_precision: str | None
    peak_source: str | None
    peak_assumptions: str | None
    peak_basis: PeakBasis | None
    fraction_of_peak: float | None
    attainable_tflops: float | None
    attainable_method: str | None
    fraction_of_attainable: float | None
    note: str | None
    approximations: tuple[str, ...]
    unknown_ops: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class TelemetrySpan:
    """The window telemetry covered: LoadGen's timed window, on the monotonic clock."""

    start_ns: int
    end_ns: int
    duration_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Violation:
    """Time a power or thermal violation counter advanced within the window."""

    time_s: float
    share: float


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceSummary:
    """One power source over the window; a null value has its reason in ``null_reasons``.

    ``throttle`` maps each throttle reason to the share of the window it was active.
    """

    kind: str
    method: str | None
    energy_counter: str | None
    power_method: str | None
    power_samples: int
    sample_rate_hz: float | None
    avg_power_w: float | None
    energy_j: float | None
    energy_per_inference_mj: float | None
    samples_per_second_per_watt: float | None
    peak_temp_c: float | None
    throttle: Mapping[str, float] | None
    violation_counters: Mapping[str, Violation] | None
    notes: tuple[str, ...]
    null_reasons: Mapping[str, str]


@dataclass(frozen=True, slots=True, kw_only=True)
class MlperfComparable:
    """Which source (if any) is wall power, the figure MLPerf Power compares."""

    source: str | None
    note: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceUnavailable:
    """A power source that could not be read on this machine, and why."""

    source: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceError:
    """A power source that failed during the window."""

    source: str
    error: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TelemetrySummary:
    """Power, energy, heat and throttling over LoadGen's measured window, per source."""

    window: TelemetrySpan
    interval_s: float
    sources: Mapping[str, SourceSummary]
    mlperf_comparable: MlperfComparable
    unavailable: tuple[SourceUnavailable, ...]
    errors: tuple[SourceError, ...]
