"""The generative zoo's configs, tokenizer and cache, without running genai."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from harness.errors import ModelError
from harness.models.llm import store
from harness.models.llm.dims import LLAMA_DIMS, LlamaDims
from harness.models.llm.genai_config import genai_config
from harness.models.llm.gguf_source import unpermute_rope_rows
from harness.models.llm.graph import build_decoder, inverse_frequencies
from harness.models.llm.synthetic import SyntheticWeights
from harness.models.llm.tokenizer import byte_alphabet, synthetic_tokenizer, unprintable_ids


def test_the_configs_have_the_published_parameter_counts() -> None:
    # SmolLM2-135M's model card: 134,515,008; Llama 3.1 8B (config.json dims): 8,030,261,248
    assert LLAMA_DIMS["smollm2-135m"].parameters == 134_515_008
    assert LLAMA_DIMS["llama3.1-8b"].parameters == 8_030_261_248
    assert LLAMA_DIMS["llama3.1-8b"].group == 4
    assert LLAMA_DIMS["smollm2-135m"].head_dim == 64


@pytest.mark.parametrize(
    ("hidden", "heads", "kv_heads"), [(60, 8, 2), (64, 4, 3), (54, 6, 3), (0, 4, 2)]
)
def test_dims_that_do_not_divide_are_refused(hidden: int, heads: int, kv_heads: int) -> None:
    with pytest.raises(ValueError, match=r"must be|even head size|positive"):
        LlamaDims(
            layers=1, hidden=hidden, heads=heads, kv_heads=kv_heads, ffn=8, vocab=300, context=8
        )


def test_llama31_rope_scaling_slows_only_the_low_frequencies() -> None:
    scaled = inverse_frequencies(LLAMA_DIMS["llama3.1-8b"])
    plain = inverse_frequencies(
        LlamaDims(**{**vars(LLAMA_DIMS["llama3.1-8b"]), "rope_scaling": None})
    )
    assert scaled[0] == plain[0]  # wavelength 2*pi, far below 8192/4: unchanged
    assert scaled[-1] == pytest.approx(plain[-1] / 8)  # the longest wavelengths: divided by 8
    assert np.all(scaled <= plain)


def llama_cpp_permute(weight: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's converter, as its source describes it: halves interleaved per head."""
    out, width = weight.shape
    return weight.reshape(heads, 2, out // heads // 2, width).swapaxes(1, 2).reshape(out, width)


@pytest.mark.parametrize("heads", [1, 3, 9])
def test_the_gguf_rope_permutation_is_undone(heads: int) -> None:
    weight = np.random.default_rng(0).standard_normal((heads * 8, 5)).astype(np.float32)
    permuted = llama_cpp_permute(weight, heads)
    assert not np.array_equal(permuted, weight)
    np.testing.assert_array_equal(unpermute_rope_rows(permuted, heads), weight)


def test_the_synthetic_tokenizer_is_exactly_the_vocabulary_and_a_valid_bpe() -> None:
    tok = synthetic_tokenizer(512, seed=0)
    assert len(tok.tokens) == 512 and len(set(tok.tokens)) == 512
    known = set(tok.tokens)
    for rank, merge in enumerate(tok.merges):
        left, right = merge.split(" ")
        assert {left, right, left + right} <= known, rank
    assert len(set(byte_alphabet())) == 256 and byte_alphabet()[ord(" ")] == "Ġ"
    document = json.loads(tok.tokenizer_json())
    assert document["model"]["vocab"]["Ġ"] == 3 + ord(" ")
    assert [t["content"] for t in document["added_tokens"]] == list(tok.tokens[:3])
    assert json.loads(tok.tokenizer_config_json())["tokenizer_class"] == "GPT2Tokenizer"
    assert synthetic_tokenizer(512, seed=0) == tok
    assert synthetic_tokenizer(512, seed=1).merges != tok.merges


def test_the_synthetic_logit_bias_never_lets_specials_or_unprintable_bytes_win() -> None:
    dims = LLAMA_DIMS["llm-tiny"]
    bias = SyntheticWeights(dims, 0).logit_bias()
    tokens = synthetic_tokenizer(dims.vocab, 0).tokens
    suppressed = {tokens[i] for i in unprintable_ids()}
    assert "<|im_end|>" in suppressed and byte_alphabet()[0x80] in suppressed
    assert "a" not in suppressed and byte_alphabet()[ord(" ")] not in suppressed
    assert bias[unprintable_ids()].max() < -100 and np.count_nonzero(bias) == len(unprintable_ids())


def test_the_tiny_decoder_is_a_valid_graph_with_genais_names() -> None:
    dims = LLAMA_DIMS["llm-tiny"]
    model = build_decoder(dims, SyntheticWeights(dims, 0), doc="test")
    onnx.checker.check_model(model, full_check=True)
    inputs = [i.name for i in model.graph.input]
    outputs = [o.name for o in model.graph.output]
    assert inputs[:3] == ["input_ids", "attention_mask", "position_ids"]
    assert "past_key_values.1.value" in inputs and "present.1.value" in outputs
    assert outputs[0] == "logits"
    assert {op.domain for op in model.opset_import} == {""}  # plain ops only


def test_a_weight_of_the_wrong_shape_is_named() -> None:
    dims = LLAMA_DIMS["llm-tiny"]
    wrong = LlamaDims(**{**vars(dims), "ffn": dims.ffn + 1})
    with pytest.raises(ValueError, match="layer 0 gate: shape"):
        build_decoder(dims, SyntheticWeights(wrong, 0), doc="test")


def test_the_cache_keeps_one_directory_per_content_and_rebuilds_an_altered_file(
    tmp_path: Path,
) -> None:
    first = store.generative_model_dir("llm-tiny", root=tmp_path)
    assert sorted(p.name for p in first.iterdir()) == [
        "genai_config.json",
        "model.onnx",
        "tokenizer.json",
        "tokenizer_config.json",
    ]
    assert store.generative_model_dir("llm-tiny", root=tmp_path) == first
    original = (first / "model.onnx").read_bytes()
    (first / "model.onnx").write_bytes(original[:-1] + bytes([original[-1] ^ 1]))
    again = store.generative_model_dir("llm-tiny", root=tmp_path)
    assert (again / "model.onnx").read_bytes() == original
    other = store.generative_model_dir("llm-tiny", seed=1, root=tmp_path)
    assert other != again and (other / "model.onnx").read_bytes() != original


def test_a_build_that_does_not_match_its_pinned_hash_is_refused_and_not_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = store.GENERATIVE["llm-tiny"]
    pinned = store.GenerativeModel(**{**vars(entry), "onnx_sha256": "0" * 64})
    monkeypatch.setattr(store, "GENERATIVE", {"llm-tiny": pinned})
    with pytest.raises(ModelError, match="not the pinned 0000"):
        store.generative_model_dir("llm-tiny", root=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_generative_model_is_named_with_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(
        ModelError, match=r"unknown generative model 'llm-huge' \(known: llama3.1-8b"
    ):
        store.generative_model_dir("llm-huge", root=tmp_path)


def test_only_a_decoder_over_protobufs_limit_is_written_with_external_data() -> None:
    assert LLAMA_DIMS["llama3.1-8b"].parameters * 4 > store.INLINE_LIMIT_BYTES
    assert LLAMA_DIMS["smollm2-135m"].parameters * 4 < store.INLINE_LIMIT_BYTES


def test_the_genai_config_names_the_graphs_inputs_and_dims() -> None:
    dims = LLAMA_DIMS["llama3.1-8b"]
    config = json.loads(genai_config(dims, bos_id=128_000, eos_id=128_009, pad_id=128_009))
    decoder = config["model"]["decoder"]
    assert (decoder["head_size"], decoder["num_key_value_heads"], decoder["num_hidden_layers"]) == (
        128,
        8,
        32,
    )
    assert decoder["inputs"]["past_key_names"] == "past_key_values.%d.key"
    assert decoder["outputs"]["present_value_names"] == "present.%d.value"
    assert config["model"]["vocab_size"] == 128_256 and config["model"]["type"] == "llama"
    assert config["search"]["past_present_share_buffer"] is False  # the graph Concats its past


def test_models_list_and_build_know_the_generative_models() -> None:
    harness = [sys.executable, "-m", "harness", "models"]
    listed = subprocess.run([*harness, "list"], capture_output=True, text=True, check=True).stdout
    assert re.search(r"^smollm2-135m-instruct +from wheel +SmolLM2-135M-Instruct", listed, re.M)
    assert re.search(r"^llama3\.1-8b +generated +Llama decoder", listed, re.M)
    built = subprocess.run(
        [*harness, "build", "llm-tiny"], capture_output=True, text=True, check=True
    ).stdout
    directory = Path(built.split()[1])
    assert (directory / "genai_config.json").is_file() and (directory / "model.onnx").is_file()
