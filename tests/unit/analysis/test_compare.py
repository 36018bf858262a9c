"""Loading groups, what makes a comparison unfair, and the compared numbers."""

from __future__ import annotations

import dataclasses
import json
import shutil
import statistics
from pathlib import Path
from typing import Any

import pytest

from harness.analysis.compare import (
    comparability_problems,
    compare,
    environment_differences,
    hardware_differences,
    tiers,
)
from harness.analysis.groups import group_warnings
from harness.analysis.values import metric_values
from harness.analysis.welch import welch_t_test
from harness.errors import ConfigError, ResultError
from harness.records.result import RunResult
from harness.results.groups import load_group
from harness.results.runfile import load_result

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REPORTS = FIXTURES / "reports"
TINY = FIXTURES / "results" / "tiny-singlestream"


def _tiny(**changes: Any) -> RunResult:
    return dataclasses.replace(load_result(TINY), **changes)


# --- loading groups --------------------------------------------------------------------------


def test_a_run_directory_is_a_group_of_one() -> None:
    group = load_group(TINY)
    assert (group.kind, group.label, group.sweep, group.runs.stats) == (
        "run",
        "tiny-singlestream",
        None,
        None,
    )
    assert [r.run_id for r in group.results] == [load_result(TINY).run_id]
    assert load_group(TINY / "result.json").label == "tiny-singlestream"


def test_a_trials_group_reads_every_trial_and_its_statistics() -> None:
    group = load_group(REPORTS / "trials-xeon")
    assert group.kind == "trials" and group.runs.metric == "latency_ns.p90"
    assert [r.run_id for r in group.results] == ["trial-1", "trial-2"]
    assert group.runs.requested == 3
    assert group.runs.stats is not None and group.runs.stats.values == (1_850_000.0, 1_902_500.0)


def test_a_sweep_stands_for_its_best_point() -> None:
    group = load_group(REPORTS / "sweep-h100")
    assert group.sweep is not None
    assert [p.batch_size for p in group.sweep.points] == [1, 2, 4, 8, 16]
    assert (group.sweep.saturation_batch, group.sweep.best_batch) == (4, 16)
    assert (group.sweep.stopped, group.sweep.limit) == ("plateau", None)
    assert [r.samples_per_second for r in group.results] == [7180.0, 7120.0]
    assert [r.batch_size for runs in group.all_runs for r in runs.results] == [1, 2, 4, 8, 16, 16]
    labels = [label for label, _, _ in group.labelled(group.runs)]
    assert labels == ["bs-16/trial-1", "bs-16/trial-2"]


def test_metric_values_read_attributes_and_skip_nulls() -> None:
    results = load_group(REPORTS / "trials-xeon").results
    assert metric_values(results, "samples_per_second") == [1210.4, 1188.9]
    assert metric_values(results, "latency_ns.p90") == [1_850_000.0, 1_902_500.0]
    assert metric_values(results, "latency_ns.early_stopping_p90")[0] > 0
    assert metric_values(results, "telemetry.sources.cpu-package-0.avg_power_w") == [95.0, 95.0]
    assert metric_values(results, "telemetry.sources.gpu0.avg_power_w") == []  # no such source
    assert metric_values(results, "utilization.peak_tflops") == [0.664612864, 0.664612864]
    offline = load_group(REPORTS / "sweep-h100" / "bs-1").results
    assert metric_values(offline, "latency_ns.early_stopping_p90") == []  # null: skipped
    for name in ("speed", "valid", "utilization.note", "telemetry.sources.gpu0.kind"):
        with pytest.raises(ResultError, match=f"unknown metric '{name}'"):
            metric_values(results, name)


def test_group_warnings_name_where_each_comes_from() -> None:
    warnings = group_warnings(load_group(REPORTS / "trials-xeon"))
    # every reported metric's spread flag, as `show` prints them, then each run's warnings
    assert (
        "trials",
        "p90 latency: only 2 of 3 requested trials produced a value; "
        "the statistics rest on fewer trials than asked",
    ) in warnings
    places = [where for where, _ in warnings]
    assert places[-2:] == ["trial-1", "trial-2"] and set(places[:-2]) == {"trials"}
    assert warnings[-2][1].startswith("quick profile: shortened LoadGen run")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "trials.json: not readable JSON"),
        ('{"kind": "sweep"}', "not a beyond-tops trials file"),
        ('{"kind": "trials"}', "no schema_version"),
        ('{"kind": "trials", "schema_version": 9}', r"newer beyond-tops \(this one reads 1 to 3\)"),
        ('{"kind": "trials", "schema_version": 0}', r"0 is older than this beyond-tops reads"),
        ('{"kind": "trials", "schema_version": 1}', "missing key.s. scenario_name, scenario"),
        (
            '{"kind": "trials", "schema_version": 1, "scenario_name": "x", "scenario": "x", '
            '"batch_size": 1, "profile": "quick", "requested": 1, "runs": 1, "metric": "m", '
            '"stats": {}}',
            "scenario: 'x' is not one of 'SingleStream', 'MultiStream', 'Server', 'Offline'; "
            "re-run it",
        ),
    ],
)
def test_bad_trials_files_are_refused_in_one_line(
    tmp_path: Path, content: str, message: str
) -> None:
    (tmp_path / "trials.json").write_text(content)
    with pytest.raises(ResultError, match=message) as info:
        load_group(tmp_path)
    assert "\n" not in str(info.value)


def test_missing_or_unknown_directories_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ResultError, match="no such directory"):
        load_group(tmp_path / "absent")
    with pytest.raises(ResultError, match=r"no result\.json, trials\.json or sweep\.json"):
        load_group(tmp_path)


def test_a_trial_listed_but_missing_is_refused(tmp_path: Path) -> None:
    shutil.copytree(REPORTS / "trials-xeon", tmp_path / "t")
    shutil.rmtree(tmp_path / "t" / "trial-2")
    with pytest.raises(ResultError, match=r"t/trial-2: no such result"):
        load_group(tmp_path / "t")


def test_a_sweep_limit_must_be_an_object(tmp_path: Path) -> None:
    shutil.copytree(REPORTS / "sweep-h100", tmp_path / "s")
    doc = json.loads((tmp_path / "s" / "sweep.json").read_text())
    doc["limit"] = "out of memory"
    (tmp_path / "s" / "sweep.json").write_text(json.dumps(doc))
    with pytest.raises(ResultError, match="limit: expected an object, got a string; re-run it"):
        load_group(tmp_path / "s")


def test_malformed_sweep_statistics_are_refused(tmp_path: Path) -> None:
    shutil.copytree(REPORTS / "sweep-h100", tmp_path / "s")
    doc = json.loads((tmp_path / "s" / "sweep.json").read_text())
    del doc["points"][0]["samples_per_second"]["median"]
    (tmp_path / "s" / "sweep.json").write_text(json.dumps(doc))
    with pytest.raises(
        ResultError, match=r"sweep.json: points\[0\].samples_per_second: missing key.s. median"
    ):
        load_group(tmp_path / "s")


# --- comparability ---------------------------------------------------------------------------


def test_a_result_is_comparable_with_itself() -> None:
    a = load_result(TINY)
    assert comparability_problems(a, a) == []
    assert hardware_differences(a, a) == environment_differences(a, a) == []


def test_each_difference_is_one_line_in_its_tier() -> None:
    a = load_result(TINY)
    b = _tiny(
        model=dataclasses.replace(a.model, sha256="ab" * 32, precision="fp16"),
        scenario="Offline",
        outcome=dataclasses.replace(a.outcome, profile="submission"),
        versions=dataclasses.replace(a.versions, onnxruntime="1.31.1", loadgen="6.0.9"),
        loadgen_config=dataclasses.replace(a.loadgen_config, mlperf_conf_sha256="cd" * 32),
        settings={**a.settings, "qsl_rng_seed": 1, "min_duration_ms": 600000},
    )
    not_comparable, intended, caveats = tiers(a, b)
    # fp16 converted from the same source model: the same model, another precision
    assert not_comparable == ["scenario: 'SingleStream' != 'Offline'"]
    assert comparability_problems(a, b) == not_comparable
    assert intended == ["precision: 'fp32' != 'fp16'", "onnxruntime version: '1.32.0' != '1.31.1'"]
    assert caveats == [
        "profile: 'quick' != 'submission' (the quick run is shortened, NOT submission-valid)",
        "mlcommons-loadgen release: '6.0.17' != '6.0.9'",
        "official mlperf.conf sha256: 'f6fe8510fde7' != 'cdcdcdcdcdcd'",
        "LoadGen setting min_duration_ms: 1000 != 600000",
        "LoadGen setting qsl_rng_seed: 2085463073848966840 != 1",
    ]


def test_another_model_file_at_one_precision_is_not_comparable() -> None:
    a = load_result(TINY)
    b = _tiny(model=dataclasses.replace(a.model, sha256="ab" * 32))
    assert comparability_problems(a, b) == ["model checksum: 'c6ba2ddaff04' != 'abababababab'"]
    other_source = dataclasses.replace(a.precision, source_sha256="cd" * 32)
    c = _tiny(model=dataclasses.replace(a.model, precision="int8"), precision=other_source)
    assert comparability_problems(a, c)[0].startswith("model (source sha256): 'tiny c6ba")


def test_settings_derived_from_the_measured_speed_are_not_a_difference() -> None:
    a = load_result(TINY)
    derived = {"target_qps": 1.0, "target_latency_ns": 5, "samples_per_query": 9, "scenario": "x"}
    b = _tiny(
        settings={**a.settings, **derived, "min_sample_count": 7},
        loadgen_config=dataclasses.replace(a.loadgen_config, user_conf_sha256="00" * 32),
    )
    assert comparability_problems(a, b) == []


def test_hardware_is_shown_apart_from_the_rest_of_the_environment() -> None:
    a = load_group(REPORTS / "trials-epyc").results[0]
    b = load_group(REPORTS / "trials-xeon").results[0]
    assert hardware_differences(a, b) == [
        "cpu.cores: 2 != 4",
        "cpu.isa: ['avx2', 'avx512f', 'avx512_vnni', 'avx512_bf16'] != "
        "['avx2', 'avx512f', 'avx512_vnni', 'avx512_bf16', 'amx_tile']",
        "cpu.model: 'AMD EPYC' != 'Intel Xeon Platinum 8480+'",
        "cpu.threads: 2 != 4",
        "cpu.usable_cpus: 2 != 4",
        "cpu.vendor: 'AuthenticAMD' != 'GenuineIntel'",
        "memory.total_bytes: 25276502016 != 33554432000",
    ]
    # onnxruntime differs too, but that is an intended difference (runtime), not listed here
    assert environment_differences(a, b) == ["os.kernel: '6.18.44-fc-v669' != '6.8.0-49-generic'"]
    assert comparability_problems(a, b) == []
    assert "onnxruntime version: '1.32.0' != '1.31.1'" in tiers(a, b)[1]


# --- compare ---------------------------------------------------------------------------------


def test_compare_takes_medians_ratios_and_welch_over_the_trials() -> None:
    epyc, xeon = load_group(REPORTS / "trials-epyc"), load_group(REPORTS / "trials-xeon")
    c = compare([epyc, xeon])
    assert c.labels == ("trials-epyc", "trials-xeon")
    rows = {row.metric.key: row for row in c.rows}
    assert list(rows) == [
        "latency_ns.early_stopping_p90",
        "latency_ns.p50",
        "latency_ns.p90",
        "latency_ns.p99",
        "telemetry.sources.cpu-package-0.energy_per_inference_mj",
        "accuracy.against_fp32.top1_agreement",
        "accuracy.against_fp32.cosine_similarity",
        "utilization.achieved_tflops",
        "utilization.fraction_of_peak",
    ]  # SingleStream: its headline (the early-stopping p90) first, and no throughput row;
    # no samples/s/W row: SingleStream reports none, and rows without any value are left out
    first, second = rows["latency_ns.p90"].cells
    epyc_p90 = metric_values(epyc.results, "latency_ns.p90")
    xeon_p90 = metric_values(xeon.results, "latency_ns.p90")
    assert (first.values, first.value, first.ratio) == (
        tuple(epyc_p90),
        statistics.median(epyc_p90),
        1.0,
    )
    assert (first.p_value, first.significant) == (None, None)
    assert second.value == statistics.median(xeon_p90)
    assert second.ratio == statistics.median(xeon_p90) / statistics.median(epyc_p90)
    assert second.p_value == welch_t_test(epyc_p90, xeon_p90)[1]
    assert second.significant is True
    energy = rows["telemetry.sources.cpu-package-0.energy_per_inference_mj"].cells
    assert (energy[0].value, energy[1].ratio, energy[1].p_value) == (None, None, None)
    # each line names its groups in the order its values are given
    assert c.problems == ()  # another CPU and onnxruntime: intended differences, by pair
    (pair,) = c.pairs
    assert (pair.first, pair.other, pair.index) == ("trials-epyc", "trials-xeon", 1)
    assert "onnxruntime version: '1.32.0' != '1.31.1'" in pair.intended
    assert c.hardware[0] == "trials-epyc vs trials-xeon: cpu.cores: 2 != 4"
    assert dict(c.info)["trials"] == ("3", "2 of 3")


def test_one_trial_per_side_has_no_significance() -> None:
    one, two = load_group(REPORTS / "sweep-h100" / "bs-1"), load_group(REPORTS / "sweep-h100")
    c = compare([one, two])
    cell = c.rows[0].cells[1]
    assert (cell.value, cell.p_value, cell.significant) == (7150.0, None, None)
    assert cell.ratio == 7150.0 / 2000.5
    assert c.problems == ()  # same configuration; batch size is an intended difference
    assert c.pairs[0].intended == ("batch size: 1 != 16",)
    assert dict(c.info)["batch size"] == ("1", "16")


def test_different_scenarios_are_listed_as_not_comparable() -> None:
    c = compare([load_group(REPORTS / "trials-epyc"), load_group(REPORTS / "sweep-h100")])
    assert c.problems[0] == "trials-epyc vs sweep-h100: scenario: 'SingleStream' != 'Offline'"
    assert "trials-epyc vs sweep-h100: gpus.0.name: None != 'NVIDIA H100 80GB HBM3'" in c.hardware


def test_compare_needs_two_groups() -> None:
    with pytest.raises(ConfigError, match="at least two"):
        compare([load_group(TINY)])
