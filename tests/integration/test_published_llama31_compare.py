"""Issue #27: a real llm-tiny run under MLPerf's llama3.1-8b key beside a published llama3.1-8b.

The run sets ``model.loadgen_name: llama3_1-8b`` (LoadGen reads mlperf.conf's llama3.1-8b
settings, as the export does); the published record is Inventec's v5.1 llama3.1-8b Offline
(tests/fixtures/published-llm). `harness compare` pairs them by LoadGen's model key and judges
them by MLPerf's LLM metric, tokens/s. The fixture holds no llama3.1-8b Server result, so the
pair is Offline: LoadGen measures neither TTFT nor TPOT there, and compare shows no such rows.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import INVALID
from harness.published.importer import import_mlperf
from tests.conftest import write_scenario
from tests.unit.test_published_import import fixed_now
from tests.unit.test_published_llama31 import LLAMA31, SYSTEM
from tests.unit.test_published_llm import LLAMA2, RUN

pytest.importorskip("onnxruntime_genai", reason="onnxruntime-genai is not installed (llm extra)")
pytestmark = pytest.mark.slow
SCENARIO = """
name: llm-tiny-as-llama3-8b-offline
scenario: Offline
model: {zoo: llm-tiny, loadgen_name: llama3_1-8b}
trials: 1
generation:
  input_tokens: {min: 8, max: 24}
  output_tokens: {min: 4, max: 12}
  hold_eos: true
data: {seed: 0, total_sample_count: 16}
warmup: {min_queries: 4, min_duration_ms: 0}
quick: {min_duration_ms: 1000, min_query_count: 16, performance_sample_count: 16}
"""
LABEL = f"published: Inventec {SYSTEM} (v5.1, closed)"
HEADLINE = "token throughput (tokens/s)"


def test_a_local_llama31_shaped_run_sits_beside_the_published_llama31(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = write_scenario(tmp_path / "llama.yaml", SCENARIO)
    assert main(["run", str(scenario), "--out", str(tmp_path / "runs")]) in (0, INVALID.code)
    (run,) = [p.parent for p in (tmp_path / "runs").rglob("result.json")]
    offline = LLAMA31 / "Offline" / RUN
    (published,) = import_mlperf(offline, tmp_path / "imports", now=fixed_now).written
    (llama2,) = import_mlperf(LLAMA2 / "Offline" / RUN, tmp_path / "l2", now=fixed_now).written
    capsys.readouterr()

    assert main(["compare", str(run), str(published), "--out", str(tmp_path / "cmp")]) == 0
    out = capsys.readouterr().out
    assert "Verdict: COMPARABLE: same model and scenario" in out
    assert LABEL in out and "model llama3_1-8b (precision not stated)" in out
    assert "benchmark (LoadGen model key)" not in out  # one key: llama3_1-8b on both sides
    (row,) = [line for line in out.splitlines() if line.startswith(HEADLINE)]
    cells = row.split()
    local, logged = float(cells[3].replace(",", "")), cells[4]
    assert logged == "142,508.0"  # the published log's tokens/s, side by side with the run's
    assert 0 < local < 142508.0
    assert f"on {HEADLINE} (higher is better" in out
    assert "TTFT" not in row and "samples/s" not in row
    assert LABEL in (tmp_path / "cmp" / "compare.md").read_text(encoding="utf-8")

    # another model's published record stays apart: the key is what pairs them, not the name
    assert main(["compare", str(run), str(llama2)]) == 33
    out = capsys.readouterr().out
    assert "benchmark (LoadGen model key): 'llama3_1-8b' != 'llama2-70b-99'" in out
