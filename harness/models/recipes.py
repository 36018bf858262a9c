"""Precision recipes (method and parameters per precision) and target support checks."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from harness.config import PRECISIONS
from harness.errors import ConfigError
from harness.runtime.convert import float16_block_list
from harness.runtime.targets import get_target

METHODS: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {
        "fp32": ("none",),
        "fp16": ("float16",),
        "bf16": ("bfloat16",),
        "int8": ("static-qdq", "static-qoperator", "dynamic"),
        # weight-only: blockwise 4-bit MatMul weights run by onnxruntime's MatMulNBits
        "int4": ("matmul_nbits",),
    }
)
# Fits the 64-sample data of the quick scenarios; MinMax ranges settle within tens of samples.
# Submission runs should use the MLPerf calibration list's size (500 images for ResNet-50).
DEFAULT_CALIBRATION_SAMPLES: Final = 64
# CPU flags (as /proc/cpuinfo and the fingerprint name them) that accelerate each precision.
ISA_FOR_PRECISION: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {
        "fp32": ("avx2", "avx512f"),
        "fp16": ("avx512_fp16",),
        "bf16": ("avx512_bf16", "amx_bf16"),
        "int8": ("avx512_vnni", "avx_vnni", "amx_int8"),
        "int4": ("avx2", "avx512_vnni"),
    }
)
# The compute ops onnxruntime's CPU provider has no FP16/BF16 kernel for (onnxruntime 1.32,
# x86-64; tests/unit/test_precision.py checks this against the installed kernel registry).
CPU_FP32_ONLY_OPS: Final = ("Conv", "Gemm", "MatMul")

_QUANT_TYPES: Final = ("QInt8", "QUInt8")
_COUNT: Final = "count"  # an int >= 1
_HALF: Final = {"keep_io_types": bool, "op_block_list": list}
_QUANT: Final = {"per_channel": bool, "reduce_range": bool, "weight_type": _QUANT_TYPES}
_STATIC: Final = {
    **_QUANT,
    "activation_type": _QUANT_TYPES,
    "calibration_method": ("MinMax", "Entropy", "Percentile"),
    "calibration_samples": _COUNT,
    "seed": int,
    "preprocess": bool,
}
# Each method's parameters: a type, the allowed values, or _COUNT.
_PARAMS: Final[Mapping[str, Mapping[str, Any]]] = {
    "none": {},
    "float16": _HALF,
    "bfloat16": _HALF,
    "static-qdq": _STATIC,
    "static-qoperator": _STATIC,
    "dynamic": {**_QUANT, "preprocess": bool},
    "matmul_nbits": {
        "block_size": (16, 32, 64, 128, 256),
        "symmetric": bool,
        "zero_points": ("float", "uint4"),
    },
}


def _valid(rule: Any, value: Any) -> bool:
    if isinstance(rule, tuple):
        return value in rule
    if rule is list:
        return isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)
    number = isinstance(value, int) and not isinstance(value, bool)
    if rule == _COUNT:
        return number and value >= 1
    return number if rule is int else isinstance(value, rule)


def canonical(value: Any) -> Any:
    """``value`` as canonical JSON data: mappings with sorted string keys, sequences as lists."""
    if isinstance(value, Mapping):
        return {str(k): canonical(v) for k, v in sorted(value.items())}
    if isinstance(value, list | tuple):
        return [canonical(v) for v in value]
    return value


@dataclass(frozen=True, kw_only=True)
class Recipe:
    """How a model is converted to a precision: the method and every parameter that matters.

    Attributes:
        precision: One of :data:`PRECISIONS`.
        method: ``none`` (fp32), ``float16``, ``bfloat16``, ``static-qdq``,
            ``static-qoperator`` or ``dynamic``.
        params: The method's parameters (see :func:`default_recipe`); JSON values only.
    """

    precision: str
    method: str
    params: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        _known(self.precision)
        if self.method not in METHODS[self.precision]:
            allowed = ", ".join(METHODS[self.precision])
            raise ConfigError(
                f"precision {self.precision}: unknown method {self.method!r} (allowed: {allowed})"
            )
        rules = _PARAMS[self.method]
        allowed = ", ".join(sorted(rules)) or "none"
        for key, value in self.params.items():
            if key not in rules:
                raise ConfigError(f"{self.method}: unknown parameter '{key}' (allowed: {allowed})")
            if not _valid(rules[key], value):
                raise ConfigError(f"{self.method}: parameter {key}={value!r} is invalid")
        missing = sorted(set(rules) - set(self.params))
        if missing:
            raise ConfigError(
                f"{self.method}: parameters {', '.join(missing)} missing; start from default_recipe"
            )

    def to_dict(self) -> dict[str, Any]:
        """The recipe as JSON data (lists for sequences, keys sorted)."""
        params = canonical(self.params)
        return {"precision": self.precision, "method": self.method, "params": params}

    def key(self) -> str:
        """Hex sha256 of the recipe's canonical JSON."""
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


def default_recipe(
    precision: str, *, model_kind: str = "cnn", overrides: Mapping[str, Any] = MappingProxyType({})
) -> Recipe:
    """The recipe used unless the scenario overrides parameters (or ``method``).

    FP16/BF16 keep float32 inputs and outputs and leave onnxruntime's default op block list
    in FP32. INT8 is static QDQ with MinMax calibration, per-channel weights and graph
    pre-processing (BatchNorm folding) for CNNs, and dynamic quantization for transformers.

    Raises:
        ConfigError: For an unknown precision, model kind, method or parameter.
    """
    if model_kind not in ("cnn", "transformer"):
        raise ConfigError(f"model_kind: {model_kind!r} is not 'cnn' or 'transformer'")
    _known(precision)
    transformer_int8 = model_kind == "transformer" and precision == "int8"
    default = "dynamic" if transformer_int8 else METHODS[precision][0]
    method = str(overrides.get("method", default))
    rest = {k: v for k, v in overrides.items() if k != "method"}
    return Recipe(precision=precision, method=method, params={**_defaults(method), **rest})


def _known(precision: str) -> None:
    if precision not in PRECISIONS:
        raise ConfigError(f"precision: {precision!r} is not one of {', '.join(PRECISIONS)}")


def _defaults(method: str) -> dict[str, Any]:
    if method in ("float16", "bfloat16"):
        return {"keep_io_types": True, "op_block_list": float16_block_list()}
    if method == "matmul_nbits":
        # 32-weight blocks with one scale each: onnxruntime's and genai's builder's default.
        # Float zero points keep each block's own range (GGUF's Q4_1: exact for SmolLM2's
        # weights); onnxruntime's quantizer ("uint4") moved them by 8 % rms (README, Precision).
        return {"block_size": 32, "symmetric": False, "zero_points": "float"}
    quant = {"per_channel": False, "reduce_range": False, "weight_type": "QInt8"}
    if method == "dynamic":
        return {**quant, "preprocess": False}
    if method.startswith("static-"):
        # u8 activations x s8 weights is what VNNI's vpdpbusd multiplies: ResNet-50 at batch 8
        # on this project's AVX-512-VNNI CPU ran 93.5 samples/s with U8S8 QDQ, 31.3 with
        # S8S8 QDQ (which onnxruntime suggests for QDQ) and 26.2 in FP32.
        activation = "QUInt8"
        return {
            **quant,
            "per_channel": True,
            "activation_type": activation,
            "calibration_method": "MinMax",
            "calibration_samples": DEFAULT_CALIBRATION_SAMPLES,
            "seed": 0,
            "preprocess": True,
        }
    return {}


def check_precision_supported(precision: str, *, hw: str, cpu_isa: Sequence[str]) -> list[str]:
    """Warnings for a precision on a target; an error where it cannot run at all.

    On the CPU: FP16 is a warning (onnxruntime inserts Casts and runs Conv/Gemm/MatMul in FP32,
    so the run measures FP32 compute, not FP16 hardware); BF16 is an error
    (no BF16 kernels and no Casts inserted: the session would not build, whatever the ISA);
    INT8 without VNNI or AMX-INT8 is a warning that it may be slower than FP32.

    INT4 is the generative models' (harness.models.llm.variants): an error here.

    Raises:
        ConfigError: For an unknown precision or one the target cannot run.
        DeviceError: For an unknown target.
    """
    _known(precision)
    if precision == "int4":
        raise ConfigError(
            "precision int4: 4-bit MatMulNBits weights are for the generative models "
            "(model.zoo llm-tiny, smollm2-135m, smollm2-135m-instruct); use fp32, fp16, bf16 or "
            "int8 for this model"
        )
    target = get_target(hw)
    if target.device_type == "cpu":
        return _cpu_warnings(precision, set(cpu_isa))
    return list(_ACCELERATOR_WARNINGS.get((target.name, precision), ()))


def _cpu_warnings(precision: str, isa: set[str]) -> list[str]:
    ops = "/".join(CPU_FP32_ONLY_OPS)
    if precision == "fp16":
        return [
            f"precision fp16 on the CPU is emulated: onnxruntime's CPU provider has no FP16 "
            f"{ops} kernels, so it casts back to FP32 and runs FP32 kernels; this measures FP32 "
            "compute plus conversion overhead, not hardware FP16"
        ]
    if precision == "bf16":
        wanted = ISA_FOR_PRECISION["bf16"]
        if not isa & set(wanted):
            raise ConfigError(
                f"precision bf16: this CPU offers neither {' nor '.join(wanted)}, and "
                "onnxruntime's CPU provider has no BF16 kernels; use fp32 or int8 on this CPU"
            )
        raise ConfigError(
            f"precision bf16: onnxruntime's CPU provider has no BF16 {ops} kernels (and inserts "
            "no Casts for BF16), so a bf16 model cannot run although the CPU offers "
            f"{', '.join(sorted(isa & set(wanted)))}; use fp32 or int8 on the CPU"
        )
    if precision == "int8" and not isa & set(ISA_FOR_PRECISION["int8"]):
        return [
            "precision int8: this CPU has no VNNI or AMX-INT8 (avx512_vnni, avx_vnni, amx_int8); "
            "onnxruntime's INT8 kernels fall back to slower multiply-add sequences and may be "
            "slower than FP32"
        ]
    return []


def saturation_warnings(recipe: Recipe, *, hw: str, cpu_isa: Sequence[str]) -> list[str]:
    """A warning where an 8-bit-weight INT8 recipe runs on a CPU without an INT8 dot product.

    There onnxruntime's U8S8 kernels add pairs of u8 x s8 products in 16 bits (vpmaddubsw),
    which saturate: on an AVX2-only EPYC, efficientnet-lite0's top-1 agreement with FP32 read
    75.0 % with 8-bit weights and 91.7 % with 7-bit ones (README, Precision). The recipe is not
    changed behind the user's back: the same scenario converts to the same model everywhere.
    """
    if recipe.precision != "int8" or recipe.params.get("reduce_range", True):
        return []
    if get_target(hw).device_type != "cpu" or set(cpu_isa) & set(ISA_FOR_PRECISION["int8"]):
        return []
    return [
        "precision int8: without VNNI or AMX-INT8, onnxruntime adds pairs of u8 x s8 products in "
        "16 bits, which saturate, so INT8 agrees less with FP32 (efficientnet-lite0 top-1: 75 % "
        "on an AVX2-only CPU); set model.conversion: {reduce_range: true} (7-bit weights: 92 %) "
        "to convert for this CPU"
    ]


_TRT_FLAG = (
    "TensorrtExecutionProvider picks {what} kernels only with {flag}=True (the nvidia target's "
    "default is False; set it in runtime.provider_options)"
)
_ACCELERATOR_WARNINGS: Final[Mapping[tuple[str, str], tuple[str, ...]]] = MappingProxyType(
    {
        ("nvidia", "fp16"): (_TRT_FLAG.format(what="FP16", flag="trt_fp16_enable"),),
        ("nvidia", "bf16"): (
            "precision bf16 needs an NVIDIA GPU of compute capability 8.0 or newer (A100, H100 "
            "…); on older GPUs the session fails to build",
        ),
        ("nvidia", "int8"): (
            _TRT_FLAG.format(what="INT8", flag="trt_int8_enable"),
            "CUDAExecutionProvider has no quantized Conv/MatMul kernels: it runs a QDQ model's "
            "Q/DQ nodes around FP32 kernels, so it is no faster than FP32",
        ),
        ("rocm", "bf16"): (
            "precision bf16 on MIGraphX depends on its version; beyond-tops has not verified it",
        ),
    }
)


def isa_for_precision(precision: str, cpu_isa: Sequence[str]) -> dict[str, Any]:
    """Which CPU instruction sets that speed up ``precision`` this CPU offers (for result.json).

    onnxruntime does not report which ISA its MLAS kernels dispatch to (it picks the best the
    CPU offers at run time), so ``used_by_onnxruntime`` is None.
    """
    relevant = ISA_FOR_PRECISION.get(precision, ())
    offered = set(cpu_isa)
    return {
        "precision": precision,
        "relevant": list(relevant),
        "offered": [f for f in relevant if f in offered],
        "missing": [f for f in relevant if f not in offered],
        "used_by_onnxruntime": None,
    }
