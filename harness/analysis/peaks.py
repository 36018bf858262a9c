"""Dense peak throughput per precision: accelerator datasheets, a CPU model and user overrides."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from harness.hardware import TARGETS
from harness.records.measures import PeakBasis
from harness.strictjson import Json

PRECISIONS: Final = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8")


@dataclass(frozen=True, kw_only=True)
class Peak:
    """A theoretical dense peak, where it comes from and what it assumes.

    Attributes:
        name: The hardware, e.g. ``H100 SXM`` or the CPU model and core count.
        precision: One of :data:`PRECISIONS`.
        tflops: Dense (not structured-sparse) peak in TFLOP/s (TOPS for int8).
        source: The document and table the number comes from, or how it was derived.
        assumptions: What the number assumes, in words.
        basis: ``datasheet``, ``derived`` (ISA and cpufreq maximum clock), ``guess`` (a clock
            or vector width the machine does not reveal) or ``user``.
    """

    name: str
    precision: str
    tflops: float
    source: str
    assumptions: str = ""
    basis: PeakBasis = "datasheet"

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision {self.precision!r} not in {', '.join(PRECISIONS)}")
        if not self.tflops > 0:
            raise ValueError(f"tflops must be positive, got {self.tflops}")


_HALVED: Final = "the datasheet's tensor figures are with 2:4 sparsity; halved here for dense"
_NVL_UNCHECKED: Final = "NVL figures not cross-checked against a second source"
_FP32_CUDA: Final = (
    "fp32 is the CUDA-core (non-tensor) rate; if onnxruntime runs fp32 on tensor cores as "
    "TF32 (the CUDA provider's use_tf32), compare with the tf32 row"
)


def _table(name: str, source: str, notes: str, **tflops: float) -> Mapping[str, Peak]:
    return MappingProxyType(
        {
            precision: Peak(
                name=name, precision=precision, tflops=value, source=source, assumptions=notes
            )
            for precision, value in tflops.items()
        }
    )


_NV_H100: Final = "NVIDIA H100 Tensor Core GPU datasheet, 'Technical Specifications' table"
_NV_H200: Final = "NVIDIA H200 Tensor Core GPU datasheet, 'Technical Specifications' table"
_HOPPER = {"fp32": 67.0, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5, "fp8": 1979.0}
_HOPPER_NVL = {"fp32": 60.0, "tf32": 417.5, "bf16": 835.5, "fp16": 835.5, "fp8": 1670.5}
_AMPERE = {"fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0, "int8": 624.0}
_NV_A100: Final = (
    "NVIDIA A100 Tensor Core GPU datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web), "
    "'Technical Specifications' table"
)
_A100_NOTES: Final = (
    f"dense figures as printed (sparse ones carry an asterisk); the 40 GB parts list the "
    f"same peaks; {_FP32_CUDA}"
)

ACCELERATOR_PEAKS: Final[Mapping[str, Mapping[str, Peak]]] = MappingProxyType(
    {
        "H100 SXM": _table(
            "H100 SXM",
            f"{_NV_H100}, H100 SXM column",
            f"{_HALVED}; {_FP32_CUDA}",
            **_HOPPER,
            int8=1979.0,
        ),
        "H100 PCIe": _table(
            "H100 PCIe",
            f"{_NV_H100}, H100 PCIe column",
            f"{_HALVED}; {_FP32_CUDA}",
            fp32=51.0,
            tf32=378.0,
            bf16=756.5,
            fp16=756.5,
            fp8=1513.0,
            int8=1513.0,
        ),
        "H100 NVL": _table(
            "H100 NVL",
            f"{_NV_H100}, H100 NVL column",
            f"{_HALVED}; {_FP32_CUDA}; per GPU; {_NVL_UNCHECKED}",
            **_HOPPER_NVL,
            int8=1670.5,
        ),
        "H200 SXM": _table(
            "H200 SXM",
            f"{_NV_H200}, H200 SXM column",
            f"{_HALVED}; same GH100 compute as H100 SXM; {_FP32_CUDA}",
            **_HOPPER,
            int8=1979.0,
        ),
        "H200 NVL": _table(
            "H200 NVL",
            f"{_NV_H200}, H200 NVL column",
            f"{_HALVED}; {_FP32_CUDA}; {_NVL_UNCHECKED}",
            **_HOPPER_NVL,
            int8=1670.5,
        ),
        "A100 SXM 80GB": _table(
            "A100 SXM 80GB", f"{_NV_A100}, A100 80GB SXM column", _A100_NOTES, **_AMPERE
        ),
        "A100 PCIe 80GB": _table(
            "A100 PCIe 80GB", f"{_NV_A100}, A100 80GB PCIe column", _A100_NOTES, **_AMPERE
        ),
        "L4": _table(
            "L4",
            "NVIDIA L4 Tensor Core GPU datasheet, 'Specifications' table",
            f"{_HALVED} (242 -> 121, 485 -> 242.5); {_FP32_CUDA}",
            fp32=30.3,
            tf32=60.0,
            bf16=121.0,
            fp16=121.0,
            fp8=242.5,
            int8=242.5,
        ),
        "T4": _table(
            "T4",
            "NVIDIA T4 Tensor Core GPU datasheet, 'Specifications' table",
            "Turing has no structured sparsity, so the figures are dense; fp16 is the "
            "'Mixed Precision (FP16/FP32)' row; no bf16, tf32 or fp8 on Turing",
            fp32=8.1,
            fp16=65.0,
            int8=130.0,
        ),
        "MI300X": _table(
            "MI300X",
            "AMD Instinct MI300X accelerator data sheet, 'Peak theoretical performance' "
            "(also the AMD CDNA 3 architecture white paper)",
            "dense figures (the sheet lists 'with structured sparsity' at 2x separately); "
            "fp32 is the matrix rate, equal to the vector rate on CDNA 3; the tf32, fp32 and "
            "int8 figures were not cross-checked against a second source",
            fp32=163.4,
            tf32=653.7,
            bf16=1307.4,
            fp16=1307.4,
            fp8=2614.9,
            int8=2614.9,
        ),
    }
)

# (pattern on the upper-cased NVML/amdsmi name, table key); the first match wins.
_NAME_RULES: Final = (
    (r"\bMI300X\b", "MI300X"),
    (r"\bH200\b.*\bNVL\b", "H200 NVL"),
    (r"\bH200\b", "H200 SXM"),
    (r"\bH100\b.*\bNVL\b", "H100 NVL"),
    (r"\bH100\b.*\bPCIE\b", "H100 PCIe"),
    (r"\bH100\b", "H100 SXM"),
    (r"\bA100\b.*\bPCIE\b", "A100 PCIe 80GB"),
    (r"\bA100\b", "A100 SXM 80GB"),
    (r"\bL4\b", "L4"),
    (r"\bT4\b", "T4"),
)


def match_accelerator(gpu_name: str) -> str | None:
    """The :data:`ACCELERATOR_PEAKS` key for a device name as NVML or amdsmi reports it.

    ``NVIDIA H100 80GB HBM3`` is the SXM part (the PCIe and NVL boards say so in their
    names); ``NVIDIA GH200`` and other parts not in the table give None.
    """
    upper = gpu_name.upper()
    for pattern, key in _NAME_RULES:
        if re.search(pattern, upper):
            return key
    return None


def resolve_peak(
    *,
    hw: str,
    precision: str,
    fingerprint: Mapping[str, Json],
    override_tflops: float | None = None,
) -> Peak | None:
    """The peak to compare a run with: the scenario's override, the GPU table or the CPU model.

    Args:
        hw: The hardware target (``cpu``, ``nvidia``, ``rocm``, ...).
        precision: The model's precision, one of :data:`PRECISIONS`.
        fingerprint: The result's fingerprint (``gpus[0].name``, ``cpu``).
        override_tflops: The scenario's peak for hardware not in the table.

    Returns:
        The peak, or None when the hardware or precision has none.
    """
    if override_tflops is not None:
        return Peak(
            name="user override",
            precision=precision,
            tflops=override_tflops,
            source="user override in scenario",
            basis="user",
        )
    target = TARGETS.get(hw)
    if target is None:
        return None
    if target.is_gpu:
        gpus = fingerprint.get("gpus")
        first = gpus[0] if isinstance(gpus, list) and gpus else None
        name = first.get("name") if isinstance(first, dict) else None
        key = match_accelerator(name) if isinstance(name, str) else None
        return None if key is None else ACCELERATOR_PEAKS[key].get(precision)
    cpu = fingerprint.get("cpu")
    return cpu_peak(cpu, precision) if isinstance(cpu, dict) else None


# --- CPU model --------------------------------------------------------------------------

FMA_UNITS: Final = 2
# Intel, "Accelerate AI Workloads with Intel AMX" (4th Gen Xeon Scalable): the TMUL unit of
# each core does 2048 INT8 or 1024 BF16 operations per cycle.
AMX_OPS_PER_CYCLE: Final = MappingProxyType({"int8": 2048.0, "bf16": 1024.0})
_AMX_SOURCE: Final = (
    "Intel AMX per core: 2048 int8 / 1024 bf16 ops per cycle (Intel, 'Accelerate AI "
    "Workloads with Intel AMX', 4th Gen Xeon Scalable)"
)


def cpu_peak(cpu: Mapping[str, Json], precision: str) -> Peak | None:
    """A CPU's theoretical peak from the fingerprint's ISA flags, cores and clock.

    peak = physical cores x ops per cycle per core x clock. Ops per cycle come from the
    widest vector ISA (AVX-512: 512 bit, AVX2: 256 bit) with two FMA units per core, or
    from AMX for bf16/int8. Every assumption is written into :attr:`Peak.assumptions`.

    Returns:
        None without a clock, a core count, AVX2/AVX-512 or a model for ``precision``.
    """
    flags = cpu.get("isa")
    isa = {str(flag) for flag in flags} if isinstance(flags, list | tuple) else set()
    vendor = str(cpu.get("vendor") or "")
    vector = _vector(isa, vendor)
    cores, core_note = _physical_cores(cpu)
    mhz, mhz_note, clock_known = _clock_mhz(cpu)
    if vector is None or cores is None or mhz is None:
        return None
    rate = _ops_per_cycle(isa, vector, precision)
    if rate is None:
        return None
    ops, rate_note = rate
    # AMD parts with AVX-512 run it on 256-bit (Zen 4) or 512-bit (Zen 5) pipes; flags can't tell.
    width_known = not (vector.bits == 512 and "AMD" in vendor.upper())
    return Peak(
        name=f"{cpu.get('model') or 'CPU'} ({cores} cores)",
        precision=precision,
        tflops=ops * cores * mhz / 1e6,
        source="derived from the fingerprint's cpu.isa, core count and clock",
        assumptions="; ".join((f"{ops:g} ops/cycle/core: {rate_note}", core_note, mhz_note)),
        basis="derived" if clock_known and width_known else "guess",
    )


@dataclass(frozen=True)
class _Vector:
    bits: int  # datapath width that sets throughput
    note: str


def _vector(isa: set[str], vendor: str) -> _Vector | None:
    units = f"{FMA_UNITS} FMA units per core (as on AVX2 cores and AVX-512 server parts)"
    del vendor  # a peak must be an upper bound: no guessing of narrower pipes from flags
    if "avx512f" in isa:
        # AMD Zen 4 runs 512-bit ops on 256-bit pipes (half this), Zen 5 does not, and a VM's
        # flags cannot tell them apart; a guessed-low peak gave > 100 % on a real run here.
        return _Vector(
            512,
            f"AVX-512 at full width, {units}; Xeon Silver/Bronze with one unit and AMD Zen 4 "
            "(256-bit pipes) reach half",
        )
    if "avx2" in isa:
        return _Vector(256, f"AVX2 with FMA3, {units}")
    return None


def _ops_per_cycle(isa: set[str], vector: _Vector, precision: str) -> tuple[float, str] | None:
    fp32 = FMA_UNITS * vector.bits / 32 * 2
    if precision == "fp32":
        return fp32, f"fp32 FMA, {vector.note}"
    if precision == "bf16":
        return _bf16(isa, vector, fp32)
    if precision == "int8":
        return _int8(isa, vector)
    if precision == "fp16":
        if "avx512_fp16" in isa:
            return 2 * fp32, f"AVX512-FP16 FMA on 16-bit lanes, {vector.note}"
        return fp32, f"no fp16 arithmetic in the ISA: fp16 runs at the fp32 rate; {vector.note}"
    return None


def _bf16(isa: set[str], vector: _Vector, fp32: float) -> tuple[float, str]:
    if "amx_bf16" in isa:
        return AMX_OPS_PER_CYCLE["bf16"], _AMX_SOURCE
    if "avx512_bf16" in isa:
        return 2 * fp32, f"AVX512-BF16 dot products (2 per fp32 lane), {vector.note}"
    return fp32, f"no bf16 arithmetic in the ISA: bf16 runs at the fp32 rate; {vector.note}"


def _int8(isa: set[str], vector: _Vector) -> tuple[float, str]:
    if "amx_int8" in isa:
        return AMX_OPS_PER_CYCLE["int8"], _AMX_SOURCE
    if "avx512_vnni" in isa or "avx_vnni" in isa:
        bits = vector.bits if "avx512_vnni" in isa else 256
        # one multiply and one add per byte pair, one instruction per vector
        return FMA_UNITS * bits / 8 * 2, f"VNNI dot products ({bits}-bit), {vector.note}"
    return FMA_UNITS * vector.bits / 8 * 2 / 3, (
        f"no VNNI: int8 dot products take 3 instructions "
        f"(VPMADDUBSW, VPMADDWD, VPADDD); {vector.note}"
    )


def _physical_cores(cpu: Mapping[str, Json]) -> tuple[int | None, str]:
    usable, cores = cpu.get("usable_cpus"), cpu.get("cores")
    counts = [int(n) for n in (usable, cores) if isinstance(n, int | float) and n > 0]
    if not counts:
        return None, "no core count"
    return min(counts), (
        f"cores = min(usable_cpus={usable}, physical cores={cores}): SMT threads add no FMA "
        "units; assumes each usable CPU is on its own physical core"
    )


def _clock_mhz(cpu: Mapping[str, Json]) -> tuple[float | None, str, bool]:
    """The clock, what it is, and whether it is the real maximum (False: a guess)."""
    for key, note, known in (
        (
            "max_mhz",
            "the cpufreq maximum (turbo) clock; all-core AVX-512/AMX clocks run lower",
            True,
        ),
        (
            "current_mhz",
            "/proc/cpuinfo's current clock, a guess: no cpufreq maximum is readable (as in "
            "most VMs), and the turbo clock may be higher",
            False,
        ),
    ):
        value = cpu.get(key)
        if isinstance(value, int | float) and value > 0:
            return float(value), f"clock {value} MHz = {note}", known
    return None, "no clock", False
