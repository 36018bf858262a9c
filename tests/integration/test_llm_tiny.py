"""llm-tiny under onnxruntime-genai: the KV cache changes nothing, and the prompt matters."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from llm_support import decode, encode, genai_greedy, genai_greedy_batch, recompute_greedy

from harness.models.llm import store
from harness.models.llm.store import generative_model_dir

PROMPTS = (
    "The benchmark measures what a machine really does.",
    "Numbers 2026 and 31337, then a question: why?",
    "<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n",
)
NEW_TOKENS = 24


@pytest.fixture(scope="module")
def tiny(model_cache: Path) -> Path:
    return generative_model_dir("llm-tiny", root=model_cache)


@pytest.mark.parametrize("prompt", PROMPTS)
def test_generation_with_the_kv_cache_equals_recomputing_without_it(
    tiny: Path, prompt: str
) -> None:
    ids = encode(tiny, prompt)
    cached, cached_logits = genai_greedy(tiny, ids, NEW_TOKENS)
    recomputed, recomputed_logits = recompute_greedy(tiny, ids, NEW_TOKENS)
    assert cached == recomputed
    assert len(cached) == NEW_TOKENS
    for step, (a, b) in enumerate(zip(cached_logits, recomputed_logits, strict=True)):
        np.testing.assert_allclose(a, b, atol=1e-3, rtol=1e-4, err_msg=f"step {step}")


def test_different_prompts_give_different_continuations(tiny: Path) -> None:
    continuations = [tuple(genai_greedy(tiny, encode(tiny, p), NEW_TOKENS)[0]) for p in PROMPTS]
    assert len(set(continuations)) == len(PROMPTS)
    # and the same prompt, the same continuation
    assert tuple(genai_greedy(tiny, encode(tiny, PROMPTS[0]), NEW_TOKENS)[0]) == continuations[0]


def test_a_continuation_is_printable_text_with_no_early_end(tiny: Path) -> None:
    tokens, _ = genai_greedy(tiny, encode(tiny, PROMPTS[0]), NEW_TOKENS)
    text = decode(tiny, tokens)
    assert text.isascii() and text.isprintable() and len(text) >= NEW_TOKENS


@pytest.mark.parametrize("text", [*PROMPTS[:2], "tabs\tand unicode: caf\u00e9 \u2603"])
def test_the_tokenizer_round_trips_through_genai(tiny: Path, text: str) -> None:
    ids = encode(tiny, text)
    assert decode(tiny, ids) == text
    assert max(ids) < 512


def test_decoding_leaves_the_special_tokens_out(tiny: Path) -> None:
    assert decode(tiny, encode(tiny, PROMPTS[2])) == "user\nhello\nassistant\n"


def test_the_special_tokens_are_single_ids(tiny: Path) -> None:
    assert encode(tiny, "<|im_start|>") == [1]
    assert encode(tiny, "a<|im_end|>b")[1] == 2


def test_a_padded_batch_continues_each_prompt_as_it_would_alone(tiny: Path) -> None:
    prompts = [PROMPTS[0], "Hi", PROMPTS[1]]  # lengths differ: the shorter ones are padded
    alone = [genai_greedy(tiny, encode(tiny, p), NEW_TOKENS)[0] for p in prompts]
    assert genai_greedy_batch(tiny, prompts, NEW_TOKENS) == alone


def test_weights_in_an_external_data_file_load_and_generate_the_same(
    tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The layout a decoder over protobuf's 2 GiB (llama3.1-8b) is written in."""
    monkeypatch.setattr(store, "INLINE_LIMIT_BYTES", 0)
    external = generative_model_dir("llm-tiny", root=tmp_path)
    assert (external / store.EXTERNAL_DATA_FILE).stat().st_size > (
        external / "model.onnx"
    ).stat().st_size
    ids = encode(tiny, PROMPTS[0])
    assert genai_greedy(external, ids, NEW_TOKENS)[0] == genai_greedy(tiny, ids, NEW_TOKENS)[0]
