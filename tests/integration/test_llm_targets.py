"""Which target runs a generative model: genai's CPU build, its CUDA build on --hw nvidia.

llama3.1-8b's dims (32 GB of float32 weights) are refused on the CPU before anything is built,
so no test or CI run here ever builds them. The CUDA provider is asked of genai for real: the
CPU wheel installed here answers that it has no CUDA library, which shows it was asked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import RunError
from harness.models.llm.store import generative_model_dir
from harness.runtime.genai import GENAI_PROVIDERS, GenaiModel
from tests.conftest import write_scenario

pytest.importorskip("onnxruntime_genai", reason="onnxruntime-genai is not installed (llm extra)")

SCENARIO = """
name: llm-8b-dims
scenario: Offline
model: {zoo: llama3.1-8b}
trials: 1
generation:
  input_tokens: {min: 8, max: 16}
  output_tokens: {min: 8, max: 16}
  hold_eos: true
data: {total_sample_count: 8}
"""


def test_llama3_8b_dims_are_refused_on_the_cpu_before_anything_is_built(
    tmp_path: Path, model_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = set(model_cache.iterdir())
    path = write_scenario(tmp_path / "s.yaml", SCENARIO)
    code = main(["run", str(path), "--out", str(tmp_path / "runs"), "--hw", "cpu"])
    assert code != 0
    err = capsys.readouterr().err
    assert "error:" in err and "llama3.1-8b" in err and "--hw nvidia" in err
    assert set(model_cache.iterdir()) == before, "nothing may be built or cached"
    assert not [p for p in model_cache.iterdir() if p.name.startswith(("llama3.1-8b", ".llama"))]


def test_nvidia_asks_genai_for_cuda() -> None:
    assert GENAI_PROVIDERS["nvidia"] == ("cuda", "CUDAExecutionProvider")
    assert "rocm" not in GENAI_PROVIDERS  # no genai build for MIGraphX on PyPI
    tiny = generative_model_dir("llm-tiny")
    assert GenaiModel(tiny).provider == "cpu"
    import onnxruntime_genai as og

    if og.is_cuda_available():
        pytest.skip("this genai build has CUDA: the GPU check (scripts/gpu-local-check.sh) runs it")
    with pytest.raises(RunError, match=r"[Cc]uda"):
        GenaiModel(tiny, provider="cuda")
