"""trials.json and sweep.json: one module writes and reads both; and the metric accessor."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from harness.analysis.trials import trial_stats
from harness.analysis.values import (
    LATENCY_P90,
    SAMPLES_PER_SECOND,
    metric_getter,
    metric_values,
    source_metric,
)
from harness.errors import ResultError
from harness.records.codec import to_data
from harness.records.metrics import metric as shown
from harness.records.sweep import SweepLimit
from harness.results.groupfile import (
    GROUP_SCHEMA_VERSION,
    SweepFile,
    SweepFilePoint,
    TrialsFile,
    read_sweep,
    read_trials,
    write_sweep,
    write_trials,
)
from harness.results.runfile import load_result

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REPORTS = FIXTURES / "reports"
STATS = trial_stats(  # as the harness writes them: warnings in the shown unit
    [10.0, 11.0], requested=3, higher_is_better=True, shown=shown(SAMPLES_PER_SECOND)
)


def _trials() -> TrialsFile:
    return TrialsFile(
        scenario_name="tiny-offline",
        scenario="Offline",
        batch_size=8,
        profile="quick",
        requested=3,
        runs=("trial-1", "trial-2"),
        metric=SAMPLES_PER_SECOND,
        stats=STATS,
    )


def test_trials_file_round_trip(tmp_path: Path) -> None:
    write_trials(tmp_path / "trials.json", _trials())
    data = json.loads((tmp_path / "trials.json").read_text())
    assert list(data)[:3] == ["schema_version", "kind", "scenario_name"]
    assert data["runs"] == ["trial-1", "trial-2"] and data["stats"] == to_data(STATS)
    assert read_trials(tmp_path / "trials.json") == _trials()


def test_sweep_file_round_trip(tmp_path: Path) -> None:
    sweep = SweepFile(
        scenario_name="tiny-offline",
        profile="quick",
        points=(SweepFilePoint(batch_size=1, dir="bs-1", samples_per_second=STATS),),
        saturation_batch=1,
        best_batch=1,
        stopped="out_of_memory",
        limit=SweepLimit(batch_size=2, error="CUDA out of memory"),
    )
    write_sweep(tmp_path / "sweep.json", sweep)
    data = json.loads((tmp_path / "sweep.json").read_text())
    assert data["limit"] == {"batch_size": 2, "error": "CUDA out of memory"}
    assert data["points"][0]["samples_per_second"]["median"] == STATS.median
    assert read_sweep(tmp_path / "sweep.json") == sweep


def test_a_partial_trials_file_says_so_and_round_trips(tmp_path: Path) -> None:
    partial = dataclasses.replace(
        _trials(), complete=False, failure="trial-3 failed: killed by signal 9"
    )
    write_trials(tmp_path / "trials.json", partial)
    data = json.loads((tmp_path / "trials.json").read_text())
    assert data["schema_version"] == GROUP_SCHEMA_VERSION == 3
    assert data["complete"] is False and data["failure"] == "trial-3 failed: killed by signal 9"
    assert read_trials(tmp_path / "trials.json") == partial


def test_a_version_1_group_file_reads_as_complete(tmp_path: Path) -> None:
    write_trials(tmp_path / "trials.json", _trials())
    data = json.loads((tmp_path / "trials.json").read_text())
    del data["complete"], data["failure"]
    (tmp_path / "trials.json").write_text(json.dumps({**data, "schema_version": 1}))
    trials = read_trials(tmp_path / "trials.json")
    assert trials == _trials() and trials.complete and trials.failure is None


def test_an_old_trials_files_warnings_read_in_shown_units() -> None:
    # Version 1 wrote "mean 2,514,879, stdev 205,336": nanoseconds, beside a table in ms.
    stored = json.loads((REPORTS / "trials-epyc" / "trials.json").read_text())
    assert stored["schema_version"] == 1 and "mean 2,514,879" in stored["stats"]["warnings"][0]
    warnings = read_trials(REPORTS / "trials-epyc" / "trials.json").stats.warnings
    assert warnings == (
        "spread too large to trust: CoV 8.2 % >= 5 % over 3 trials (mean 2.51 ms, stdev 0.205 ms)",
    )


def test_the_checked_in_group_files_read() -> None:
    assert read_trials(REPORTS / "trials-xeon" / "trials.json").metric == LATENCY_P90
    sweep = read_sweep(REPORTS / "sweep-h100" / "sweep.json")
    assert [p.batch_size for p in sweep.points] == [1, 2, 4, 8, 16]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"schema_version": 4},
            "schema_version 4 was written by a newer beyond-tops (this one reads 1 to 3); "
            "upgrade beyond-tops",
        ),
        ({"kind": "sweep"}, "not a beyond-tops trials file (kind is not 'trials')"),
        ({"runs": "trial-1"}, "runs: expected a list, got a string; re-run it"),
        ({"stopped": "plateau"}, "the file: unknown key(s) stopped; re-run it"),
    ],
)
def test_a_bad_trials_file_is_refused_in_one_line(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    write_trials(tmp_path / "trials.json", _trials())
    data = {**json.loads((tmp_path / "trials.json").read_text()), **change}
    (tmp_path / "trials.json").write_text(json.dumps(data))
    with pytest.raises(ResultError) as info:
        read_trials(tmp_path / "trials.json")
    assert str(info.value).endswith(message) and "\n" not in str(info.value)


# --- metrics ----------------------------------------------------------------------------------


def test_one_accessor_with_one_rule_for_absent_values() -> None:
    sweep = [load_result(REPORTS / "sweep-h100" / "bs-16" / f"trial-{i}") for i in (1, 2)]
    assert metric_values(sweep, SAMPLES_PER_SECOND) == [7180.0, 7120.0]
    energy = source_metric("gpu0", "energy_per_inference_mj")
    assert energy == "telemetry.sources.gpu0.energy_per_inference_mj"
    assert len(metric_values(sweep, energy)) == 1  # trial-2 has no telemetry: left out
    assert metric_values(sweep, "latency_ns.early_stopping_p90") == []  # Offline: null
    assert metric_getter("utilization.fraction_of_peak")(sweep[0]) == (
        sweep[0].utilization.fraction_of_peak
    )


def test_unknown_metrics_are_refused_with_the_known_ones() -> None:
    with pytest.raises(ResultError, match=r"unknown metric 'latency_ns\.p42'; known: samples_per"):
        metric_getter("latency_ns.p42")
    with pytest.raises(ResultError, match=r"unknown metric 'telemetry\.sources\.\.avg_power_w'"):
        metric_getter("telemetry.sources..avg_power_w")
    with pytest.raises(ResultError, match="unknown power-source metric 'kind'"):
        source_metric("gpu0", "kind")
