"""llm-tiny at FP16 and INT4 under onnxruntime-genai, scored against FP32's greedy tokens.

Real conversions (onnxruntime's float16 converter, its MatMulNBits quantizer), real genai
generations, real `harness run`s. The gate's cheat: a variant whose weights were scrambled
after conversion; its tokens stop agreeing with FP32's and the verdict fails, where the
honest FP16 variant agrees on every position.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from harness.analysis.genaccuracy import REFERENCE_ITSELF, generative_accuracy, token_agreement
from harness.cli import main
from harness.models.llm.variants import generative_variant
from harness.results.runfile import SCHEMA_VERSION
from harness.runtime.genai import GenaiModel
from tests.conftest import write_scenario

pytest.importorskip("onnxruntime_genai", reason="onnxruntime-genai is not installed (llm extra)")
pytest.importorskip("onnx_ir", reason="onnx-ir is not installed (llm extra: INT4)")
pytestmark = pytest.mark.slow

SCENARIO = """
name: llm-tiny-precision
scenario: Offline
model: {zoo: llm-tiny}
trials: 1
generation:
  input_tokens: {min: 8, max: 24}
  output_tokens: {min: 8, max: 16}
  hold_eos: true
data: {total_sample_count: 16}
warmup: {min_queries: 2, min_duration_ms: 0}
quick: {min_duration_ms: 500, min_query_count: 16, performance_sample_count: 16}
"""


def _greedy(model: GenaiModel, prompts: list[np.ndarray], new: int = 16) -> list[list[int]]:
    out = []
    for prompt in prompts:
        sequence = model.start(prompt, max_new_tokens=new, min_new_tokens=new)
        sequence.step()
        while not sequence.done:
            sequence.step()
        out.append(list(sequence.tokens))
    return out


def _prompts(vocab: int) -> list[np.ndarray]:
    rng = np.random.default_rng(11)
    return [rng.integers(3, vocab, size=12).astype(np.int32) for _ in range(6)]


def _scrambled(directory: Path, into: Path) -> Path:
    """The variant with every MatMul weight's rows permuted: the same values, wrong places."""
    shutil.copytree(directory, into)
    model = onnx.load(str(into / "model.onnx"))
    rng = np.random.default_rng(5)
    for init in model.graph.initializer:
        array = numpy_helper.to_array(init)
        if array.ndim == 2 and min(array.shape) > 1:
            init.CopyFrom(numpy_helper.from_array(array[rng.permutation(len(array))], init.name))
    onnx.save(model, str(into / "model.onnx"))
    return into


def test_fp16_agrees_and_a_scrambled_fp16_fails(tmp_path: Path) -> None:
    honest = generative_variant("llm-tiny", "fp16", root=tmp_path / "cache")
    assert honest.converted.recipe.method == "float16"
    reference = GenaiModel(honest.reference)
    prompts = _prompts(
        int(json.loads((honest.reference / "genai_config.json").read_text())["model"]["vocab_size"])
    )
    fp32 = _greedy(reference, prompts)
    good = generative_accuracy(
        token_agreement(_greedy(GenaiModel(honest.directory), prompts), fp32)
    )
    assert good.passed and good.tokens is not None
    cheat_dir = _scrambled(honest.directory, tmp_path / "scrambled")
    cheat = token_agreement(_greedy(GenaiModel(cheat_dir), prompts), fp32)
    assert cheat.agreement < 0.5 < good.tokens.agreement
    assert not generative_accuracy(cheat).passed


def test_int4_is_matmulnbits_and_cached_by_content(tmp_path: Path) -> None:
    first = generative_variant("llm-tiny", "int4", root=tmp_path)
    graph = onnx.load(str(first.directory / "model.onnx")).graph
    weights = {i.name for i in graph.initializer}
    assert any(n.op_type == "MatMulNBits" for n in graph.node)
    # every MatMul left multiplies activations (attention), none a weight
    assert not [n.name for n in graph.node if n.op_type == "MatMul" and n.input[1] in weights]
    assert first.converted.recipe.params == {"block_size": 32, "symmetric": False}
    again = generative_variant("llm-tiny", "int4", root=tmp_path)
    assert again.directory == first.directory
    (first.directory / "model.onnx").write_bytes(b"altered")  # an altered file is rebuilt
    rebuilt = generative_variant("llm-tiny", "int4", root=tmp_path)
    assert onnx.load(str(rebuilt.directory / "model.onnx")).graph.node


def _run(tmp: Path, precision: str) -> dict[str, Any]:
    path = write_scenario(tmp / "s.yaml", SCENARIO)
    code = main(["run", str(path), "--out", str(tmp / "runs"), "--precision", precision])
    assert code == 0
    (result,) = (tmp / "runs").rglob("result.json")
    data: dict[str, Any] = json.loads(result.read_text())
    return data


@pytest.mark.parametrize("precision", ["fp32", "fp16", "int4"])
def test_harness_run_scores_generation_against_fp32(tmp_path: Path, precision: str) -> None:
    result = _run(tmp_path, precision)
    assert result["schema_version"] == SCHEMA_VERSION
    assert result["model"]["precision"] == precision
    assert result["precision"]["precision"] == precision
    accuracy = result["accuracy"]
    if precision == "fp32":
        assert accuracy["not_measurable"] == REFERENCE_ITSELF and accuracy["tokens"] is None
        return
    tokens = accuracy["tokens"]
    assert tokens["prompts"] == 16 and len(tokens["first_divergence"]) == 16
    assert 0.0 <= tokens["agreement"] <= 1.0 and 0.0 <= tokens["rouge_l"] <= 1.0
    assert accuracy["passed"] == (tokens["agreement"] >= tokens["threshold"])
    method = {"fp16": "float16", "int4": "matmul_nbits"}[precision]
    assert result["precision"]["recipe"]["method"] == method
    if precision == "fp16":
        assert accuracy["passed"]  # llm-tiny's FP16 agreed on 0.95 to 1.0 of positions
