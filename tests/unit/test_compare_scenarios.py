"""compare shows each scenario's MLPerf metrics only, the verdict first, values in label order."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
from scipy import stats as scipy_stats

from harness.analysis import compare as compare_module
from harness.analysis.compare import compare
from harness.records.group import Group, RunSet
from harness.records.result import RunResult, ServerRecord
from harness.report.compare_render import render_compare_markdown, render_compare_text
from harness.results.groups import load_group
from harness.results.runfile import load_result

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REPORTS = FIXTURES / "reports"
TINY = FIXTURES / "results" / "tiny-singlestream"


def _ss_vs_offline() -> tuple[Group, Group]:
    return load_group(REPORTS / "trials-epyc"), load_group(REPORTS / "sweep-h100")


def _keys(groups: list[Group]) -> list[str]:
    return [row.metric.key for row in compare(groups).rows]


def test_mismatched_scenarios_compare_no_metric() -> None:
    c = compare(list(_ss_vs_offline()))
    assert c.rows == ()
    assert not c.comparable
    assert c.scenarios == ("SingleStream", "Offline")


def test_the_verdict_comes_before_any_number_in_text_and_markdown() -> None:
    c = compare(list(_ss_vs_offline()))
    for text in (render_compare_text(c, width=80), render_compare_markdown(c)):
        verdict = text.index("NOT COMPARABLE")
        assert verdict < text.index("scenario: 'SingleStream' != 'Offline'")
        assert "latency (ms)" not in text and "samples/s)" not in text  # no metric row
        assert "nothing is compared" in text


def test_singlestream_leads_with_the_early_stopping_p90_and_shows_no_throughput() -> None:
    keys = _keys([load_group(REPORTS / "trials-epyc"), load_group(REPORTS / "trials-xeon")])
    assert keys[:4] == [
        "latency_ns.early_stopping_p90",
        "latency_ns.p50",
        "latency_ns.p90",
        "latency_ns.p99",
    ]
    assert "samples_per_second" not in keys
    headline = compare([load_group(REPORTS / "trials-epyc"), load_group(REPORTS / "trials-xeon")])
    assert [row.headline for row in headline.rows][:2] == [True, False]


def test_offline_shows_samples_per_second_and_never_a_latency() -> None:
    keys = _keys([load_group(REPORTS / "sweep-h100" / "bs-1"), load_group(REPORTS / "sweep-h100")])
    assert keys[0] == "samples_per_second"
    assert not [k for k in keys if k.startswith("latency_ns.")]


def _server(result: RunResult, qps: float, p99_ns: int) -> RunResult:
    record = ServerRecord(
        target_qps=qps,
        target_qps_source="scenario",
        scheduled_samples_per_second=qps,
        completed_samples_per_second=qps * 0.99,
        latency_bound_ns=15_000_000,
        latency_percentile=99.0,
        latency_constraint_met=True,
        overlatency_queries=0,
        early_stopping_met=True,
        early_stopping_result="met",
        compiled_batch=1,
        max_batch=1,
        max_wait_ms=0.0,
        batching=None,
        batch_costs_ms={},
        queue_depth=1,
        workers=1,
        batches=1,
        mean_batch=1.0,
        batch_sizes={},
        queue_delay_ns=None,
        hold_ns=None,
    )
    latency = dataclasses.replace(result.latency_ns, p99=p99_ns)
    return dataclasses.replace(result, scenario="Server", server=record, latency_ns=latency)


def _group(label: str, results: list[RunResult]) -> Group:
    runs = RunSet(
        path=Path(label),
        run_dirs=tuple(Path(label) / f"t{i}" for i in range(len(results))),
        results=tuple(results),
        stats=None,
        metric=None,
        requested=len(results),
    )
    return Group(path=Path(label), kind="trials", label=label, runs=runs)


def test_server_shows_its_qps_and_the_latency_at_its_bound() -> None:
    # MLPerf (v4.1 on) reports Server's completed rate; the scheduled rate comes beside it
    base = load_result(TINY)
    a = _group("a", [_server(base, 100.0, 9_000_000), _server(base, 104.0, 9_500_000)])
    b = _group("b", [_server(base, 200.0, 12_000_000), _server(base, 190.0, 12_500_000)])
    c = compare([a, b])
    keys = [row.metric.key for row in c.rows]
    assert keys[:3] == [
        "server.completed_samples_per_second",
        "latency_ns.p99",
        "server.scheduled_samples_per_second",
    ]
    assert "samples_per_second" not in keys and "latency_ns.p50" not in keys
    assert [row.headline for row in c.rows][:2] == [True, False]
    completed = c.rows[0].cells[1]
    assert completed.value == pytest.approx(195.0 * 0.99)
    assert completed.ratio == pytest.approx(195.0 / 102.0)
    assert c.rows[2].cells[1].value == 195.0  # the scheduled rate
    assert dict(c.info)["latency bound"] == ("15.000 ms at p99", "15.000 ms at p99")


def test_difference_lines_give_values_in_the_order_of_their_labels() -> None:
    epyc, xeon = load_group(REPORTS / "trials-epyc"), load_group(REPORTS / "trials-xeon")
    assert epyc.results[0].versions.onnxruntime == "1.32.0"
    c = compare([epyc, xeon])
    assert c.problems == ()
    assert (c.pairs[0].first, c.pairs[0].other) == ("trials-epyc", "trials-xeon")
    assert "onnxruntime version: '1.32.0' != '1.31.1'" in c.pairs[0].intended
    assert c.hardware[0] == "trials-epyc vs trials-xeon: cpu.cores: 2 != 4"
    mismatch = compare(list(_ss_vs_offline()))
    assert mismatch.problems[0] == (
        "trials-epyc vs sweep-h100: scenario: 'SingleStream' != 'Offline'"
    )


def test_the_terminal_table_fits_80_columns_with_long_labels() -> None:
    long_a = dataclasses.replace(load_group(REPORTS / "trials-epyc"), label="a" * 70)
    long_b = dataclasses.replace(load_group(REPORTS / "trials-xeon"), label="b" * 70)
    third = load_group(REPORTS / "trials-epyc")
    for groups in ([long_a, long_b], [long_a, long_b, third]):
        text = render_compare_text(compare(groups), width=80)
        too_wide = [line for line in text.splitlines() if len(line) > 80]
        assert too_wide == []
        assert "early-stopping p90" in text


def test_ratio_interval_with_an_exact_reference_is_the_t_interval_of_the_other() -> None:
    a, b = [2.0, 2.0, 2.0], [3.0, 3.5, 4.0, 3.7]
    low, high = compare_module.ratio_interval(a, b, confidence=0.95)
    mean_b = sum(b) / len(b)
    se_b = float(scipy_stats.sem(b))
    t = float(scipy_stats.t.ppf(0.975, len(b) - 1))
    assert low == pytest.approx((mean_b - t * se_b) / 2.0)
    assert high == pytest.approx((mean_b + t * se_b) / 2.0)


def test_ratio_interval_bounds_solve_fiellers_equation() -> None:
    a, b = [10.0, 11.0, 10.5], [20.0, 22.5, 21.0]
    low, high = compare_module.ratio_interval(a, b, confidence=0.95)
    ma, mb = sum(a) / 3, sum(b) / 3
    va, vb = float(scipy_stats.sem(a)) ** 2, float(scipy_stats.sem(b)) ** 2
    ratio = mb / ma
    df = (vb + ratio**2 * va) ** 2 / (vb**2 / 2 + ratio**4 * va**2 / 2)
    t = float(scipy_stats.t.ppf(0.975, df))
    for bound in (low, high):
        assert (mb - bound * ma) ** 2 == pytest.approx(t**2 * (vb + bound**2 * va))
    assert low < ratio < high


def test_ratio_interval_needs_two_values_and_a_reference_clear_of_zero() -> None:
    assert compare_module.ratio_interval([1.0], [2.0, 3.0]) is None
    low, high = compare_module.ratio_interval([0.1, -0.1, 0.05], [1.0, 1.1, 1.2])
    assert math.isinf(low) and math.isinf(high)
