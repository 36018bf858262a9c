"""Published LLM results ranked by MLPerf's own metric: tokens/s, with TTFT and TPOT beside.

The trees are real v4.1 results (tests/fixtures/published/README.md names their sources):
NVIDIA's DGX H100 mixtral-8x7b and AMD's 8x MI300X llama2-70b-99, Offline and Server. The
expected numbers are written out from their logs, not read back through the importer.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from harness.analysis.values import published_value_of
from harness.published.describe import describe
from harness.published.record import load_published
from harness.records.layout import PUBLISHED_FILE
from harness.records.metrics import TOKENS, TPOT_P99, TTFT_P99
from harness.records.published import PublishedResult
from harness.site.build import build_site
from harness.site.headline import published_headline, published_metric
from tests.unit.test_published_import import V41, only, stated

MIXTRAL = V41 / "NVIDIA/results/DGX-H100_H100-SXM-80GBx8_TRT/mixtral-8x7b"
LLAMA2 = V41 / "AMD/results/8xMI300X_2xEPYC-TURIN/llama2-70b-99"
RUN = "performance/run_1"
# (tree, scenario) -> (tokens/s in the detail log, samples/s, TTFT p99 ns, TPOT p99 ns)
LOGGED = {
    (MIXTRAL, "Offline"): (52415.9, 359.173, None, None),
    (MIXTRAL, "Server"): (50795.6, 348.059, 628885054, 123136641),
    (LLAMA2, "Offline"): (24109.8, 82.1782, None, None),
    (LLAMA2, "Server"): (22020.9, 74.9649, 1660370476, 198676867),
}
TOKENS_LINE = {"Offline": "Tokens per second", "Server": "Completed tokens per second"}


def _record(tree: Path, scenario: str, out: Path) -> PublishedResult:
    return only(tree / scenario / RUN, out)


@pytest.mark.parametrize(("tree", "scenario"), sorted(LOGGED, key=str))
def test_an_llm_is_imported_by_tokens_per_second_with_ttft_and_tpot(
    tree: Path, scenario: str, tmp_path: Path
) -> None:
    tokens, samples, ttft_p99, tpot_p99 = LOGGED[tree, scenario]
    record = _record(tree, scenario, tmp_path / "out")
    assert record.metric.name == "generation.tokens_per_second"
    assert record.metric.unit == "tokens/s"
    assert record.metric.value == tokens
    assert record.samples_per_second == samples  # kept beside, no longer the metric
    gen = record.generation
    assert gen is not None and gen.tokens_per_second == tokens
    # the summary prints the same rate (Server's with 2 decimals: 50795.57 for 50795.6)
    summary = tree / scenario / RUN / "mlperf_log_summary.txt"
    assert stated(summary, TOKENS_LINE[scenario]) == pytest.approx(tokens, abs=0.05)
    if scenario == "Offline":  # LoadGen measures neither in Offline
        assert gen.ttft_ns is None and gen.tpot_ns is None
    else:
        assert gen.ttft_ns is not None and gen.ttft_ns.p99 == ttft_p99
        assert gen.tpot_ns is not None and gen.tpot_ns.p99 == tpot_p99
        assert stated(summary, "99.00 percentile first token latency (ns)") == ttft_p99
        assert stated(summary, "99.00 percentile time to output token (ns)") == tpot_p99
    # the summary agrees with the detail log (to the detail log's 6 digits): no note
    assert not [w for w in record.import_warnings if "says" in w], record.import_warnings


def test_show_states_tokens_per_second_and_the_token_latencies(tmp_path: Path) -> None:
    rows = dict(describe(_record(MIXTRAL, "Server", tmp_path / "out")))
    assert rows["metric"] == "Server token throughput 50,795.60 tokens/s"
    assert rows["per accelerator"] == "6,349.45 tokens/s (8 accelerators)"
    assert "TTFT p99 628.885 ms" in rows["token latency"]
    assert "TPOT p99 123.137 ms" in rows["token latency"]
    offline = dict(describe(_record(LLAMA2, "Offline", tmp_path / "off")))
    assert offline["metric"] == "Offline token throughput 24,109.80 tokens/s"
    assert offline["token latency"] == "not logged (Offline measures neither)"


def test_the_sites_llm_boards_rank_by_tokens_per_second(tmp_path: Path) -> None:
    results = tmp_path / "results"
    for tree in (MIXTRAL, LLAMA2):
        for scenario in ("Offline", "Server"):
            _record(tree, scenario, results / "published-imports")
    site = build_site([results], tmp_path / "site")
    page = site.index.read_text(encoding="utf-8")
    boards = {(b.model, b.scenario): b for b in site.boards}
    assert set(boards) == {
        ("mixtral-8x7b", "Offline"),
        ("mixtral-8x7b", "Server"),
        ("llama2-70b-99", "Offline"),
        ("llama2-70b-99", "Server"),
    }
    for (model, scenario), board in boards.items():
        tree = MIXTRAL if model == "mixtral-8x7b" else LLAMA2
        assert board.metric.key == "generation.tokens_per_second"
        (row,) = board.rows
        assert (row.headline.unit, row.headline.value) == ("tokens/s", LOGGED[tree, scenario][0])
        table = re.search(rf'<table [^>]*id="lb-{board.slug}">.*?</table>', page)
        assert table is not None and "token throughput (tokens/s)" in table.group(0)


def test_the_headline_of_an_llm_record_is_tokens_per_second(tmp_path: Path) -> None:
    record = _record(LLAMA2, "Server", tmp_path / "out")
    assert published_metric(record).key == "generation.tokens_per_second"
    headline = published_headline(record)
    assert (headline.value, headline.unit) == (22020.9, "tokens/s")
    # the catalogue's rows read the token latencies of a published record as of a local run
    assert published_value_of(record, TTFT_P99) == 1660370476
    assert published_value_of(record, TPOT_P99) == 198676867
    assert published_value_of(record, TOKENS) == 22020.9


def test_a_doctored_tokens_per_second_in_the_summary_is_caught(tmp_path: Path) -> None:
    tree = tmp_path / "inference_results_v4.1" / "closed"
    scenario = MIXTRAL.relative_to(V41) / "Offline"
    shutil.copytree(V41 / scenario, tree / scenario)
    summary = tree / scenario / RUN / "mlperf_log_summary.txt"
    text = summary.read_text(encoding="utf-8")
    assert "Tokens per second: 52415.9\n" in text
    summary.write_text(text.replace("Tokens per second: 52415.9", "Tokens per second: 62415.9"))
    record = only(tree / scenario / RUN, tmp_path / "out")
    assert record.metric.value == 52415.9  # the detail log's, never the summary's
    assert (
        "mlperf_log_summary.txt says Tokens per second 62415.9; the detail log 52415.9"
        in record.import_warnings
    )


def test_a_doctored_ttft_in_the_summary_is_caught(tmp_path: Path) -> None:
    tree = tmp_path / "inference_results_v4.1" / "closed"
    scenario = MIXTRAL.relative_to(V41) / "Server"
    shutil.copytree(V41 / scenario, tree / scenario)
    summary = tree / scenario / RUN / "mlperf_log_summary.txt"
    line = "99.00 percentile first token latency (ns)   : "
    text = summary.read_text(encoding="utf-8")
    assert f"{line}628885054\n" in text
    summary.write_text(text.replace(f"{line}628885054", f"{line}428885054"))
    record = only(tree / scenario / RUN, tmp_path / "out")
    assert record.generation is not None and record.generation.ttft_ns is not None
    assert record.generation.ttft_ns.p99 == 628885054
    assert (
        "mlperf_log_summary.txt says 99.00 percentile first token latency (ns) 428885054; "
        "the detail log 628885054"
    ) in record.import_warnings


@pytest.mark.parametrize(
    ("printed", "noted"),
    [
        ("50795.57", False),  # as LoadGen printed it; the detail log says 50795.6
        ("50795.6", False),
        ("50795.65", False),  # within the detail log's last digit
        ("50795.70", True),  # one unit of the detail log's last digit off: a finding
        ("50895.57", True),
    ],
)
def test_the_token_rate_is_checked_to_the_detail_logs_digits(
    tmp_path: Path, printed: str, noted: bool
) -> None:
    tree = tmp_path / "inference_results_v4.1" / "closed"
    scenario = MIXTRAL.relative_to(V41) / "Server"
    shutil.copytree(V41 / scenario, tree / scenario)
    summary = tree / scenario / RUN / "mlperf_log_summary.txt"
    text = summary.read_text(encoding="utf-8")
    line = "Completed tokens per second: "
    summary.write_text(text.replace(f"{line}50795.57", f"{line}{printed}"))
    record = only(tree / scenario / RUN, tmp_path / "out")
    assert record.metric.value == 50795.6  # the detail log's
    notes = [w for w in record.import_warnings if "the detail log 50795.6" in w]
    assert bool(notes) is noted, record.import_warnings


def test_a_record_before_version_4_reads_with_no_token_figures(tmp_path: Path) -> None:
    record = _record(MIXTRAL, "Offline", tmp_path / "out")
    written = next((tmp_path / "out").iterdir()) / PUBLISHED_FILE
    data = json.loads(written.read_text(encoding="utf-8"))
    del data["generation"]
    data["schema_version"] = 3
    written.write_text(json.dumps(data), encoding="utf-8")
    old = load_published(written)
    assert old.generation is None and record.generation is not None


def test_compare_of_published_llms_is_judged_by_tokens_per_second(tmp_path: Path) -> None:
    """Every side generated (here two published LLM records, no local run): compare's headline
    is MLPerf's LLM metric, tokens/s, not samples/s; the ratio is the logs' tokens/s."""
    from harness.analysis.compare import compare

    mixtral = _record(MIXTRAL, "Server", tmp_path / "a")
    llama2 = _record(LLAMA2, "Server", tmp_path / "b")
    headline = next(r for r in compare([mixtral, llama2]).rows if r.headline)
    assert headline.metric == TOKENS
    assert [c.values for c in headline.cells] == [(50795.6,), (22020.9,)]
