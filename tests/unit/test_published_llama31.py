"""A real llama3.1-8b result (Offline, v5.1 tree) read by MLPerf's own LLM metric, tokens/s.

The tree is tests/fixtures/published-llm (its source is named in
tests/fixtures/published/README.md): Inventec's P9000AG7 (8x B200-SXM-180GB), llama3.1-8b
Offline, from a fork of MLCommons' v5.1 results repository; no llama3.1-8b Server or
Interactive result is in the code index. The expected numbers are written out from the logs,
not read back through the importer.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.analysis.values import published_value_of
from harness.published.describe import describe
from harness.records.metrics import TOKENS
from harness.records.published import PublishedResult
from harness.site.build import build_site
from harness.site.headline import published_metric
from tests.conftest import REPO
from tests.unit.test_published_import import only, stated
from tests.unit.test_published_llm import LLAMA2, RUN

LLM_FIXTURES = REPO / "tests" / "fixtures" / "published-llm"
V51 = LLM_FIXTURES / "inference_results_v5.1" / "closed"
SYSTEM = "P9000AG7_B200-SXM-180GBx8_TRT"
LLAMA31 = V51 / "Inventec/results" / SYSTEM / "llama3.1-8b"
SUMMARY = LLAMA31 / "Offline" / RUN / "mlperf_log_summary.txt"
TOKENS_PER_S = 142508.0  # "Tokens per second: 142508" (summary); result_tokens_per_second
SAMPLES_PER_S = 1104.85


def _record(out: Path) -> PublishedResult:
    return only(LLAMA31 / "Offline" / RUN, out)


def test_llama31_8b_is_imported_by_tokens_per_second(tmp_path: Path) -> None:
    record = _record(tmp_path / "out")
    assert (record.org, record.system.id, record.mlperf_version) == ("Inventec", SYSTEM, "5.1")
    assert (record.benchmark, record.scenario, record.valid) == ("llama3.1-8b", "Offline", True)
    assert record.model == "llama3_1-8b"  # LoadGen's key, as a local run's model.loadgen_name
    assert record.loadgen_version == "6.0.9 @ a4e012ae18"
    assert record.metric.name == "generation.tokens_per_second"
    assert (record.metric.value, record.metric.unit) == (TOKENS_PER_S, "tokens/s")
    assert record.samples_per_second == SAMPLES_PER_S
    assert stated(SUMMARY, "Tokens per second") == TOKENS_PER_S
    assert stated(SUMMARY, "Samples per second") == SAMPLES_PER_S
    gen = record.generation
    assert gen is not None and gen.tokens_per_second == TOKENS_PER_S
    assert gen.ttft_ns is None and gen.tpot_ns is None  # LoadGen measures neither in Offline
    assert record.import_warnings == ()
    assert published_value_of(record, TOKENS) == TOKENS_PER_S


def test_show_states_the_token_rate_per_accelerator(tmp_path: Path) -> None:
    rows = dict(describe(_record(tmp_path / "out")))
    assert rows["metric"] == "Offline token throughput 142,508.00 tokens/s"
    assert rows["per accelerator"] == "17,813.50 tokens/s (8 accelerators)"
    assert rows["token latency"] == "not logged (Offline measures neither)"
    assert rows["accelerator"] == "8 x NVIDIA B200-SXM-180GB"
    assert rows["benchmark"] == "llama3.1-8b (model llama3_1-8b)"


def _doctored_copy(root: Path, tokens: str, samples: str) -> Path:
    """The same result as another system's, with other rates in both logs (a test's cheat)."""
    tree = root / "inference_results_v5.1" / "closed" / "Inventec"
    copy = tree / "results" / "doctored" / "llama3.1-8b" / "Offline"
    shutil.copytree(LLAMA31 / "Offline", copy)
    system = V51 / "Inventec" / "systems" / f"{SYSTEM}.json"
    (tree / "systems").mkdir(parents=True)
    shutil.copy(system, tree / "systems" / "doctored.json")
    detail = copy / RUN / "mlperf_log_detail.txt"
    text = detail.read_text(encoding="utf-8")
    for key, old, new in (
        ("result_tokens_per_second", "142508", tokens),
        ("result_samples_per_second", "1104.85", samples),
    ):
        assert f'"{key}", "value": {old},' in text
        text = text.replace(f'"{key}", "value": {old},', f'"{key}", "value": {new},')
    detail.write_text(text, encoding="utf-8")
    summary = copy / RUN / "mlperf_log_summary.txt"
    text = summary.read_text(encoding="utf-8")
    text = text.replace("Tokens per second: 142508", f"Tokens per second: {tokens}")
    text = text.replace("Samples per second: 1104.85", f"Samples per second: {samples}")
    summary.write_text(text, encoding="utf-8")
    return copy / RUN


def test_the_site_ranks_llama31_by_tokens_not_samples(tmp_path: Path) -> None:
    """A second record with more samples/s but fewer tokens/s ranks below the real one: the
    board is ranked by MLPerf's LLM metric, not by samples/s."""
    results = tmp_path / "results" / "published-imports"
    real = _record(results)
    doctored = only(_doctored_copy(tmp_path / "tree", "100000", "2000.5"), results)
    assert doctored.samples_per_second == 2000.5 > SAMPLES_PER_S
    assert doctored.metric.value == 100000.0 < TOKENS_PER_S
    only(LLAMA2 / "Offline" / RUN, results)  # another model: a board of its own
    site = build_site([tmp_path / "results"], tmp_path / "site")
    boards = {(b.model, b.scenario): b for b in site.boards}
    assert set(boards) == {("llama3_1-8b", "Offline"), ("llama2-70b-99", "Offline")}
    board = boards["llama3_1-8b", "Offline"]
    assert board.metric.key == "generation.tokens_per_second" == published_metric(real).key
    assert [(r.headline.value, r.headline.unit) for r in board.rows] == [
        (TOKENS_PER_S, "tokens/s"),
        (100000.0, "tokens/s"),
    ]
    assert "Inventec" in board.rows[0].label and "doctored" in board.rows[1].label
    page = site.index.read_text(encoding="utf-8")
    assert f'id="lb-{board.slug}"' in page and "142,508" in page


@pytest.mark.parametrize(
    ("printed", "noted"),
    [("142508", False), ("142508.4", False), ("142509", True), ("152508", True)],
)
def test_a_doctored_token_rate_in_the_summary_is_caught(
    tmp_path: Path, printed: str, noted: bool
) -> None:
    tree = tmp_path / "inference_results_v5.1" / "closed"
    scenario = LLAMA31.relative_to(V51) / "Offline"
    shutil.copytree(V51 / scenario, tree / scenario)
    summary = tree / scenario / RUN / "mlperf_log_summary.txt"
    text = summary.read_text(encoding="utf-8")
    line = "Tokens per second: "
    summary.write_text(text.replace(f"{line}142508\n", f"{line}{printed}\n"))
    record = only(tree / scenario / RUN, tmp_path / "out")
    assert record.metric.value == TOKENS_PER_S  # the detail log's, never the summary's
    notes = [w for w in record.import_warnings if "the detail log 142508" in w]
    assert bool(notes) is noted, record.import_warnings


NVIDIA_405B = V51 / "NVIDIA/results/GB200-NVL72_GB200-186GB_aarch64x72_TRT/llama3.1-405b"


def test_a_v51_llm_server_result_gives_tokens_ttft_and_tpot(tmp_path: Path) -> None:
    """The nearest v5.1 Server LLM in the index (no llama3.1-8b Server is): NVIDIA's GB200
    NVL72 llama3.1-405b, its detail log's figures against the summary's exact lines."""
    record = only(NVIDIA_405B / "Server" / RUN, tmp_path / "out")
    summary = NVIDIA_405B / "Server" / RUN / "mlperf_log_summary.txt"
    assert (record.org, record.mlperf_version, record.model) == ("NVIDIA", "5.1", "llama3_1-405b")
    assert record.loadgen_version == "5.1.0 @ 50de99161e"
    assert (record.metric.value, record.metric.unit) == (11614.3, "tokens/s")
    assert stated(summary, "Completed tokens per second") == 11614.28  # to 2 decimals
    assert record.samples_per_second == 17.7167
    gen = record.generation
    assert gen is not None and gen.ttft_ns is not None and gen.tpot_ns is not None
    assert (gen.ttft_ns.p50, gen.ttft_ns.p90, gen.ttft_ns.p99) == (
        1218057019,
        2590919962,
        4358798704,
    )
    assert (gen.tpot_ns.p50, gen.tpot_ns.p90, gen.tpot_ns.p99) == (
        104772970,
        114745404,
        128007502,
    )
    assert stated(summary, "99.00 percentile first token latency (ns)") == 4358798704
    assert stated(summary, "99.00 percentile time to output token (ns)") == 128007502
    # `result_token_throughput` (9.42907e-09 in this log) is not the metric: the completed rate is
    assert record.import_warnings == ()
    rows = dict(describe(record))
    assert rows["metric"] == "Server token throughput 11,614.30 tokens/s"
    assert "TTFT p99 4,358.799 ms" in rows["token latency"]
    assert "TPOT p99 128.008 ms" in rows["token latency"]
    assert rows["accelerator"] == "18 nodes x 4 x NVIDIA GB200 = 72 in all"


def test_the_record_written_names_its_round_and_source(tmp_path: Path) -> None:
    _record(tmp_path / "out")
    (written,) = (tmp_path / "out").iterdir()
    assert written.name == f"v5.1-closed-Inventec-{SYSTEM}-llama3.1-8b-Offline"
    data = json.loads((written / "published.json").read_text(encoding="utf-8"))
    assert data["benchmark"] == "llama3.1-8b" and data["model"] == "llama3_1-8b"
