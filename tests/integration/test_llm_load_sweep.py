"""A generative load sweep and token plots, from real LoadGen runs of llm-tiny.

`harness sweep --server-rates 100,3000` on llm-tiny Server: 100 queries/s is well inside the
model's capacity here (about 700 queries/s with 3 sequences in a continuous batch on a loaded
2-core VM), 3000 is far past it, so its
queue grows and its p99 TTFT crosses the 200 ms limit: the knee is 100. show and report print
the sweep; the report of a rate's trials, and of an Offline run with a hostile --label, draws
the token plots from the runs' token_times.npz.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from harness.records.layout import LOAD_FILE, RESULT_FILE
from harness.results.loadfile import read_load
from tests.conftest import harness_printed, write_scenario

pytest.importorskip("onnxruntime_genai", reason="onnxruntime-genai is not installed (llm extra)")
pytestmark = pytest.mark.slow

SCENARIO = """
name: llm-tiny-load
scenario: {scenario}
model: {{zoo: llm-tiny}}
generation:
  input_tokens: {{min: 8, max: 40}}
  output_tokens: {{min: 6, max: 20}}
  hold_eos: true
  limits: {{ttft_ms: 200, tpot_ms: 50}}
  max_active: 3
data: {{total_sample_count: 32}}
warmup: {{min_queries: 4, min_duration_ms: 0}}
# 1,453 queries, as the capacity search's confirming runs: LoadGen's early stopping then allows
# six queries over a limit (at 704 one, and two hiccups of a busy VM fail a rate)
quick: {{min_duration_ms: 1000, min_query_count: 1453, performance_sample_count: 32}}
"""
LIMITS_NS = (200_000_000, 50_000_000)
HOSTILE = r"llm $\notacommand$ <b>"


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("llm-load")
    path = write_scenario(tmp / "server.yaml", SCENARIO.format(scenario="Server"))
    argv = ["sweep", str(path), "--server-rates", "100,3000", "--trials", "1"]
    printed = harness_printed([*argv, "--out", str(tmp / "runs")])
    return Path(printed.strip().splitlines()[-1])


def test_the_knee_is_the_last_rate_within_both_limits(swept: Path) -> None:
    sweep = read_load(swept / LOAD_FILE)
    assert (sweep.ttft_limit_ns, sweep.tpot_limit_ns) == LIMITS_NS
    assert [p.target_qps for p in sweep.points] == [100.0, 3000.0]
    inside, past = sweep.points
    assert inside.valid and not past.valid and sweep.knee_qps == 100.0
    assert inside.tokens is not None and past.tokens is not None
    assert inside.tokens.ttft_p99_ns is not None and inside.tokens.ttft_p99_ns <= LIMITS_NS[0]
    assert inside.tokens.tpot_p99_ns is not None and inside.tokens.tpot_p99_ns <= LIMITS_NS[1]
    assert past.tokens.ttft_p99_ns is not None and past.tokens.ttft_p99_ns > LIMITS_NS[0]
    for point in sweep.points:
        tokens = point.tokens
        assert tokens is not None and point.completed_qps is not None
        assert (
            tokens.tokens_per_second is not None and tokens.tokens_per_second > point.completed_qps
        )
        assert tokens.ttft_p50_ns is not None and tokens.ttft_p99_ns is not None
        assert 0 < tokens.ttft_p50_ns <= tokens.ttft_p99_ns
        assert tokens.goodput_qps is not None and tokens.queue_p99_ns is not None
    # within its limits nearly every query is good; past the knee the queue makes most late
    assert inside.tokens.goodput_qps is not None and inside.completed_qps is not None
    assert inside.tokens.goodput_qps >= 0.9 * inside.completed_qps
    assert past.tokens.goodput_qps is not None and past.completed_qps is not None
    assert past.tokens.goodput_qps < 0.5 * past.completed_qps
    assert past.tokens.queue_p99_ns is not None and past.tokens.queue_p99_ns > LIMITS_NS[0] / 2


def test_show_and_report_print_and_draw_the_sweep(swept: Path, tmp_path: Path) -> None:
    shown = harness_printed(["show", str(swept)])
    assert "p99 TTFT limit 200 ms, TPOT limit 50 ms" in shown
    assert (
        "goodput qps" in shown and "knee: 100 qps, the highest rate that met both limits" in shown
    )
    out = tmp_path / "rep"
    harness_printed(["report", str(swept), "--out", str(out)])
    image = out / "images" / "load-llm-tiny-load.png"
    assert image.is_file() and image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert image.stat().st_size > 10_000
    assert "images/load-llm-tiny-load.png" in (out / "report.md").read_text()
    page = (out / "report.html").read_text()
    assert page.count('src="data:image/png;base64,') == 1 and "TTFT p99 ms" in page


def test_a_rate_s_report_draws_ttft_tpot_and_tokens_over_time(swept: Path, tmp_path: Path) -> None:
    out = tmp_path / "rep"
    harness_printed(["report", str(swept / "qps-100"), "--out", str(out)])
    markdown = (out / "report.md").read_text()
    for kind in ("ttft", "tpot", "tokens-over-time"):
        name = f"1-qps-100-{kind}.png"
        assert (out / "images" / name).stat().st_size > 10_000
        assert f"images/{name}" in markdown
    assert "Token latencies and tokens over time" in (out / "report.html").read_text()


def test_an_offline_run_with_a_hostile_label_draws_tokens_over_time(tmp_path: Path) -> None:
    path = write_scenario(tmp_path / "offline.yaml", SCENARIO.format(scenario="Offline"))
    runs = tmp_path / "runs"
    argv = ["run", str(path), "--trials", "1", "--label", HOSTILE, "--out", str(runs)]
    assert main(argv) == 0
    (run,) = [p.parent for p in runs.rglob(RESULT_FILE) if p.parent.name != "accuracy"]
    out = tmp_path / "rep"
    # the label is in the legend: unescaped, matplotlib reads $...$ as math and fails
    assert main(["report", str(run), "--out", str(out)]) == 0
    pngs = sorted(p.name for p in (out / "images").iterdir())
    tokens = [n for n in pngs if n.endswith("-tokens-over-time.png")]
    assert len(tokens) == 1 and not any(n.endswith(("-ttft.png", "-tpot.png")) for n in pngs)
    assert f"images/{tokens[0]}" in (out / "report.md").read_text()
    page = (out / "report.html").read_text()
    assert "Offline issues every query at once" in page and "<b>" not in page.split("<body")[1]
