"""Precision recipes, target support checks and cached FP16/BF16/INT8 conversion of ONNX models."""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

import numpy as np
import onnx
from onnx import TensorProto

from harness.errors import ConfigError, HarnessError, ModelError
from harness.files import atomic_write_bytes
from harness.models.calibration import CalibrationData, captured_tool_output, quantize
from harness.models.validate import file_sha256
from harness.runtime.convert import float16_block_list, to_float16
from harness.runtime.info import onnxruntime_version
from harness.runtime.targets import get_target

# Bump when this module's output for the same (source, recipe, calibration) changes.
CONVERTER_VERSION: Final = 1
PRECISIONS: Final = ("fp32", "fp16", "bf16", "int8")
METHODS: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {
        "fp32": ("none",),
        "fp16": ("float16",),
        "bf16": ("bfloat16",),
        "int8": ("static-qdq", "static-qoperator", "dynamic"),
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


def _canonical(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in sorted(value.items())}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
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
        params = _canonical(self.params)
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

    Raises:
        ConfigError: For an unknown precision or one the target cannot run.
        DeviceError: For an unknown target.
    """
    _known(precision)
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


@dataclass(frozen=True, kw_only=True)
class ConvertedModel:
    """A converted model file and everything result.json records about it.

    Attributes:
        path: The model file (the source itself for fp32).
        sha256: Its content hash.
        source_sha256: The FP32 source's content hash.
        recipe: How it was made.
        weights_dtype: Element type of the weights (``float16``, ``int8`` …).
        activations_dtype: Element type of the activations.
        io_dtype: Element type of the float inputs and outputs.
        calibration: The calibration set's record (static INT8 only).
        fp32_ops: Op types of the model left in FP32 by the FP16/BF16 block list.
        tools: Versions of onnxruntime, onnx and this converter.
        tool_messages: What onnxruntime's converters logged, deduplicated.
    """

    path: Path
    sha256: str
    source_sha256: str
    recipe: Recipe
    weights_dtype: str = "float32"
    activations_dtype: str = "float32"
    io_dtype: str = "float32"
    calibration: Mapping[str, Any] | None = None
    fp32_ops: tuple[str, ...] = ()
    tools: Mapping[str, str] = field(default_factory=dict)
    tool_messages: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON data for result.json and the cache manifest (``file`` is the file's name)."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data.update(file=self.path.name, recipe=self.recipe.to_dict())
        del data["path"]
        return {k: _canonical(v) for k, v in data.items()}


def convert(
    source: Path, recipe: Recipe, *, calibration: CalibrationData | None, cache: Path
) -> ConvertedModel:
    """Convert ``source`` by ``recipe``, or return the cached result of the same conversion.

    The cache key is the hash of (source sha256, recipe key, calibration tensors' sha256,
    tool and converter versions); a manifest per key names the file by its content hash, and
    a missing or altered file is rebuilt. Every converted model passes ``onnx.checker``.

    Raises:
        ConfigError: If a static recipe has no calibration set, or one that does not match it.
        ModelError: If the source is missing or the converted model fails the checker.
    """
    if not source.is_file():
        raise ModelError(f"{source}: no such model file to convert")
    source_sha, tools = file_sha256(source), _tool_versions()
    if recipe.method == "none":
        return ConvertedModel(
            path=source, sha256=source_sha, source_sha256=source_sha, recipe=recipe, tools=tools
        )
    calib = _matching_calibration(recipe, calibration)
    key = _cache_key(source_sha, recipe, calib, tools)
    manifest = cache / f"{source.stem}-{recipe.precision}-{key}.json"
    cached = _cached(manifest, recipe)
    if cached is not None:
        return cached
    model, fp32_ops, messages = _build(source, recipe, calib, cache)
    path, digest = _store(model, source, recipe, cache)
    weights, activations, io_dtype = _dtypes(recipe)
    result = ConvertedModel(
        path=path,
        sha256=digest,
        source_sha256=source_sha,
        recipe=recipe,
        weights_dtype=weights,
        activations_dtype=activations,
        io_dtype=io_dtype,
        calibration=None if calib is None else calib.record(),
        fp32_ops=fp32_ops,
        tools=tools,
        tool_messages=tuple(dict.fromkeys(messages)),
    )
    atomic_write_bytes(manifest, json.dumps(result.to_dict(), indent=1).encode())
    return result


def _build(
    source: Path, recipe: Recipe, calib: CalibrationData | None, cache: Path
) -> tuple[onnx.ModelProto, tuple[str, ...], list[str]]:
    """Run the recipe's converter in a scratch directory; its errors become ModelErrors."""
    cache.mkdir(parents=True, exist_ok=True)
    try:
        with captured_tool_output() as messages, tempfile.TemporaryDirectory(dir=cache) as tmp:
            model, fp32_ops = _BUILDERS[recipe.method](source, recipe, calib, Path(tmp))
    except HarnessError:
        raise
    except Exception as exc:  # onnx and onnxruntime raise many types: map them here, once
        first = (str(exc).strip().splitlines() or [""])[0]
        raise ModelError(
            f"{source}: the {recipe.method} conversion failed ({type(exc).__name__}: {first})"
        ) from exc
    return model, fp32_ops, messages


def _matching_calibration(recipe: Recipe, data: CalibrationData | None) -> CalibrationData | None:
    if not recipe.method.startswith("static-"):
        return None
    if data is None:
        raise ConfigError(f"{recipe.method}: static INT8 quantization needs a calibration set")
    samples, seed = recipe.params["calibration_samples"], recipe.params["seed"]
    if data.count != samples or data.seed != seed:
        raise ConfigError(
            f"{recipe.method}: the calibration set holds {data.count} samples drawn with seed "
            f"{data.seed}, the recipe says {samples} with seed {seed}"
        )
    return data


def _tool_versions() -> dict[str, str]:
    return {
        "onnxruntime": onnxruntime_version(),
        "onnx": onnx.__version__,
        "converter": str(CONVERTER_VERSION),
    }


def _cache_key(
    source_sha: str, recipe: Recipe, calib: CalibrationData | None, tools: Mapping[str, str]
) -> str:
    payload = {
        "source": source_sha,
        "recipe": recipe.key(),
        "calibration": None if calib is None else calib.sha256(),
        "tools": dict(tools),
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _cached(manifest: Path, recipe: Recipe) -> ConvertedModel | None:
    try:
        meta = json.loads(manifest.read_text())
        path = manifest.parent / str(meta.pop("file"))
        if not path.is_file() or file_sha256(path) != meta["sha256"]:
            return None
        del meta["recipe"]  # the caller's: its key is part of the manifest's name
        for key in ("fp32_ops", "tool_messages"):
            meta[key] = tuple(meta[key])
        return ConvertedModel(path=path, recipe=recipe, **meta)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _store(model: onnx.ModelProto, source: Path, recipe: Recipe, cache: Path) -> tuple[Path, str]:
    """Check the model, then write it atomically, named by its content hash."""
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as exc:
        first = str(exc).strip().splitlines()[0]
        raise ModelError(
            f"{source}: the {recipe.method} conversion fails onnx.checker: {first}"
        ) from None
    data = model.SerializeToString()
    digest = hashlib.sha256(data).hexdigest()
    path = cache / f"{source.stem}-{recipe.precision}-{digest[:16]}.onnx"
    atomic_write_bytes(path, data)
    return path, digest


_QTYPE_DTYPES: Final = {"QInt8": "int8", "QUInt8": "uint8"}


def _dtypes(recipe: Recipe) -> tuple[str, str, str]:
    """(weights, activations, inputs/outputs) element types of the converted model."""
    p = recipe.params
    if recipe.method in ("float16", "bfloat16"):
        half = str(recipe.method)
        return half, half, "float32" if p["keep_io_types"] else half
    weights = _QTYPE_DTYPES[p["weight_type"]]
    if recipe.method == "dynamic":
        return weights, "uint8 (quantized at run time)", "float32"
    return weights, _QTYPE_DTYPES[p["activation_type"]], "float32"


Built = tuple[onnx.ModelProto, tuple[str, ...]]


def _float16(source: Path, recipe: Recipe, calib: CalibrationData | None, work: Path) -> Built:
    model = onnx.load(str(source))
    blocked = set(recipe.params["op_block_list"])
    return _half(model, recipe, blocked), _present(model, blocked)


def _bfloat16(source: Path, recipe: Recipe, calib: CalibrationData | None, work: Path) -> Built:
    """Runs onnxruntime's FP16 converter (op placement, boundary Casts), then retypes to BF16.

    No onnx or onnxruntime tool converts to BF16. Ops whose ONNX schema at the model's opset
    has no bfloat16 type (Conv, MaxPool, … at opset 17) are added to the block list, and
    weights are rounded from their FP32 values (round to nearest even), not from FP16.
    """
    model = onnx.load(str(source))
    blocked = set(recipe.params["op_block_list"]) | _ops_without_bf16(model)
    originals = {
        i.name: onnx.numpy_helper.to_array(i)
        for i in model.graph.initializer
        if i.data_type == TensorProto.FLOAT
    }
    half = _half(model, recipe, blocked)
    _retype_to_bf16(half, originals)
    return half, _present(model, blocked)


def _half(model: onnx.ModelProto, recipe: Recipe, blocked: set[str]) -> onnx.ModelProto:
    return to_float16(
        model, keep_io_types=recipe.params["keep_io_types"], op_block_list=sorted(blocked)
    )


def _present(model: onnx.ModelProto, ops: set[str]) -> tuple[str, ...]:
    return tuple(sorted({n.op_type for n in model.graph.node} & ops))


def _ops_without_bf16(model: onnx.ModelProto) -> set[str]:
    opset = max(e.version for e in model.opset_import if e.domain in ("", "ai.onnx"))
    blocked = set()
    for op in {n.op_type for n in model.graph.node if n.domain in ("", "ai.onnx")}:
        types = [set(c.allowed_type_strs) for c in onnx.defs.get_schema(op, opset).type_constraints]
        floats = [t for t in types if "tensor(float)" in t]
        if floats and not any("tensor(bfloat16)" in t for t in floats):
            blocked.add(op)
    return blocked


def _retype_to_bf16(model: onnx.ModelProto, originals: Mapping[str, np.ndarray]) -> None:
    graph = model.graph
    for init in graph.initializer:
        if init.data_type == TensorProto.FLOAT16:
            values = originals.get(init.name)
            if values is None:
                values = onnx.numpy_helper.to_array(init)
            init.CopyFrom(bf16_tensor(init.name, values))
    for node in graph.node:
        for attr in node.attribute:
            if node.op_type == "Cast" and attr.name == "to" and attr.i == TensorProto.FLOAT16:
                attr.i = TensorProto.BFLOAT16
            elif attr.type == attr.TENSOR and attr.t.data_type == TensorProto.FLOAT16:
                attr.t.CopyFrom(bf16_tensor(attr.t.name, onnx.numpy_helper.to_array(attr.t)))
    for value in (*graph.value_info, *graph.input, *graph.output):
        if value.type.tensor_type.elem_type == TensorProto.FLOAT16:
            value.type.tensor_type.elem_type = TensorProto.BFLOAT16


def bf16_tensor(name: str, values: np.ndarray) -> onnx.TensorProto:
    """A BFLOAT16 tensor of ``values`` rounded to nearest even (NaN stays NaN)."""
    floats = np.ascontiguousarray(values, dtype=np.float32)
    bits = floats.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    rounded = np.where(np.isnan(floats), np.uint16(0x7FC0), rounded)
    tensor = onnx.TensorProto(name=name, data_type=TensorProto.BFLOAT16, dims=floats.shape)
    tensor.raw_data = rounded.astype("<u2").tobytes()
    return tensor


def _int8(source: Path, recipe: Recipe, calib: CalibrationData | None, work: Path) -> Built:
    out = work / "int8.onnx"
    quantize(source, out, method=recipe.method, params=recipe.params, calibration=calib)
    return onnx.load(str(out)), ()


_BUILDERS: Final[Mapping[str, Callable[[Path, Recipe, CalibrationData | None, Path], Built]]] = {
    "float16": _float16,
    "bfloat16": _bfloat16,
    "static-qdq": _int8,
    "static-qoperator": _int8,
    "dynamic": _int8,
}
