"""Seeded synthetic weights for a Llama decoder: architecture-exact, trained on nothing.

Scaled so the output depends on the input: projections of variance 1/fan_in (each block's
output as large as its normalized input, so no layer drowns the others), and embeddings and
an LM head (tied or not) whose logits spread by about 4, so greedy decoding follows the
prompt instead of one token that wins everywhere. A logit bias keeps the special tokens and
the bytes that are not printable ASCII from ever winning: the continuation is text a person
can read (and compare), and it never ends early on an end-of-text token.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from harness.models.llm.dims import LlamaDims
from harness.models.llm.tokenizer import unprintable_ids
from harness.models.llm.weights import Array, LayerWeights

LOGIT_SPREAD = 4.0
SUPPRESSED_LOGIT = -1000.0


class SyntheticWeights:
    """A WeightSource drawing every tensor from one seeded generator, in a fixed order."""

    def __init__(self, dims: LlamaDims, seed: int) -> None:
        self.dims = dims
        self._rng = np.random.default_rng(seed)

    def _normal(self, shape: tuple[int, ...], std: float) -> Array:
        return self._rng.standard_normal(shape, dtype=np.float32) * np.float32(std)

    def _linear(self, fan_in: int, fan_out: int) -> Array:
        return self._normal((fan_in, fan_out), 1.0 / np.sqrt(fan_in))

    def _norm(self) -> Array:
        return self._rng.uniform(0.8, 1.2, self.dims.hidden).astype(np.float32)

    def embedding(self) -> Array:
        """Rows of norm about LOGIT_SPREAD, (vocab, hidden).

        Small beside the blocks' outputs (each of norm about sqrt(hidden)): a tied LM head
        would otherwise find each token's own embedding in the residual stream and repeat it.
        """
        return self._normal(
            (self.dims.vocab, self.dims.hidden), LOGIT_SPREAD / np.sqrt(self.dims.hidden)
        )

    def layers(self) -> Iterator[LayerWeights]:
        """Each block drawn when asked for."""
        d = self.dims
        kv_width = d.kv_heads * d.head_dim
        for _ in range(d.layers):
            yield LayerWeights(
                attn_norm=self._norm(),
                q=self._linear(d.hidden, d.hidden),
                k=self._linear(d.hidden, kv_width),
                v=self._linear(d.hidden, kv_width),
                o=self._linear(d.hidden, d.hidden),
                ffn_norm=self._norm(),
                gate=self._linear(d.hidden, d.ffn),
                up=self._linear(d.hidden, d.ffn),
                down=self._linear(d.ffn, d.hidden),
            )

    def final_norm(self) -> Array:
        """Near-unit gains."""
        return self._norm()

    def lm_head(self) -> Array | None:
        """Logits of standard deviation about LOGIT_SPREAD; None when tied."""
        if self.dims.tied_embeddings:
            return None
        return self._normal(
            (self.dims.hidden, self.dims.vocab), LOGIT_SPREAD / np.sqrt(self.dims.hidden)
        )

    def logit_bias(self) -> Array:
        """SUPPRESSED_LOGIT on the synthetic tokenizer's specials and unprintable bytes."""
        bias = np.zeros(self.dims.vocab, dtype=np.float32)
        bias[list(unprintable_ids())] = SUPPRESSED_LOGIT
        return bias
