"""A Llama decoder's weights as the graph builder takes them: numpy arrays, one layer at a time."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from harness.models.llm.dims import LlamaDims

Array = npt.NDArray[np.float32]


@dataclass(frozen=True, kw_only=True)
class LayerWeights:
    """One decoder block. Projections are (in, out), as ``x @ w`` multiplies them.

    q and k use the Hugging Face RoPE layout: the two halves of each head's width are
    rotated together (a GGUF file's interleaved layout is undone by its reader).
    """

    attn_norm: Array
    q: Array
    k: Array
    v: Array
    o: Array
    ffn_norm: Array
    gate: Array
    up: Array
    down: Array

    def check(self, dims: LlamaDims, index: int) -> None:
        """ValueError naming the tensor whose shape does not fit ``dims``."""
        kv_width = dims.kv_heads * dims.head_dim
        expected = {
            "attn_norm": (dims.hidden,),
            "q": (dims.hidden, dims.hidden),
            "k": (dims.hidden, kv_width),
            "v": (dims.hidden, kv_width),
            "o": (dims.hidden, dims.hidden),
            "ffn_norm": (dims.hidden,),
            "gate": (dims.hidden, dims.ffn),
            "up": (dims.hidden, dims.ffn),
            "down": (dims.ffn, dims.hidden),
        }
        for name, shape in expected.items():
            actual = getattr(self, name).shape
            if actual != shape:
                raise ValueError(f"layer {index} {name}: shape {actual}, expected {shape}")


class WeightSource(Protocol):
    """Where a decoder's weights come from (seeded synthetic, or a GGUF file)."""

    def embedding(self) -> Array:
        """The token embedding, (vocab, hidden)."""
        ...

    def layers(self) -> Iterator[LayerWeights]:
        """The decoder blocks in order, each made only when asked for (bounded memory)."""
        ...

    def final_norm(self) -> Array:
        """The last RMSNorm's weight, (hidden,)."""
        ...

    def lm_head(self) -> Array | None:
        """The output projection, (hidden, vocab); None when tied to the embedding."""
        ...

    def logit_bias(self) -> Array | None:
        """Added to the logits, (vocab,); None for none."""
        ...
