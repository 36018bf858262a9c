"""The generative Server capacity search on llm-tiny: a real search, confirmed, with goodput.

No target_qps: the pipeline runs the harness's capacity search (harness.analysis.capsearch)
on token latencies, each rate a short LoadGen run of its own (peak-search/step-N/), then
confirming runs that bisect up to the highest VALID rate, 8 runs in all at most. The capacity
read back from the run directory names that run as the peak, with goodput from the SUT's own
stamps at every rate tried. A run LoadGen (or the token checks) called INVALID is never the
peak: the same directory with its final run turned INVALID reports none.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import numpy as np
import pytest

from harness.analysis import capsearch
from harness.cli import main
from harness.errors import ResultError
from harness.handoff import read_peak
from harness.records.layout import (
    DETAIL_LOG,
    PEAK_SEARCH_DIR,
    RESULT_FILE,
    STEP_PREFIX,
    TOKEN_TIMES_FILE,
)
from harness.results.capacity import capacity_lines, capacity_of
from harness.results.runfile import load_result, write_result
from tests.conftest import write_scenario

pytest.importorskip("onnxruntime_genai", reason="onnxruntime-genai is not installed (llm extra)")
pytestmark = pytest.mark.slow

SCENARIO = """
name: llm-tiny-capacity
scenario: Server
model: {zoo: llm-tiny}
trials: 1
generation:
  input_tokens: {min: 8, max: 40}
  output_tokens: {min: 6, max: 20}
  hold_eos: true
  limits: {ttft_ms: 200, tpot_ms: 50}
  max_active: 3
data: {total_sample_count: 32}
warmup: {min_queries: 4, min_duration_ms: 0}
quick: {min_duration_ms: 1000, min_query_count: 24, performance_sample_count: 32}
"""


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("capacity")
    path = write_scenario(tmp / "capacity.yaml", SCENARIO)
    assert main(["run", str(path), "--out", str(tmp / "runs")]) == 0
    (run,) = [
        p.parent
        for p in (tmp / "runs").rglob(RESULT_FILE)
        if p.parent.name != "accuracy" and not p.parent.name.startswith("confirm-")
    ]
    return run


def test_search_ends_in_a_confirmed_valid_peak_with_goodput(searched: Path) -> None:
    search = read_peak(searched / PEAK_SEARCH_DIR)
    assert search.found_qps > 0 and len(search.steps) >= 2
    assert search.runs == len(search.steps) <= capsearch.SEARCH_RUNS
    capacity = capacity_of(searched)
    assert capacity is not None and capacity.peak is not None
    peak = capacity.peak
    assert peak.valid and load_result(searched).valid
    # Every LoadGen run, the search's and the confirmations', within the 8-run budget; the peak
    # confirmed below the lowest rate the search saw fail (bisected up to it from a VALID one).
    assert search.runs + len(capacity.tried) <= capsearch.RUN_BUDGET == 8
    if search.failed_qps is not None:
        assert peak.target_qps < search.failed_qps
    assert peak.tokens_per_second is not None and peak.tokens_per_second > 0
    limits_ns = (200e6, 50e6)
    assert peak.ttft_p99_ns is not None and 0 < peak.ttft_p99_ns <= limits_ns[0]
    assert peak.tpot_p99_ns is not None and 0 < peak.tpot_p99_ns <= limits_ns[1]
    for run in capacity.tried:  # goodput at every confirming rate, from the SUT's stamps
        assert run.goodput is not None and run.goodput.queries >= 1453
        assert 0 < run.goodput.goodput_qps <= run.goodput.queries / run.goodput.span_s + 1e-3
    assert peak.goodput is not None and peak.goodput.queue_delay_ns is not None
    # a VALID run: at least 99 % of its queries met both limits, at about the arrival rate
    assert peak.goodput.good >= 0.99 * peak.goodput.queries
    assert peak.goodput.goodput_qps == pytest.approx(peak.target_qps, rel=0.25)
    with np.load(searched / TOKEN_TIMES_FILE) as data:
        waits = data["start_ns"] - data["issue_ns"]
    assert (waits >= 0).all() and peak.goodput.queue_delay_ns[2] == int(waits.max())
    text = "\n".join(capacity_lines(capacity))
    assert f"peak {peak.target_qps:g} QPS (confirmed VALID)" in text
    # energy per token at the peak: this VM has no RAPL and no meter, so it says why not
    telemetry = load_result(searched).telemetry
    assert telemetry is not None and telemetry.tokens is not None
    if not peak.energy_per_token_mj:
        assert peak.energy_not_measured == telemetry.tokens.not_measured
        assert peak.energy_not_measured is not None
        assert peak.energy_not_measured.startswith("not measured: ")
        assert f"energy at the peak: {peak.energy_not_measured}" in text
    else:  # a machine with RAPL: the peak's figure is its run's
        for name, mj in peak.energy_per_token_mj.items():
            assert telemetry.sources[name].energy_per_token_mj == mj
    # goodput at every rate the search ran, each a LoadGen run of its own with its stamps;
    # the rate found is the highest one LoadGen judged within both limits, the failed the lowest
    assert capacity.search_runs == search.runs == len(capacity.searched)
    assert f"settled on {search.found_qps:g} QPS in {search.runs} runs" in text
    for n, step in enumerate(capacity.searched, start=1):
        assert step.directory == f"{PEAK_SEARCH_DIR}/{STEP_PREFIX}{n}"
        with np.load(searched / step.directory / TOKEN_TIMES_FILE) as data:
            stamped = len(data["issue_ns"])
        assert step.goodput is not None and step.goodput.queries == step.queries == stamped >= 24
        assert step.within is not None
        # LoadGen logs the rate it ran to 6 significant digits; the search's line, to 1e-3 QPS
        rate = float(search.steps[n - 1].split(" QPS")[0])
        assert step.rate_qps == pytest.approx(rate, rel=1e-5)
        verdict = "within" if step.within else "over"
        assert search.steps[n - 1].endswith(f"{verdict} the limits")  # as the search judged it
        assert f"{step.directory}: {step.rate_qps:g} QPS {verdict} the limits" in text
    held = [step.rate_qps for step in capacity.searched if step.within]
    missed = [step.rate_qps for step in capacity.searched if not step.within]
    assert max(held) == pytest.approx(search.found_qps, rel=1e-5)
    if search.failed_qps is None:  # every rate held: the search stepped up until its runs ran out
        assert not missed and len(held) == capsearch.SEARCH_RUNS
    else:
        assert missed and min(missed) == pytest.approx(search.failed_qps, rel=1e-5)


def _invalidate(run_dir: Path) -> None:
    """The cheat: the run's result kept, but INVALID."""
    result = load_result(run_dir)
    outcome = dataclasses.replace(result.outcome, valid=False)
    write_result(dataclasses.replace(result, outcome=outcome), run_dir)


def test_an_invalid_confirmation_is_never_the_peak(searched: Path, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(searched, copy)
    result = load_result(copy)
    assert result.server is not None
    rate = result.server.target_qps  # the run directory holds the highest VALID confirmation
    _invalidate(copy)
    capacity = capacity_of(copy)
    assert capacity is not None
    # Another confirmation LoadGen called VALID (a lower rate) may stand; this one never does.
    assert capacity.peak is None or capacity.peak.target_qps < rate
    for run_dir in [copy, *copy.glob("confirm-*")]:
        _invalidate(run_dir)
    capacity = capacity_of(copy)
    assert capacity is not None and capacity.peak is None
    assert capacity.tried and not any(run.valid for run in capacity.tried)
    text = "\n".join(capacity_lines(capacity))
    assert "no confirmed VALID peak" in text
    assert f"peak {rate:g} QPS" not in text


def test_a_search_step_with_an_edited_rate_is_refused(searched: Path, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(searched, copy)
    log = copy / PEAK_SEARCH_DIR / f"{STEP_PREFIX}1" / DETAIL_LOG
    text = log.read_text(encoding="utf-8")
    lines = [
        line.replace('"value": ', '"value": -', 1) if '"effective_target_qps"' in line else line
        for line in text.splitlines(keepends=True)
    ]
    assert lines != text.splitlines(keepends=True)  # the cheat: a rate LoadGen never ran
    log.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(ResultError, match=r"step-1/mlperf_log_detail.txt: effective_target_qps"):
        capacity_of(copy)
