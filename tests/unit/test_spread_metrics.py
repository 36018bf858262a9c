"""Spread checks on every reported metric of a trials group, with names and units as shown."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path

from harness.analysis.spread import metric_spreads, spread_flags
from harness.records.metrics import metric as shown
from harness.report.markdown import render_markdown
from harness.report.text import render_group
from harness.results.groupfile import read_trials, write_trials
from harness.results.groups import load_group
from harness.results.runfile import load_result

REPORTS = Path(__file__).resolve().parents[1] / "fixtures" / "reports"


def test_issue_16_p99_spread_is_flagged_in_ms_by_its_name() -> None:
    # Problem 6: only the headline metric was checked, and its warning read
    # "latency_ns.p90 ... mean 555,151", a raw key in ns next to a table in ms.
    flags = spread_flags(load_group(REPORTS / "trials-epyc"))
    assert set(flags) == {
        "latency_ns.p50",
        "latency_ns.p90",
        "latency_ns.p99",
        "latency_ns.p999",
        "latency_ns.early_stopping_p90",
    }  # throughput's CoV is 0.6 %: no flag

    assert flags["latency_ns.p99"] == (
        "p99 latency: spread too large to trust: CoV 8.2 % >= 5 % over 3 trials "
        "(mean 3.09 ms, stdev 0.252 ms)"
    )
    assert flags["latency_ns.early_stopping_p90"].startswith("early-stopping p90 latency: ")
    assert not any("latency_ns" in text or " ns" in text for text in flags.values())


def test_offline_checks_throughput_and_each_power_source_never_latency() -> None:
    results = [load_result(REPORTS / "sweep-h100" / "bs-16" / f"trial-{i}") for i in (1, 2)]
    spreads = {s.metric: s for s in metric_spreads(results, requested=2)}
    assert list(spreads) == [
        "samples_per_second",
        "telemetry.sources.gpu0.energy_per_inference_mj",
        "telemetry.sources.gpu0.samples_per_second_per_watt",
    ]
    energy = spreads["telemetry.sources.gpu0.energy_per_inference_mj"]
    assert (energy.name, energy.unit, energy.stats.higher_is_better) == (
        "energy per inference, gpu0",
        "mJ",
        False,
    )
    # trial-2 has no telemetry: one of the two requested values, and a warning that says so
    assert energy.flag is not None and "only 1 of 2 requested trials" in energy.flag
    assert spreads["samples_per_second"].flag is None  # 7180 and 7120: CoV 0.6 %


def _trial_3_faster(tmp_path: Path, *, throughput: bool) -> Path:
    """trials-epyc with trial 3's achieved FLOP/s (and, if asked, its throughput) x 1.5."""
    group = tmp_path / "trials-epyc"
    shutil.copytree(REPORTS / "trials-epyc", group)
    path = group / "trial-3" / "result.json"
    data = json.loads(path.read_text())
    data["utilization"]["achieved_tflops"] *= 1.5
    data["utilization"]["utilization"] *= 1.5  # schema 2's name of fraction_of_peak
    if throughput:
        data["samples_per_second"] *= 1.5
    path.write_text(json.dumps(data))
    return group


def test_achieved_flops_and_utilization_are_checked_and_flagged_as_shown(tmp_path: Path) -> None:
    # They were reported with no spread check of their own: a ⚠ on throughput, none beside
    # the achieved TFLOP/s derived from it.
    group = _trial_3_faster(tmp_path, throughput=False)
    flags = spread_flags(load_group(group))
    assert flags["utilization.achieved_tflops"] == (
        "achieved: spread too large to trust: CoV 25.4 % >= 5 % over 3 trials "
        "(mean 0.0705 TFLOP/s, stdev 0.0179 TFLOP/s); trial 3 is an outlier: 0.0912 TFLOP/s "
        "is 51.3 % off the median 0.0603 TFLOP/s (limit 50 %)"
    )
    assert flags["utilization.fraction_of_peak"].startswith("utilization of peak: ")
    assert "(mean 42.4 %, stdev 10.8 %)" in flags["utilization.fraction_of_peak"]
    assert "utilization.achieved_tflops" not in spread_flags(load_group(REPORTS / "trials-epyc"))


def test_utilization_that_only_follows_throughput_is_flagged_in_its_words(
    tmp_path: Path,
) -> None:
    group = _trial_3_faster(tmp_path, throughput=True)
    flags = spread_flags(load_group(group))
    said = flags["samples_per_second"].removeprefix("throughput: ")
    assert flags["utilization.achieved_tflops"] == f"achieved: {said}"
    assert flags["utilization.fraction_of_peak"] == f"utilization of peak: {said}"
    report = render_markdown([load_group(group)], images_dir=tmp_path / "report" / "images")
    assert f"⚠ throughput; achieved; utilization of peak: {said}" in report
    assert re.search(r"\| achieved \(TFLOP/s\) \| [^|]+ \| [^|]+ \| [\d.]+ % ⚠ \|", report)
    # trials.json and the printout keep to what is measured: no derived repeats there
    results = load_group(group).runs.results
    assert "utilization.achieved_tflops" not in {
        s.metric for s in metric_spreads(results, requested=3)
    }


def test_a_single_run_has_no_spread_to_flag() -> None:
    assert spread_flags(load_group(REPORTS / "sweep-h100" / "bs-8")) == {}


def test_shown_names_and_units() -> None:
    assert (shown("latency_ns.p999").name, shown("latency_ns.p999").unit) == ("p99.9 latency", "ms")
    assert shown("latency_ns.p90").text(555_151.0) == "0.555 ms"
    assert shown("samples_per_second").text(803.3249) == "803.32 samples/s"
    assert shown("telemetry.sources.cpu.samples_per_second_per_watt").name == "efficiency, cpu"


def test_the_trials_printout_shows_latency_in_ms_by_its_name() -> None:
    # trials-epyc's trials.json is version 1: its p90 warning gives raw ns (2,514,879); the
    # printout reads the runs and says each metric in its shown unit, by its shown name
    text = render_group(load_group(REPORTS / "trials-epyc"), "trials-epyc")
    lines = text.splitlines()
    headline = "3 trials of early-stopping p90 latency (ms), lower is better (3 requested)"
    assert lines[1] == f"  {headline}"
    assert lines[2].split() == ["median", "best", "mean", "stdev", "CoV"]
    assert lines[3].split() == ["2.461", "2.448", "2.576", "0.210", "8.2", "%"]
    flag = "p90 latency: spread too large to trust: CoV 8.2 % >= 5 % over 3 trials"
    assert f"  warning: {flag} (mean 2.51 ms, stdev 0.205 ms)" in text
    assert "2,514,879" not in text and "latency_ns" not in text


def test_trials_json_records_a_spread_per_metric_and_old_files_still_read(tmp_path: Path) -> None:
    group = tmp_path / "trials-epyc"
    shutil.copytree(REPORTS / "trials-epyc", group)
    old = read_trials(group / "trials.json")  # schema_version 1: no spreads recorded
    assert old.spreads == ()
    results = [load_result(group / run) for run in old.runs]
    spreads = metric_spreads(results, requested=old.requested)
    write_trials(group / "trials.json", dataclasses.replace(old, spreads=spreads))
    data = json.loads((group / "trials.json").read_text())
    assert data["schema_version"] == 3
    p99 = next(s for s in data["spreads"] if s["metric"] == "latency_ns.p99")
    assert (p99["name"], p99["unit"], p99["scale"]) == ("p99 latency", "ms", 1e-6)
    assert p99["stats"]["values"] == [2950068.0, 2934669.0, 3378849.0]  # stored in ns
    assert read_trials(group / "trials.json").spreads == spreads
