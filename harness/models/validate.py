"""Check a user's or generated ONNX file before any session is built, and fix its free dims.

The file itself (regular, bounded, hashed) is checked by harness.models.modelfile first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import onnx
from google.protobuf.message import DecodeError  # type: ignore[import-untyped]

from harness.errors import ModelError
from harness.models.modelfile import check_model_file
from harness.models.modelfile import file_sha256 as file_sha256  # re-exported: its old home
from harness.runtime.info import max_opset

Dim = int | str | None


@dataclass(frozen=True, kw_only=True)
class ModelInfo:
    """What the harness needs to know about a model file."""

    path: Path
    sha256: str
    opset: int
    inputs: Mapping[str, tuple[Dim, ...]]
    outputs: tuple[str, ...]


def runtime_max_opset() -> int:
    """The newest ai.onnx opset the installed onnxruntime knows."""
    return max_opset()


def inspect_model(path: Path) -> ModelInfo:
    """Parse, opset-check and `onnx.checker`-check a model file; errors say how to fix it."""
    check_model_file(path)
    model = _parse(path)
    opset = _default_opset(model, path)
    limit = runtime_max_opset()
    if opset > limit:
        raise ModelError(
            f"{path}: opset {opset} is newer than this onnxruntime supports ({limit}); "
            f"re-export the model with opset <= {limit} or upgrade onnxruntime"
        )
    try:
        onnx.checker.check_model(str(path))
    except onnx.checker.ValidationError as exc:
        first = str(exc).strip().splitlines()[0]
        raise ModelError(f"{path}: fails onnx.checker: {first}") from None
    initializers = {i.name for i in model.graph.initializer}
    inputs = {
        i.name: tuple(_dim(d) for d in i.type.tensor_type.shape.dim)
        for i in model.graph.input
        if i.name not in initializers
    }
    return ModelInfo(
        path=path,
        sha256=file_sha256(path),
        opset=opset,
        inputs=inputs,
        outputs=tuple(o.name for o in model.graph.output),
    )


def resolve_dims(info: ModelInfo, *, batch_size: int, dims: Mapping[str, int]) -> dict[str, int]:
    """Values for every symbolic dim: axis 0 of each input is the batch, the rest come from dims."""
    resolved: dict[str, int] = {}
    for name, shape in info.inputs.items():
        for axis, dim in enumerate(shape):
            if isinstance(dim, int):
                if axis == 0 and dim != batch_size:
                    raise ModelError(
                        f"{info.path}: input '{name}' has a fixed batch of {dim}, so batch_size "
                        f"{batch_size} cannot run; export the model with a symbolic batch dim"
                    )
                continue
            if dim is None:
                raise ModelError(
                    f"{info.path}: input '{name}' axis {axis} has no size and no name; "
                    "give it a symbolic name (dim_param) when exporting"
                )
            if axis == 0:
                resolved[dim] = batch_size
            elif dim in dims:
                resolved[dim] = dims[dim]
            else:
                raise ModelError(
                    f"{info.path}: input '{name}' dim '{dim}' is symbolic; "
                    f"set model.dims.{dim} in the scenario"
                )
    unused = sorted(set(dims) - set(resolved))
    if unused:
        known = ", ".join(sorted(resolved)) or "none"
        raise ModelError(
            f"{info.path}: model.dims {', '.join(unused)} name no symbolic dim of this model "
            f"(its symbolic dims: {known})"
        )
    return resolved


def _parse(path: Path) -> onnx.ModelProto:
    try:
        model = onnx.load(str(path), load_external_data=False)
    except (DecodeError, ValueError, RuntimeError) as exc:
        raise ModelError(
            f"{path}: not a readable ONNX model ({type(exc).__name__}); the file may be "
            "truncated or another format — re-export or re-download it"
        ) from None
    if model.ir_version == 0 or not model.graph.node:
        raise ModelError(
            f"{path}: not an ONNX model (no IR version or no graph nodes); the file may be "
            "empty, truncated or another format"
        )
    return model


def _default_opset(model: onnx.ModelProto, path: Path) -> int:
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return int(entry.version)
    raise ModelError(f"{path}: declares no ai.onnx opset; re-export it with an opset")


def _dim(dim: onnx.TensorShapeProto.Dimension) -> Dim:
    if dim.HasField("dim_value"):
        return int(dim.dim_value)
    if dim.HasField("dim_param") and dim.dim_param:
        return str(dim.dim_param)
    return None
