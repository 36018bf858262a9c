"""A generative scenario's samples: one prompt (token ids) and an output budget per sample.

Synthetic prompts are seeded token ids of a stated length distribution (uniform between
``input_tokens.min`` and ``.max``), meaning nothing; text prompts are the repo's real ones
(harness.datasets.prompt_texts) in the chat format, through the model's own tokenizer (passed
in: only harness.runtime loads it). Each sample's budget of new tokens is drawn uniformly
from ``output_tokens``. Everything follows from the seed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from harness.datasets.prompt_texts import CHATML, TEXTS
from harness.generation import GenerationConfig

# Synthetic ids start above the specials the zoo's decoders reserve (bos 1, eos 2, pad 0).
FIRST_ORDINARY_ID = 3


@dataclass(frozen=True)
class Prompts:
    """Per sample: its prompt's token ids (int32) and its budget of new tokens."""

    ids: tuple[np.ndarray, ...]
    budgets: tuple[int, ...]
    description: str

    @property
    def count(self) -> int:
        """Samples held."""
        return len(self.ids)


def _budgets(config: GenerationConfig, count: int, rng: np.random.Generator) -> tuple[int, ...]:
    out = config.output_tokens
    return tuple(int(b) for b in rng.integers(out.min, out.max + 1, size=count))


def synthetic_prompts(config: GenerationConfig, *, vocab: int, count: int, seed: int) -> Prompts:
    """``count`` seeded prompts of token ids below ``vocab``, lengths as the config states."""
    rng = np.random.default_rng(seed)
    span = config.input_tokens
    lengths = rng.integers(span.min, span.max + 1, size=count)
    ids = tuple(
        rng.integers(FIRST_ORDINARY_ID, vocab, size=int(n)).astype(np.int32) for n in lengths
    )
    described = (
        f"synthetic: {count} seeded prompts (seed {seed}) of {span.min}-{span.max} tokens, "
        f"{config.output_tokens.min}-{config.output_tokens.max} new tokens each"
    )
    return Prompts(ids=ids, budgets=_budgets(config, count, rng), description=described)


def text_prompts(
    config: GenerationConfig, *, encode: Callable[[str], np.ndarray], count: int, seed: int
) -> Prompts:
    """``count`` samples cycling through the real prompts in the chat format, tokenized."""
    rng = np.random.default_rng(seed)
    encoded = [np.ascontiguousarray(encode(CHATML.format(text=t)), dtype=np.int32) for t in TEXTS]
    ids = tuple(encoded[i % len(encoded)] for i in range(count))
    lengths = sorted(len(e) for e in encoded)
    described = (
        f"text: {len(TEXTS)} real English prompts in the chat format ({lengths[0]}-"
        f"{lengths[-1]} tokens), cycled to {count} samples; {config.output_tokens.min}-"
        f"{config.output_tokens.max} new tokens each (seed {seed})"
    )
    return Prompts(ids=ids, budgets=_budgets(config, count, rng), description=described)
