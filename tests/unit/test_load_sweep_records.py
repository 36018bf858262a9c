"""The load sweep's pure parts: rates parsed, points from results, the knee, when to stop."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from harness.analysis.loadsweep import (
    AUTO_FRACTIONS,
    auto_rates,
    knee_qps,
    load_point,
    over_in_a_row,
    parse_rates,
)
from harness.errors import ResultError
from harness.records.loadsweep import LoadPoint, LoadSweep
from harness.report.loadtext import render_load
from harness.results.loadfile import LOAD_SCHEMA_VERSION, read_load, write_load
from harness.results.runfile import load_result
from tests.conftest import REPO

RUN = REPO / "tests" / "fixtures" / "results" / "tiny-singlestream"


def _point(qps: float, valid: int, trials: int = 2, p99_ms: float = 10.0) -> LoadPoint:
    return LoadPoint(
        target_qps=qps,
        dir=f"qps-{qps:g}",
        trials=trials,
        valid_trials=valid,
        completed_qps=qps * 0.99,
        p50_ns=p99_ms * 0.4e6,
        p90_ns=p99_ms * 0.8e6,
        p99_ns=p99_ms * 1e6,
    )


def test_rates_parse_increasing_positive_numbers_or_auto() -> None:
    assert parse_rates("2,4,8.5") == (2.0, 4.0, 8.5)
    assert parse_rates(" auto ") is None
    for bad, fragment in [
        ("2,x", "'x' is not a number"),
        ("0,2", "'0' is not a rate"),
        ("nan", "'nan' is not a rate"),
        ("inf", "'inf' is not a rate"),
        ("4,2", "must increase"),
        ("2,2", "must increase"),
    ]:
        with pytest.raises(ValueError, match=fragment):
            parse_rates(bad)


def test_auto_rates_span_the_peak_from_a_quarter_to_past_it() -> None:
    rates = auto_rates(40.0)
    assert rates == tuple(40.0 * f for f in AUTO_FRACTIONS)
    assert rates[0] == 10.0 and rates[-1] == 50.0 and 40.0 in rates


def test_the_knee_is_the_highest_rate_every_trial_met_and_two_misses_stop() -> None:
    points = [_point(10, 2), _point(20, 2), _point(30, 1), _point(40, 2), _point(50, 0)]
    assert knee_qps(points) == 40  # a flaky rate below does not hide a clean one above
    assert knee_qps([_point(10, 1)]) is None
    assert not over_in_a_row(points)  # one miss at the end
    assert over_in_a_row([*points, _point(60, 0)])
    assert not over_in_a_row([_point(60, 0)])


def test_a_point_takes_its_trials_medians_and_counts_the_valid() -> None:
    result = load_result(RUN)
    invalid = dataclasses.replace(result, outcome=dataclasses.replace(result.outcome, valid=False))
    point = load_point(5.0, "qps-5", [result, invalid, result])
    assert (point.trials, point.valid_trials, point.valid) == (3, 2, False)
    assert point.p99_ns == result.latency_ns.p99
    assert point.completed_qps == result.samples_per_second


def test_load_json_round_trips_and_refuses_another_kind(tmp_path: Path) -> None:
    sweep = LoadSweep(
        scenario_name="s",
        profile="quick",
        latency_bound_ns=15_000_000,
        requested_qps=(10.0, 20.0, 30.0),
        points=(_point(10, 2), _point(20, 0), _point(30, 0)),
        knee_qps=10.0,
        stopped="over_bound",
        peak_qps=24.0,
    )
    path = tmp_path / "load.json"
    write_load(path, sweep)
    assert read_load(path) == sweep
    data = json.loads(path.read_text())
    assert (data["kind"], data["schema_version"]) == ("load", LOAD_SCHEMA_VERSION)
    # a version 1 file (before a generative sweep's token figures) reads with none of them
    old = {
        k: v for k, v in data.items() if k not in ("ttft_limit_ns", "tpot_limit_ns", "interactive")
    }
    old["points"] = [{k: v for k, v in p.items() if k != "tokens"} for p in data["points"]]
    path.write_text(json.dumps({**old, "schema_version": 1}))
    assert read_load(path) == sweep
    path.write_text(json.dumps({**old, "schema_version": 2}))  # a 2 must have them
    with pytest.raises(ResultError, match="missing key"):
        read_load(path)
    path.write_text(json.dumps({**data, "kind": "sweep"}))
    with pytest.raises(ResultError, match=r"load\.json"):
        read_load(path)
    text = render_load(sweep, "DIR")
    assert text.splitlines()[0] == "DIR: load sweep, s: Server, p99 bound 15 ms"
    assert "knee: 10 qps" in text and "rates from the capacity search: 24 qps" in text
    assert "2 of 2" in text and "0 of 2" in text
