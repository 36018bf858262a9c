"""Server with no target_qps: a real peak search of the tiny model ends in a VALID peak."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.analysis.earlystop import queries_for_share
from harness.cli import main
from harness.execution.pipeline import CONFIRM_MARGIN, CONFIRM_SHARE
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
    assert peak["found_qps"] > 0 and peak["steps"]
    assert "FindPeakPerformance found" in server["target_qps_source"]
    # The confirmed rate is at most the margin below what the search found, never above
    # (LoadGen logs the rate to 6 significant digits: 2569.657 asked is 2569.66 logged).
    assert 0 < server["target_qps"] <= peak["found_qps"] * CONFIRM_MARGIN * (1 + 1e-5)
    # Its run was long enough for early stopping to allow 0.4 % over the bound, and met it.
    answered = sum(int(size) * n for size, n in server["batch_sizes"].items())
    assert answered >= queries_for_share(CONFIRM_SHARE)
    assert server["early_stopping_met"] is True and server["latency_constraint_met"] is True
    # Every confirmation set aside was INVALID: the peak is the first rate LoadGen called VALID.
    for aside in run_dir.glob("confirm-*"):
        assert json.loads((aside / "result.json").read_text())["valid"] is False
    # The confirmations ran with the hold the search derived.
    assert server["max_wait_ms"] == peak["max_wait_ms"]
