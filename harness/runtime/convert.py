"""onnxruntime's offline model tools (FP16 conversion, INT8 quantization) behind plain functions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import onnx


class SampleReader(Protocol):
    """What onnxruntime's calibrators read: one ``{input name: array}`` per call, then None."""

    def get_next(self) -> dict[str, np.ndarray] | None:
        """The next sample, or None when there are no more."""


@dataclass(frozen=True, kw_only=True)
class Int8Options:
    """What onnxruntime's quantizers are asked for; the strings name onnxruntime's enum members.

    Attributes:
        per_channel: Per-channel weight scales.
        reduce_range: 7-bit weights (for CPUs without VNNI).
        weight_type: ``QuantType`` of the weights (``QInt8``, ``QUInt8``).
        activation_type: ``QuantType`` of the activations (static quantization only).
        calibration_method: ``CalibrationMethod`` (static only: ``MinMax``, ``Entropy``, …).
        quant_format: ``QuantFormat`` (static only: ``QDQ`` or ``QOperator``).
    """

    per_channel: bool
    reduce_range: bool
    weight_type: str
    activation_type: str = "QUInt8"
    calibration_method: str = "MinMax"
    quant_format: str = "QDQ"


def float16_block_list() -> list[str]:
    """The ops onnxruntime's FP16 converter keeps in FP32 by default, sorted."""
    from onnxruntime.transformers.float16 import DEFAULT_OP_BLOCK_LIST

    return sorted(DEFAULT_OP_BLOCK_LIST)


def to_float16(
    model: onnx.ModelProto, *, keep_io_types: bool, op_block_list: Sequence[str]
) -> onnx.ModelProto:
    """Convert to FP16 with onnxruntime's converter; the output is put back in topological order."""
    from onnxruntime.transformers.float16 import convert_float_to_float16
    from onnxruntime.transformers.onnx_model import OnnxModel

    half: onnx.ModelProto = convert_float_to_float16(
        model, keep_io_types=keep_io_types, op_block_list=list(op_block_list)
    )
    # The converter appends its boundary Casts last; onnx.checker wants topological order.
    OnnxModel.graph_topological_sort(half.graph, is_deterministic=True)
    return half


def preprocess(source: Path, out: Path) -> None:
    """Run onnxruntime's quantization pre-processing (ONNX shape inference, BatchNorm folding).

    Symbolic shape inference is skipped: it needs sympy, and ONNX's own shape inference
    covers models made of standard ops.
    """
    from onnxruntime.quantization.shape_inference import quant_pre_process

    quant_pre_process(str(source), str(out), skip_symbolic_shape=True)


def quantize_dynamic(source: Path, out: Path, options: Int8Options) -> None:
    """Quantize weights to INT8 now, activations at run time (onnxruntime's dynamic quantizer)."""
    from onnxruntime.quantization import QuantType
    from onnxruntime.quantization import quantize_dynamic as ort_quantize_dynamic

    ort_quantize_dynamic(
        str(source),
        str(out),
        per_channel=options.per_channel,
        reduce_range=options.reduce_range,
        weight_type=QuantType[options.weight_type],
    )


def quantize_static(source: Path, out: Path, reader: SampleReader, options: Int8Options) -> None:
    """Quantize to INT8 with onnxruntime's static quantizer, calibrated on the CPU on `reader`."""
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType
    from onnxruntime.quantization import quantize_static as ort_quantize_static

    ort_quantize_static(
        str(source),
        str(out),
        reader,
        quant_format=QuantFormat[options.quant_format],
        activation_type=QuantType[options.activation_type],
        calibrate_method=CalibrationMethod[options.calibration_method],
        calibration_providers=["CPUExecutionProvider"],
        per_channel=options.per_channel,
        reduce_range=options.reduce_range,
        weight_type=QuantType[options.weight_type],
    )


def to_int4(
    model: onnx.ModelProto, *, block_size: int, symmetric: bool, zero_points: str = "float"
) -> onnx.ModelProto:
    """Every MatMul with a constant 2-D weight as MatMulNBits: 4-bit blockwise weights.

    Blocks of ``block_size`` weights along the input dimension K, round-to-nearest, one scale
    each. ``zero_points`` "float" (the default) keeps each block's own range with a float zero
    point (harness.runtime.nbits; exact for weights already on a Q4_1 grid); "uint4" runs
    onnxruntime's MatMulNBitsQuantizer (4-bit integer zero points, a range that holds 0).
    """
    if zero_points == "float":
        from harness.runtime.nbits import to_matmul_nbits

        return to_matmul_nbits(model, block_size=block_size, symmetric=symmetric)
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    quantizer = MatMulNBitsQuantizer(model, block_size=block_size, is_symmetric=symmetric)
    quantizer.process()
    out: onnx.ModelProto = quantizer.model.model
    return out
