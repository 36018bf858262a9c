"""The Llama-architecture decoder configurations the zoo builds: their dimensions, by name."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final


@dataclass(frozen=True, kw_only=True)
class RopeScaling:
    """Llama 3.1's frequency-dependent RoPE scaling (its config.json's ``rope_scaling``)."""

    factor: float
    low_freq_factor: float
    high_freq_factor: float
    original_context: int


@dataclass(frozen=True, kw_only=True)
class LlamaDims:
    """The shape of a Llama-architecture decoder.

    Attributes:
        layers: Decoder blocks.
        hidden: Model width (embedding size).
        heads: Query heads.
        kv_heads: Key/value heads (grouped-query attention: ``heads`` is a multiple of it).
        ffn: SwiGLU inner width.
        vocab: Vocabulary size (embedding rows, logits).
        context: Longest sequence genai may generate (genai_config's context_length).
        rope_theta: RoPE base.
        rms_eps: RMSNorm epsilon.
        tied_embeddings: The LM head is the transposed token embedding.
        rope_scaling: Llama 3.1's scaling of the RoPE frequencies, or None.
    """

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    context: int
    rope_theta: float = 10_000.0
    rms_eps: float = 1e-5
    tied_embeddings: bool = False
    rope_scaling: RopeScaling | None = None

    def __post_init__(self) -> None:
        if min(self.layers, self.hidden, self.heads, self.kv_heads, self.ffn, self.vocab) < 1:
            raise ValueError(f"every dimension must be positive: {self}")
        if self.hidden % self.heads or self.heads % self.kv_heads:
            raise ValueError(f"hidden % heads and heads % kv_heads must be 0: {self}")
        if self.head_dim % 2:
            raise ValueError(f"RoPE needs an even head size, not {self.head_dim}")

    @property
    def head_dim(self) -> int:
        """Width of one attention head."""
        return self.hidden // self.heads

    @property
    def group(self) -> int:
        """Query heads per key/value head."""
        return self.heads // self.kv_heads

    @property
    def parameters(self) -> int:
        """Weight count (embedding once when tied)."""
        attn = self.hidden * self.head_dim * (2 * self.heads + 2 * self.kv_heads)
        per_layer = attn + 3 * self.hidden * self.ffn + 2 * self.hidden
        head = 0 if self.tied_embeddings else self.vocab * self.hidden
        return self.layers * per_layer + self.vocab * self.hidden + head + self.hidden


# The synthetic generator's configs: llm-tiny for tests (seconds), the real SmolLM2-135M's
# dims and Llama 3.1 8B's (Meta's config.json). llama3.1-8b is 32 GB of float32 weights
# (written as model.onnx.data): building it needs, by estimate, 40 GB of memory (not measured).
LLAMA_DIMS: Final[Mapping[str, LlamaDims]] = MappingProxyType(
    {
        "llm-tiny": LlamaDims(
            layers=2, hidden=64, heads=4, kv_heads=2, ffn=172, vocab=512, context=512
        ),
        "smollm2-135m": LlamaDims(
            layers=30,
            hidden=576,
            heads=9,
            kv_heads=3,
            ffn=1536,
            vocab=49_152,
            context=8192,
            rope_theta=100_000.0,
            tied_embeddings=True,
        ),
        "llama3.1-8b": LlamaDims(
            layers=32,
            hidden=4096,
            heads=32,
            kv_heads=8,
            ffn=14_336,
            vocab=128_256,
            context=131_072,
            rope_theta=500_000.0,
            rope_scaling=RopeScaling(
                factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_context=8192
            ),
        ),
    }
)
