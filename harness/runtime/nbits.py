"""4-bit blockwise MatMul weights with each block's own minimum, run by onnxruntime's MatMulNBits.

A MatMul ``y = x @ B`` with a constant (K, N) weight becomes ``MatMulNBits``: B is cut into
blocks of ``block_size`` consecutive weights along K (the input dimension, the one the dot
product sums over), one block per (column, block row). Asymmetric blocks keep their own range:
``scale = (max - min) / 15`` and a float zero point ``-min / scale``, so a weight dequantizes
to ``q * scale + min`` with ``q`` in 0..15. That is GGUF's Q4_1 block (32 weights along a row
of the (out, in) tensor, ``d * q + m``): a model whose weights came from a Q4_1 file is
represented exactly, where onnxruntime's own quantizer (uint4 zero points, and a range
stretched to hold 0) moves every weight by up to half a step. Symmetric blocks use
``scale = max|w| / 7`` and the op's default zero point 8.

How a float zero point runs: onnxruntime 1.32's CPU MatMulNBits takes float zero points, but
only on a path that dequantizes the whole weight on every call (SmolLM2-135M: 426 ms a token
against 36 ms with uint4 zero points). So the graph runs what llama.cpp's Q4_1 dot product
runs: ``x @ w = x @ (scale * (q - 8)) + blocksum(x) @ offset``, with ``offset = scale * 8 + min``
per block; the first term is a MatMulNBits without zero points (the fast prepacked kernel),
``blocksum(x)`` is ``x @ S`` with S the (K, K blocks) 0/1 matrix of which block each row is
in (one per K, shared), and ``offset`` a (K blocks, N) float32 matrix (1/block_size of the
weight's FP32 size).

The op's ``accuracy_level`` is left unset (0): the CPU kernel dequantizes to float32 and
multiplies in float32, so the only error is the weights' rounding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper, numpy_helper

BITS: Final = 4
LEVELS: Final = 2**BITS - 1  # 15: the largest 4-bit code
SYMMETRIC_ZERO: Final = 8  # MatMulNBits' zero point when the node has none
MS_DOMAIN: Final = "com.microsoft"

Floats = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class Blockwise:
    """A (K, N) weight in MatMulNBits' layout.

    Attributes:
        packed: (N, K blocks, block_size / 2) uint8, two codes a byte, the low nibble first.
        scales: (N * K blocks,) float32.
        zero_points: (N * K blocks,) float32, or None for symmetric blocks (zero point 8).
        k: The weight's K (the last block is zero-padded to block_size).
        block_size: Weights per block.
    """

    packed: npt.NDArray[np.uint8]
    scales: Floats
    zero_points: Floats | None
    k: int
    block_size: int


def quantize_blockwise(weight: Floats, *, block_size: int, symmetric: bool) -> Blockwise:
    """Round-to-nearest 4-bit codes of ``weight`` (K, N), blocks of ``block_size`` along K."""
    if weight.ndim != 2 or block_size % 2:
        raise ValueError(f"weight shape {weight.shape}, block_size {block_size}: need 2-D, even")
    k, n = weight.shape
    blocks = -(-k // block_size)
    padded = np.zeros((blocks * block_size, n), dtype=np.float32)
    padded[:k] = weight
    by_block = padded.T.reshape(n, blocks, block_size).astype(np.float64)
    if symmetric:
        scale = np.abs(by_block).max(axis=-1, keepdims=True) / (LEVELS // 2)
        scale[scale == 0] = 1.0
        codes = np.clip(np.rint(by_block / scale) + SYMMETRIC_ZERO, 0, LEVELS)
        zero_points = None
    else:
        low = by_block.min(axis=-1, keepdims=True)
        scale = (by_block.max(axis=-1, keepdims=True) - low) / LEVELS
        scale[scale == 0] = 1.0  # a constant block: every code 0, dequantized to ``low``
        codes = np.clip(np.rint((by_block - low) / scale), 0, LEVELS)
        zero_points = (-low / scale).astype(np.float32).reshape(-1)
    nibbles = codes.astype(np.uint8)
    packed = nibbles[..., 0::2] | (nibbles[..., 1::2] << 4)
    return Blockwise(
        packed=np.ascontiguousarray(packed, dtype=np.uint8),
        scales=scale.astype(np.float32).reshape(-1),
        zero_points=zero_points,
        k=k,
        block_size=block_size,
    )


def dequantize(q: Blockwise) -> Floats:
    """The (K, N) float32 weight MatMulNBits multiplies by: ``(code - zero point) * scale``."""
    n, blocks, _ = q.packed.shape
    codes = np.stack([q.packed & 0x0F, q.packed >> 4], axis=-1).reshape(n, blocks, -1)
    zero = (
        np.float32(SYMMETRIC_ZERO) if q.zero_points is None else q.zero_points.reshape(n, blocks, 1)
    )
    values = (codes.astype(np.float32) - zero) * q.scales.reshape(n, blocks, 1)
    return np.ascontiguousarray(values.reshape(n, -1)[:, : q.k].T, dtype=np.float32)


def block_offsets(q: Blockwise) -> Floats:
    """(K blocks, N): what each block adds to a weight beyond ``scale * (code - 8)``."""
    if q.zero_points is None:
        raise ValueError("symmetric blocks have no offsets")
    n, blocks, _ = q.packed.shape
    offset = q.scales * (np.float32(SYMMETRIC_ZERO) - q.zero_points)
    return np.ascontiguousarray(offset.reshape(n, blocks).T, dtype=np.float32)


def block_indicator(k: int, block_size: int) -> Floats:
    """(K, K blocks) 0/1: ``x @ S`` sums x over each block of K."""
    blocks = -(-k // block_size)
    rows = np.arange(k) // block_size
    indicator = np.zeros((k, blocks), dtype=np.float32)
    indicator[np.arange(k), rows] = 1.0
    return indicator


def _eligible(node: onnx.NodeProto, weight: onnx.TensorProto | None, inputs: set[str]) -> bool:
    return (
        weight is not None
        and node.op_type == "MatMul"
        and node.domain in ("", "ai.onnx")
        and weight.name not in inputs
        and weight.data_type == TensorProto.FLOAT
        and len(weight.dims) == 2
    )


def to_matmul_nbits(model: onnx.ModelProto, *, block_size: int, symmetric: bool) -> onnx.ModelProto:
    """A copy of ``model`` with every MatMul whose B is a 2-D float32 initializer as MatMulNBits.

    Asymmetric blocks add the block-offset term beside it (see the module's docstring).
    MatMuls of two activations (attention's scores) and a B made by another node (a tied LM
    head's Transpose of the embedding) stay float32. An initializer no node reads any more
    is dropped.
    """
    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    inits = {i.name: i for i in graph.initializer}
    graph_inputs = {i.name for i in graph.input}
    nodes: list[onnx.NodeProto] = []
    added: dict[str, onnx.TensorProto] = {}
    for node in graph.node:
        weight = inits.get(node.input[1]) if len(node.input) == 2 else None
        if weight is None or not _eligible(node, weight, graph_inputs):
            nodes.append(node)
            continue
        q = quantize_blockwise(
            numpy_helper.to_array(weight), block_size=block_size, symmetric=symmetric
        )
        base = node.name or weight.name
        packed, scales = f"{weight.name}_Q4", f"{weight.name}_scales"
        added[packed] = numpy_helper.from_array(q.packed, packed)
        added[scales] = numpy_helper.from_array(q.scales, scales)
        k, n = weight.dims
        codes_out = node.output[0] if symmetric else f"{base}_Q4_codes"
        nodes.append(
            helper.make_node(
                "MatMulNBits",
                [node.input[0], packed, scales],
                [codes_out],
                name=f"{base}_Q4",
                domain=MS_DOMAIN,
                K=k,
                N=n,
                bits=BITS,
                block_size=block_size,
            )
        )
        if symmetric:
            continue
        indicator, offsets = f"block_sum_{k}_{block_size}", f"{weight.name}_block_offsets"
        if indicator not in added:
            added[indicator] = numpy_helper.from_array(block_indicator(k, block_size), indicator)
        added[offsets] = numpy_helper.from_array(block_offsets(q), offsets)
        sums, shift = f"{base}_Q4_block_sums", f"{base}_Q4_shift"
        nodes += [
            helper.make_node("MatMul", [node.input[0], indicator], [sums], name=sums),
            helper.make_node("MatMul", [sums, offsets], [shift], name=shift),
            helper.make_node("Add", [codes_out, shift], [node.output[0]], name=f"{base}_Q4_add"),
        ]
    read = {name for node in nodes for name in node.input}
    kept = [i for i in graph.initializer if i.name in read or i.name in graph_inputs]
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend([*kept, *added.values()])
    if not any(o.domain == MS_DOMAIN for o in out.opset_import):
        out.opset_import.append(helper.make_opsetid(MS_DOMAIN, 1))
    return out
