"""Server with no target_qps: a real peak search of the tiny model ends in a VALID peak."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.analysis import capsearch
from harness.cli import main
from tests.conftest import write_scenario

# A bound generous for the tiny model (0.3-0.6 ms a query) so that a shared, loaded machine
# still confirms a rate; the search itself is what is tested, not this machine's speed.
TINY_PEAK = """
name: tiny-peak-test
scenario: Server
model: {zoo: tiny}
batch_size: 2
trials: 1
data: {total_sample_count: 64}
warmup: {min_queries: 5, min_duration_ms: 300}
quick: {min_duration_ms: 1000, min_query_count: 100, performance_sample_count: 32}
server: {latency_bound_ms: 100}
runtime: {allow_spinning: false}
"""


def test_a_peak_search_ends_in_a_confirmed_valid_peak(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = write_scenario(tmp_path / "s.yaml", TINY_PEAK)
    code = main(["run", str(scenario), "--out", str(tmp_path / "runs")])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    run_dir = tmp_path / "runs" / Path(out.strip().splitlines()[-1]).name
    result = json.loads((run_dir / "result.json").read_text())
    assert result["valid"] is True, result["invalid_reasons"]
    server = result["server"]
    peak = json.loads((run_dir / "peak-search" / "peak.json").read_text())
    assert peak["found_qps"] > 0 and peak["steps"] and peak["runs"] == len(peak["steps"])
    # Each rate the search tried is a LoadGen run of its own, in peak-search/step-N/.
    for n in range(1, peak["runs"] + 1):
        assert (run_dir / "peak-search" / f"step-{n}" / "mlperf_log_detail.txt").is_file()
    assert f"found {peak['found_qps']:g} QPS in {peak['runs']} runs" in server["target_qps_source"]
    # The confirmed rate is never above the lowest rate the search saw fail.
    assert 0 < server["target_qps"] <= peak.get("failed_qps", 1e12) * (1 + 1e-5)
    # Its run was long enough for early stopping to allow 0.4 % over the bound, and met it.
    answered = sum(int(size) * n for size, n in server["batch_sizes"].items())
    assert answered >= capsearch.confirm_queries()
    assert server["early_stopping_met"] is True and server["latency_constraint_met"] is True
    # Every confirmation set aside was INVALID or at a lower rate: the result is the highest
    # rate LoadGen called VALID, within the run budget.
    asides = sorted(run_dir.glob("confirm-*"))
    for aside in asides:
        kept = json.loads((aside / "result.json").read_text())
        assert kept["valid"] is False or kept["server"]["target_qps"] < server["target_qps"]
    assert len(asides) + 1 <= capsearch.CONFIRMS
    # The confirmations ran with the hold the search derived.
    assert server["max_wait_ms"] == peak["max_wait_ms"]
