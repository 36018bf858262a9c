"""Records of how the measured model was made and what share of the peak it reached."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from harness.config import Precision
from harness.strictjson import Json

# How a peak was found; see Utilization.
PeakBasis = Literal["datasheet", "derived", "guess", "user"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RecipeRecord:
    """How a model was converted: method and its parameters (as the converter took them)."""

    method: str
    params: Mapping[str, Json]
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


# The physics check's verdict on a run's achieved compute; see Plausibility.
PlausibilityVerdict = Literal["plausible", "IMPLAUSIBLE", "not judged"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Plausibility:
    """Whether the achieved compute is physically possible on the machine that measured it.

    ``verdict`` is IMPLAUSIBLE when achieved FLOP/s exceed the measured attainable rate (the
    GEMM probe) or a known peak by more than a stated margin: the SUT answered faster than the
    hardware can compute (a cache, an answer given once for every query). ``figure`` names the
    comparison judged (achieved and the rate it was judged against, TFLOP/s), ``ratio`` is
    achieved over that rate and ``limit`` the margin it may reach (None where not judged);
    ``reason`` is one sentence a reader can act on.
    """

    verdict: PlausibilityVerdict
    figure: str | None
    ratio: float | None
    limit: float | None
    reason: str
