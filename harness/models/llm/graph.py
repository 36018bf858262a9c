"""The Llama decoder as an ONNX graph of plain ops, with the KV cache genai's decoder expects.

Inputs input_ids, attention_mask and position_ids (int64), past_key_values.N.key/value
(float32, batch x kv_heads x past x head_dim); outputs logits and present.N.key/value, the
past with this call's keys and values appended. The same graph with an empty past runs a
whole sequence, which is how tests recompute without the cache.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import TensorProto, helper

from harness.models.llm.dims import LlamaDims
from harness.models.llm.weights import Array, LayerWeights, WeightSource
from harness.models.zoo_graph import Graph, value_info

OPSET = 17  # every op here is in the default domain at opset 17: any execution provider runs it
MASKED_SCORE = -30_000.0  # below any real score, yet finite in fp16: a fully masked row is no NaN


def inverse_frequencies(dims: LlamaDims) -> Array:
    """RoPE's per-pair frequencies, with Llama 3.1's scaling where the config has it."""
    half = dims.head_dim // 2
    inv = 1.0 / dims.rope_theta ** (np.arange(half, dtype=np.float64) * 2 / dims.head_dim)
    scaling = dims.rope_scaling
    if scaling is not None:
        wavelen = 2 * math.pi / inv
        low_wavelen = scaling.original_context / scaling.low_freq_factor
        high_wavelen = scaling.original_context / scaling.high_freq_factor
        smooth = (scaling.original_context / wavelen - scaling.low_freq_factor) / (
            scaling.high_freq_factor - scaling.low_freq_factor
        )
        blended = (1 - smooth) * inv / scaling.factor + smooth * inv
        inv = np.where(wavelen > low_wavelen, inv / scaling.factor, inv)
        middle = (wavelen <= low_wavelen) & (wavelen >= high_wavelen)
        inv = np.where(middle, blended, inv)
    return inv.astype(np.float32)


class _Decoder:
    """Emits the nodes of one decoder into a Graph."""

    def __init__(self, g: Graph, dims: LlamaDims) -> None:
        self.g, self.dims = g, dims

    def i64(self, *values: int) -> str:
        return self.g.const(list(values), np.int64)

    def f32(self, value: float) -> str:
        return self.g.const(value, np.float32)

    def rms_norm(self, x: str, weight: Array, name: str) -> str:
        g = self.g
        mean_sq = g.op("ReduceMean", [g.op("Mul", [x, x])], axes=[-1], keepdims=1)
        inv_rms = g.op(
            "Reciprocal", [g.op("Sqrt", [g.op("Add", [mean_sq, self.f32(self.dims.rms_eps)])])]
        )
        return g.op("Mul", [g.op("Mul", [x, inv_rms]), g.init(name, weight)])

    def rope_tables(self) -> tuple[str, str]:
        """The cos and sin of position x frequency, (batch, 1, seq, head_dim)."""
        g = self.g
        inv = g.init("rope.inv_freq", inverse_frequencies(self.dims))
        pos = g.op(
            "Unsqueeze", [g.op("Cast", ["position_ids"], to=TensorProto.FLOAT), self.i64(-1)]
        )
        freqs = g.op("Mul", [pos, inv])
        angles = g.op("Unsqueeze", [g.op("Concat", [freqs, freqs], axis=-1), self.i64(1)])
        return g.op("Cos", [angles]), g.op("Sin", [angles])

    def attention_mask(self) -> str:
        """True where a query may see a key: causal, and the key is not padding."""
        g = self.g
        seq = g.op("Gather", [g.op("Shape", ["input_ids"]), self.i64(1)], axis=0)
        total = g.op("Gather", [g.op("Shape", ["attention_mask"]), self.i64(1)], axis=0)
        seq, total = g.op("Squeeze", [seq]), g.op("Squeeze", [total])
        past = g.op("Sub", [total, seq])
        keys = g.op("Unsqueeze", [g.op("Range", [self.i64(0), total, self.i64(1)]), self.i64(0)])
        queries = g.op("Unsqueeze", [g.op("Range", [past, total, self.i64(1)]), self.i64(1)])
        causal = g.op("LessOrEqual", [keys, queries])
        mask = g.op("Cast", ["attention_mask"], to=TensorProto.BOOL)
        padding = g.op("Unsqueeze", [mask, self.i64(1, 2, 3)])
        return g.op("And", [causal, padding])

    def rotate(self, x: str, cos: str, sin: str) -> str:
        g = self.g
        first, second = g.ops("Split", [x], 2, axis=-1)
        rotated = g.op("Concat", [g.op("Neg", [second]), first], axis=-1)
        return g.op("Add", [g.op("Mul", [x, cos]), g.op("Mul", [rotated, sin])])

    def heads(self, x: str, count: int) -> str:
        """(batch, seq, count * head_dim) -> (batch, count, seq, head_dim)."""
        shaped = self.g.op("Reshape", [x, self.i64(0, 0, count, self.dims.head_dim)])
        return self.g.op("Transpose", [shaped], perm=[0, 2, 1, 3])

    def attention(self, x: str, w: LayerWeights, i: int, tables: tuple[str, str, str]) -> str:
        g, d = self.g, self.dims
        cos, sin, allowed = tables
        q = self.rotate(self.heads(g.op("MatMul", [x, g.init(f"l{i}.q", w.q)]), d.heads), cos, sin)
        k = self.rotate(
            self.heads(g.op("MatMul", [x, g.init(f"l{i}.k", w.k)]), d.kv_heads), cos, sin
        )
        v = self.heads(g.op("MatMul", [x, g.init(f"l{i}.v", w.v)]), d.kv_heads)
        keys = g.op("Concat", [f"past_key_values.{i}.key", k], f"present.{i}.key", axis=2)
        values = g.op("Concat", [f"past_key_values.{i}.value", v], f"present.{i}.value", axis=2)
        # grouped-query attention: query heads grouped by the kv head they share
        q = g.op("Mul", [q, self.f32(1.0 / math.sqrt(d.head_dim))])
        q = g.op("Reshape", [q, self.i64(0, d.kv_heads, d.group, -1, d.head_dim)])
        keys_t = g.op("Transpose", [g.op("Unsqueeze", [keys, self.i64(2)])], perm=[0, 1, 2, 4, 3])
        scores = g.op("MatMul", [q, keys_t])
        scores = g.op("Where", [allowed, scores, self.f32(MASKED_SCORE)])
        probs = g.op("Softmax", [scores], axis=-1)
        ctx = g.op("MatMul", [probs, g.op("Unsqueeze", [values, self.i64(2)])])
        ctx = g.op("Reshape", [ctx, self.i64(0, d.heads, -1, d.head_dim)])
        ctx = g.op("Transpose", [ctx], perm=[0, 2, 1, 3])
        ctx = g.op("Reshape", [ctx, self.i64(0, 0, d.hidden)])
        return g.op("MatMul", [ctx, g.init(f"l{i}.o", w.o)])

    def mlp(self, x: str, w: LayerWeights, i: int) -> str:
        g = self.g
        gate = g.op("MatMul", [x, g.init(f"l{i}.gate", w.gate)])
        up = g.op("MatMul", [x, g.init(f"l{i}.up", w.up)])
        act = g.op("Mul", [g.op("Mul", [gate, g.op("Sigmoid", [gate])]), up])
        return g.op("MatMul", [act, g.init(f"l{i}.down", w.down)])

    def block(self, h: str, w: LayerWeights, i: int, tables: tuple[str, str, str]) -> str:
        g = self.g
        attn = self.attention(self.rms_norm(h, w.attn_norm, f"l{i}.attn_norm"), w, i, tables)
        h = g.op("Add", [h, attn])
        return g.op("Add", [h, self.mlp(self.rms_norm(h, w.ffn_norm, f"l{i}.ffn_norm"), w, i)])


def decoder_io(dims: LlamaDims) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    """The graph's inputs and outputs, named as genai_config.json names them."""
    batch, seq, total = "batch_size", "sequence_length", "total_sequence_length"
    ints = TensorProto.INT64
    inputs = [
        value_info("input_ids", ints, [batch, seq]),
        value_info("attention_mask", ints, [batch, total]),
        value_info("position_ids", ints, [batch, seq]),
    ]
    outputs = [value_info("logits", TensorProto.FLOAT, [batch, seq, dims.vocab])]
    for i in range(dims.layers):
        for kind in ("key", "value"):
            past: list[int | str] = [batch, dims.kv_heads, "past_sequence_length", dims.head_dim]
            inputs.append(value_info(f"past_key_values.{i}.{kind}", TensorProto.FLOAT, past))
            present: list[int | str] = [batch, dims.kv_heads, total, dims.head_dim]
            outputs.append(value_info(f"present.{i}.{kind}", TensorProto.FLOAT, present))
    return inputs, outputs


def build_decoder(dims: LlamaDims, source: WeightSource, *, doc: str) -> onnx.ModelProto:
    """The decoder over ``source``'s weights, layer by layer (one layer's arrays at a time)."""
    g = Graph(0)  # the graph's own randomness is unused: weights come from the source
    d = _Decoder(g, dims)
    embedding = source.embedding()
    if embedding.shape != (dims.vocab, dims.hidden):
        raise ValueError(
            f"embedding: shape {embedding.shape}, expected {(dims.vocab, dims.hidden)}"
        )
    table = g.init("embed_tokens", embedding)
    del embedding
    h = g.op("Gather", [table, "input_ids"], axis=0)
    cos, sin = d.rope_tables()
    tables = (cos, sin, d.attention_mask())
    count = 0
    for i, layer in enumerate(source.layers()):
        layer.check(dims, i)
        h = d.block(h, layer, i, tables)
        count += 1
    if count != dims.layers:
        raise ValueError(f"the weights hold {count} layers, the config {dims.layers}")
    h = d.rms_norm(h, source.final_norm(), "final_norm")
    head = source.lm_head()
    head_name = g.op("Transpose", [table], perm=[1, 0]) if head is None else g.init("lm_head", head)
    bias = source.logit_bias()
    if bias is None:
        g.op("MatMul", [h, head_name], "logits")
    else:
        g.op("Add", [g.op("MatMul", [h, head_name]), g.init("logit_bias", bias)], "logits")
    inputs, outputs = decoder_io(dims)
    graph = helper.make_graph(g.nodes, "llama_decoder", inputs, outputs, g.inits)
    return helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        ir_version=8,
        producer_name="beyond-tops",
        doc_string=doc,
    )
