"""Cached FP16/BF16/INT8/INT4 conversion of ONNX models by a precision recipe (see recipes)."""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Final

import numpy as np
import onnx
from onnx import TensorProto

from harness.errors import ConfigError, HarnessError, ModelError
from harness.files import atomic_write_bytes
from harness.models.calibration import CalibrationData, captured_tool_output, quantize
from harness.models.recipes import Recipe, canonical

# Re-exported for tests/fixtures/accuracy/make_fixtures.py; its home is harness.models.recipes.
from harness.models.recipes import default_recipe as default_recipe
from harness.models.validate import file_sha256
from harness.packages import required_version
from harness.runtime.convert import to_float16, to_int4

# Bump when this module's output for the same (source, recipe, calibration) changes.
CONVERTER_VERSION: Final = 1


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
        return {k: canonical(v) for k, v in data.items()}


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
        "onnxruntime": required_version("onnxruntime"),
        "onnx": required_version("onnx"),
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
    if recipe.method == "matmul_nbits":
        zero = (
            "symmetric"
            if p["symmetric"]
            else "each block's float minimum (Q4_1)"
            if p["zero_points"] == "float"
            else "uint4 zero points"
        )
        weights = f"int4 (MatMul weights, {p['block_size']}-weight blocks along K, {zero})"
        return weights, "float32", "float32"
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


def _int4(source: Path, recipe: Recipe, calib: CalibrationData | None, work: Path) -> Built:
    """Every MatMul with a constant 2-D weight becomes MatMulNBits (4-bit, blockwise)."""
    model = to_int4(
        onnx.load(str(source)),
        block_size=int(recipe.params["block_size"]),
        symmetric=bool(recipe.params["symmetric"]),
        zero_points=str(recipe.params["zero_points"]),
    )
    return model, ()


_BUILDERS: Final[Mapping[str, Callable[[Path, Recipe, CalibrationData | None, Path], Built]]] = {
    "float16": _float16,
    "bfloat16": _bfloat16,
    "static-qdq": _int8,
    "static-qoperator": _int8,
    "dynamic": _int8,
    "matmul_nbits": _int4,
}
