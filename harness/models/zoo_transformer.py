"""The zoo's transformer generator: BERT-base with a SQuAD span head, as MLPerf's."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import onnx
from onnx import TensorProto

from harness.models.zoo_graph import GENERATOR_VERSIONS, Graph, value_info


def _dense(g: Graph, x: str, name: str, n_in: int, n_out: int) -> str:
    """MatMul + bias Add with BERT's N(0, 0.02) weights and zero bias."""
    w = g.normal(f"{name}.weight", (n_in, n_out), 0.02)
    return g.op(
        "Add", [g.op("MatMul", [x, w]), g.init(f"{name}.bias", np.zeros(n_out, np.float32))]
    )


def _layer_norm(g: Graph, x: str, name: str, hidden: int) -> str:
    gamma = g.init(f"{name}.weight", np.ones(hidden, np.float32))
    beta = g.init(f"{name}.bias", np.zeros(hidden, np.float32))
    return g.op("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=1e-12)


def _gelu(g: Graph, x: str) -> str:
    """Exact GELU, 0.5 * x * (1 + erf(x / sqrt(2))), from standard opset-17 ops."""
    erf = g.op("Erf", [g.op("Mul", [x, g.const(1.0 / math.sqrt(2.0), np.float32)])])
    inner = g.op("Mul", [x, g.op("Add", [erf, g.const(1.0, np.float32)])])
    return g.op("Mul", [inner, g.const(0.5, np.float32)])


def _split_heads(g: Graph, x: str, heads: int, head_dim: int, perm: Sequence[int]) -> str:
    """Reshapes [B, S, H] to [B, S, heads, head_dim] and transposes by ``perm``."""
    shaped = g.op("Reshape", [x, g.const([0, 0, heads, head_dim], np.int64)])
    return g.op("Transpose", [shaped], perm=list(perm))


def _bert_layer(
    g: Graph, x: str, mask: str, name: str, hidden: int, heads: int, intermediate: int
) -> str:
    """One post-LN transformer encoder layer (self-attention, then GELU feed-forward)."""
    head_dim = hidden // heads
    q, k, v = (  # q, v: [B, heads, S, head_dim]; k: [B, heads, head_dim, S]
        _split_heads(g, _dense(g, x, f"{name}.attention.{p}", hidden, hidden), heads, head_dim, t)
        for p, t in (("query", (0, 2, 1, 3)), ("key", (0, 2, 3, 1)), ("value", (0, 2, 1, 3)))
    )
    scores = g.op("Mul", [g.op("MatMul", [q, k]), g.const(1.0 / math.sqrt(head_dim), np.float32)])
    probs = g.op("Softmax", [g.op("Add", [scores, mask])], axis=-1)
    ctx = g.op("Transpose", [g.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
    ctx = g.op("Reshape", [ctx, g.const([0, 0, hidden], np.int64)])
    attn = _dense(g, ctx, f"{name}.attention.output", hidden, hidden)
    x = _layer_norm(g, g.op("Add", [attn, x]), f"{name}.attention.LayerNorm", hidden)
    ffn = _gelu(g, _dense(g, x, f"{name}.intermediate", hidden, intermediate))
    ffn = _dense(g, ffn, f"{name}.output", intermediate, hidden)
    return _layer_norm(g, g.op("Add", [ffn, x]), f"{name}.output.LayerNorm", hidden)


def _bert_embeddings(g: Graph, hidden: int, vocab_size: int, max_positions: int) -> str:
    """Word + position (sliced to the runtime seq_len) + token-type embeddings, LayerNorm."""
    word = g.normal("embeddings.word_embeddings.weight", (vocab_size, hidden), 0.02)
    pos = g.normal("embeddings.position_embeddings.weight", (max_positions, hidden), 0.02)
    types = g.normal("embeddings.token_type_embeddings.weight", (2, hidden), 0.02)
    seq_len = g.op("Shape", ["input_ids"], start=1, end=2)
    zero = g.const([0], np.int64)
    positions = g.op("Slice", [pos, zero, seq_len, zero])
    x = g.op("Add", [g.op("Gather", [word, "input_ids"]), positions])
    x = g.op("Add", [x, g.op("Gather", [types, "token_type_ids"])])
    return _layer_norm(g, x, "embeddings.LayerNorm", hidden)


def build_bert_base(
    seed: int = 0,
    *,
    num_layers: int = 12,
    hidden: int = 768,
    num_heads: int = 12,
    intermediate: int = 3072,
    vocab_size: int = 30522,
    max_positions: int = 512,
) -> onnx.ModelProto:
    """Builds a BERT encoder with a SQuAD span head, as the MLPerf BERT model.

    Args:
        seed: Seed for the synthetic weights.
        num_layers: Number of encoder layers.
        hidden: Hidden size.
        num_heads: Attention heads; must divide ``hidden``.
        intermediate: Feed-forward inner size.
        vocab_size: Word-piece vocabulary size.
        max_positions: Longest supported sequence (rows of the position table).

    Returns:
        The model: int64 ``input_ids``, ``attention_mask``, ``token_type_ids`` [batch, seq_len]
        -> float32 ``output_start_logits`` and ``output_end_logits`` [batch, seq_len].

    Raises:
        ValueError: If ``num_heads`` does not divide ``hidden``.
    """
    if num_heads <= 0 or hidden % num_heads:
        raise ValueError(f"num_heads={num_heads} must divide hidden={hidden}")
    g = Graph(seed)
    x = _bert_embeddings(g, hidden, vocab_size, max_positions)
    keep = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    mask = g.op(
        "Mul", [g.op("Sub", [g.const(1.0, np.float32), keep]), g.const(-10000.0, np.float32)]
    )
    mask = g.op("Unsqueeze", [mask, g.const([1, 2], np.int64)])  # [batch, 1, 1, seq_len]
    for i in range(num_layers):
        x = _bert_layer(g, x, mask, f"encoder.layer.{i}", hidden, num_heads, intermediate)
    logits = _dense(g, x, "qa_outputs", hidden, 2)
    halves = g.ops("Split", [logits], 2, axis=-1)
    last = g.const([-1], np.int64)
    for half, out in zip(halves, ("output_start_logits", "output_end_logits"), strict=True):
        g.op("Squeeze", [half, last], out=out)
    seq_dims = ["batch", "seq_len"]
    return g.model(
        "bert_base",
        seed,
        GENERATOR_VERSIONS["bert_base"],
        [
            value_info(n, TensorProto.INT64, seq_dims)
            for n in ("input_ids", "attention_mask", "token_type_ids")
        ],
        [
            value_info(n, TensorProto.FLOAT, seq_dims)
            for n in ("output_start_logits", "output_end_logits")
        ],
    )
