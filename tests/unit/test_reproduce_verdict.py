"""The verdict of a reproduction, from records: tolerance, t-test, comparability, failed trials."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.analysis.welch import welch_t_test
from harness.errors import (
    BROKEN_PIPE,
    CRASHED,
    ERROR_CODES,
    INVALID,
    STOP_SIGNALS,
    ConfigError,
    DependencyError,
)
from harness.records.fingerprint import Fingerprint
from harness.records.measures import CalibrationRecord
from harness.records.result import RunResult, ServerRecord
from harness.reproduce.codes import VERDICT_CODES, VERDICTS
from harness.reproduce.tolerance import Tolerance, parse_tolerance
from harness.reproduce.verdict import Evidence, Reproduction, judge
from harness.results.runfile import load_result

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "results" / "tiny-singlestream"
BASE = load_result(TINY)  # SingleStream: judged by MLPerf's early-stopping p90 latency


def ss(p90: float, run_id: str = "trial-1", **changes: Any) -> RunResult:
    """The fixture's SingleStream result with another p90 and early-stopping p90 (ns)."""
    latency = dataclasses.replace(BASE.latency_ns, p90=int(p90), early_stopping_p90=int(p90))
    return dataclasses.replace(BASE, run_id=run_id, latency_ns=latency, **changes)


def offline(samples_per_second: float, run_id: str = "trial-1") -> RunResult:
    settings = {**BASE.settings, "scenario": "Offline", "min_sample_count": 4000}
    return dataclasses.replace(
        BASE,
        run_id=run_id,
        scenario="Offline",
        samples_per_second=samples_per_second,
        settings=settings,
    )


def side(
    *results: RunResult,
    requested: int | None = None,
    failures: tuple[str, ...] = (),
    settings: tuple[Any, ...] | None = None,
) -> Evidence:
    return Evidence(
        path="results/runs/x",
        results=results,
        settings=settings if settings is not None else tuple(r.settings for r in results),
        requested=len(results) if requested is None else requested,
        failures=failures,
    )


def trials(values: list[float]) -> Evidence:
    return side(*(ss(v, f"trial-{i}") for i, v in enumerate(values, start=1)))


# --- within and outside the tolerance ----------------------------------------------------------


def test_a_recorded_value_within_the_tolerance_is_reproduced() -> None:
    rep = judge(side(ss(500_000)), trials([510_000, 520_000, 490_000]), Tolerance())
    assert (rep.verdict, rep.exit_code, rep.reasons) == ("REPRODUCED", 0, ())
    assert (rep.metric, rep.unit, rep.tolerance_key, rep.tolerance) == (
        "latency_ns.early_stopping_p90",
        "ns",
        "latency",
        0.05,
    )
    assert rep.recorded_values == (500_000.0,) and rep.recorded_value == 500_000
    spread = rep.reproduced
    assert spread is not None
    assert (spread.values, spread.min, spread.median, spread.max) == (
        (510_000.0, 520_000.0, 490_000.0),
        490_000.0,
        510_000.0,
        520_000.0,
    )
    assert spread.cov == pytest.approx(15275.252 / 506666.667, rel=1e-6)  # sample stdev / mean
    assert rep.ratio == 500_000 / 510_000
    assert rep.deviation == pytest.approx(10_000 / 510_000)
    assert rep.welch is None  # only a NOT REPRODUCED carries the t-test


def test_the_edge_of_the_tolerance_is_inside_it() -> None:
    rep = judge(side(ss(105)), trials([100]), Tolerance(latency_fraction=0.05))
    assert rep.deviation == pytest.approx(0.05) and rep.verdict == "REPRODUCED"


def test_outside_the_tolerance_is_not_reproduced_with_the_ratio() -> None:
    rep = judge(side(ss(600_000)), trials([500_000, 500_000]), Tolerance())
    assert (rep.verdict, rep.exit_code) == ("NOT REPRODUCED", 30)
    assert rep.ratio == 1.2 and rep.deviation == pytest.approx(0.2)
    assert rep.reasons == (
        "the recorded early-stopping p90 latency is 20.0 % from the reproduction's median, "
        "outside the latency tolerance of 5 %",
    )
    assert rep.welch is not None
    assert (rep.welch.t_statistic, rep.welch.p_value) == (None, None)
    assert rep.welch.note == (
        "Welch's t-test needs >= 2 trials on each side (recorded 1, reproduced 2)"
    )


def test_throughput_scenarios_use_the_offline_tolerance() -> None:
    recorded, reproduced = side(offline(100.0)), side(offline(104.0))
    rep = judge(recorded, reproduced, Tolerance())  # 3 %: 100 is 3.8 % from 104
    assert (rep.verdict, rep.metric, rep.tolerance_key) == (
        "NOT REPRODUCED",
        "samples_per_second",
        "throughput",
    )
    assert rep.ratio == 100.0 / 104.0
    wider = judge(recorded, reproduced, parse_tolerance("offline=5%"))
    assert (wider.verdict, wider.tolerance) == ("REPRODUCED", 0.05)
    # the latency tolerance does not apply to a throughput scenario
    assert judge(recorded, reproduced, parse_tolerance("latency=50%")).verdict == "NOT REPRODUCED"


def test_a_recorded_group_is_compared_by_its_median_with_welchs_t_test() -> None:
    recorded = trials([600_000, 610_000, 590_000])
    reproduced = trials([500_000, 505_000, 495_000])
    rep = judge(recorded, reproduced, Tolerance())
    assert rep.verdict == "NOT REPRODUCED"
    assert rep.recorded_value == 600_000 and rep.ratio == 600_000 / 500_000
    t, p = welch_t_test([600_000, 610_000, 590_000], [500_000, 505_000, 495_000])
    assert rep.welch is not None
    assert (rep.welch.t_statistic, rep.welch.p_value) == (t, p)
    assert p < 0.05 and rep.welch.note == "significant at 5 %"


def test_a_group_within_the_tolerance_needs_no_t_test() -> None:
    rep = judge(trials([500, 510, 490]), trials([505, 500]), Tolerance())
    assert rep.verdict == "REPRODUCED" and rep.welch is None and rep.recorded_value == 500


def test_identical_trials_on_both_sides_give_an_infinite_t_as_null() -> None:
    rep = judge(trials([600, 600]), trials([500, 500]), Tolerance())
    assert rep.welch is not None
    assert (rep.welch.t_statistic, rep.welch.p_value) == (None, 0.0)
    assert "neither side varies" in rep.welch.note


def test_the_t_test_without_scipy_is_a_dependency_error_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "scipy", None)  # `import scipy` now fails
    with pytest.raises(DependencyError, match=r"beyond-tops\[report\]"):
        judge(trials([600, 610]), trials([500, 505]), Tolerance())
    # a verdict that needs no t-test needs no scipy
    assert judge(trials([500, 510]), trials([505, 500]), Tolerance()).verdict == "REPRODUCED"


# --- not comparable ----------------------------------------------------------------------------


def test_another_model_file_is_not_comparable_and_still_shows_the_ratio() -> None:
    other = "ab" * 32
    changed = ss(
        500_000,
        model=dataclasses.replace(BASE.model, sha256=other),
        precision=dataclasses.replace(BASE.precision, sha256=other, source_sha256=other),
    )
    rep = judge(side(ss(500_000)), side(changed), Tolerance())
    assert (rep.verdict, rep.exit_code) == ("NOT COMPARABLE", 31)
    sha = BASE.model.sha256
    assert rep.reasons == (
        f"model sha256 (the measured file): {sha!r} != {other!r}",
        f"source model sha256: {sha!r} != {other!r}",
    )
    assert rep.ratio == 1.0 and rep.welch is None


def test_another_precision_or_recipe_is_not_comparable() -> None:
    recipe = dataclasses.replace(
        BASE.precision.recipe, method="static-minmax", params={"seed": 0}, precision="int8"
    )
    changed = ss(
        500_000,
        model=dataclasses.replace(BASE.model, precision="int8"),
        precision=dataclasses.replace(BASE.precision, precision="int8", recipe=recipe),
    )
    rep = judge(side(ss(500_000)), side(changed), Tolerance())
    assert rep.verdict == "NOT COMPARABLE"
    assert rep.reasons == (
        "precision: 'fp32' != 'int8'",
        "precision recipe: 'none {}' != 'static-minmax {\"seed\": 0}'",
    )


def test_other_calibration_indices_are_not_comparable() -> None:
    def calibrated(indices: tuple[int, ...]) -> RunResult:
        record = CalibrationRecord(
            seed=0, count=4, indices=indices, source="synthetic data, seed 0", sha256="cd" * 32
        )
        return ss(500, precision=dataclasses.replace(BASE.precision, calibration=record))

    same = judge(side(calibrated((1, 2, 3, 4))), side(calibrated((1, 2, 3, 4))), Tolerance())
    assert same.verdict == "REPRODUCED"
    rep = judge(side(calibrated((1, 2, 3, 4))), side(calibrated((1, 2, 3, 5))), Tolerance())
    assert rep.verdict == "NOT COMPARABLE"
    assert len(rep.reasons) == 1 and rep.reasons[0].startswith("calibration: '4 samples, seed 0")


def test_logged_settings_that_differ_are_not_comparable_unless_derived_from_the_speed() -> None:
    recorded = side(ss(500))
    derived = {**BASE.settings, "target_latency_ns": 123, "target_qps": 9.0, "min_sample_count": 7}
    assert judge(recorded, side(ss(500), settings=(derived,)), Tolerance()).verdict == (
        "REPRODUCED"
    )
    changed = {**BASE.settings, "min_duration_ms": 600000, "qsl_rng_seed": 1}
    rep = judge(recorded, side(ss(500), settings=(changed,)), Tolerance())
    assert rep.verdict == "NOT COMPARABLE"
    assert rep.reasons == (
        "LoadGen setting min_duration_ms: 1000 != 600000",
        "LoadGen setting qsl_rng_seed: 2085463073848966840 != 1",
    )


def test_servers_rate_is_part_of_its_job() -> None:
    def server(qps: float) -> RunResult:
        settings = {**BASE.settings, "scenario": "Server", "target_qps": qps}
        record = ServerRecord(
            **{f.name: None for f in dataclasses.fields(ServerRecord)}  # type: ignore[arg-type]
        )
        record = dataclasses.replace(
            record, target_qps=qps, completed_samples_per_second=100.0, batch_costs_ms={}
        )
        return dataclasses.replace(
            BASE, scenario="Server", samples_per_second=100.0, settings=settings, server=record
        )

    rep = judge(side(server(100.0)), side(server(85.0)), Tolerance())
    assert rep.verdict == "NOT COMPARABLE"
    assert rep.reasons == ("LoadGen setting target_qps: 100.0 != 85.0",)


# --- failed trials -----------------------------------------------------------------------------


def test_an_invalid_trial_is_not_reproduced_even_within_the_tolerance() -> None:
    outcome = dataclasses.replace(
        BASE.outcome, valid=False, invalid_reasons=("Min duration not met",)
    )
    reproduced = side(ss(500, "trial-1"), ss(500, "trial-2", outcome=outcome))
    rep = judge(side(ss(500)), reproduced, Tolerance())
    assert rep.verdict == "NOT REPRODUCED" and rep.deviation == 0.0
    assert rep.reasons == ("trial-2 is INVALID per LoadGen (Min duration not met)",)


def test_incomplete_trials_are_not_reproduced() -> None:
    reproduced = side(
        ss(500),
        requested=3,
        failures=("trial-2 is INCOMPLETE (failed: killed by signal 9)",),
    )
    rep = judge(side(ss(500)), reproduced, Tolerance())
    assert rep.verdict == "NOT REPRODUCED"
    assert rep.reasons == (
        "trial-2 is INCOMPLETE (failed: killed by signal 9)",
        "only 1 of 3 trials left a result",
    )
    assert rep.reproduced is not None and rep.reproduced.values == (500.0,)


def test_no_finished_trial_is_not_reproduced_without_a_ratio() -> None:
    rep = judge(side(ss(500)), side(requested=2), Tolerance())
    assert (rep.verdict, rep.reproduced, rep.ratio) == ("NOT REPRODUCED", None, None)
    assert rep.reasons == ("only 0 of 2 trials left a result",)


def test_a_recorded_invalid_run_is_said() -> None:
    outcome = dataclasses.replace(BASE.outcome, valid=False, invalid_reasons=("x",))
    rep = judge(side(ss(500, "rec", outcome=outcome)), trials([500]), Tolerance())
    assert rep.explanations[0] == "the recorded rec was INVALID per LoadGen"


# --- explanations ------------------------------------------------------------------------------


def _with_cpu(result: RunResult, **cpu: Any) -> RunResult:
    data = dict(result.fingerprint.data)
    data["cpu"] = {**data["cpu"], **cpu}
    return dataclasses.replace(result, fingerprint=Fingerprint(data=data))


def test_hardware_differences_explain_and_never_decide() -> None:
    recorded = _with_cpu(ss(500), governor="performance", max_mhz=3000, current_mhz=2000.0)
    near = _with_cpu(ss(505), governor="powersave", max_mhz=2000, current_mhz=2050.0)
    rep = judge(side(recorded), side(near), Tolerance())
    assert rep.verdict == "REPRODUCED"
    assert rep.explanations == (
        "cpu.governor: 'performance' != 'powersave'",
        "cpu.max_mhz: 3000 != 2000",
    )  # a current clock 2.5 % off is noise
    far = _with_cpu(ss(900), governor="powersave", max_mhz=3000, current_mhz=1000.0)
    rep = judge(side(recorded), side(far), Tolerance())
    assert rep.verdict == "NOT REPRODUCED"
    assert rep.explanations == (
        "cpu.governor: 'performance' != 'powersave'",
        "cpu.current_mhz (at collection): 2000.0 != 1000.0",
    )


def test_a_preflight_problem_of_one_side_only_is_listed() -> None:
    load, quick = BASE.preflight  # the fixture ran on a busy machine, in the quick profile
    idle = ss(500, preflight=(quick,))
    rep = judge(side(idle), side(ss(500)), Tolerance())
    assert rep.explanations == (f"reproduction preflight: {load.message}",)
    rep = judge(side(ss(500)), side(idle), Tolerance())
    assert rep.explanations == (f"recorded preflight: {load.message}",)


# --- --tolerance -------------------------------------------------------------------------------


def test_tolerance_defaults_and_parsing() -> None:
    assert parse_tolerance(None) == Tolerance(throughput_fraction=0.03, latency_fraction=0.05)
    assert parse_tolerance("offline=50%") == Tolerance(throughput_fraction=0.5)
    assert parse_tolerance(" latency=2.5% , throughput=10% ") == Tolerance(
        throughput_fraction=0.1, latency_fraction=0.025
    )
    assert parse_tolerance("offline=0%,latency=100%").describe() == "offline=0%,latency=100%"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("offline", "'offline' is not KEY=PERCENT"),
        ("offline=3", "'offline=3': '3' is not a percentage such as 3% or 2.5%"),
        ("offline=-1%", "'offline=-1%': '-1%' is not a percentage"),
        ("offline=x%", "'offline=x%': 'x%' is not a percentage"),
        ("speed=3%", "'speed=3%': unknown key 'speed' (allowed: offline, throughput, latency)"),
        ("offline=3%,,latency=5%", "has an empty part"),
        ("offline=3%,throughput=4%", "'throughput=4%' sets the throughput tolerance a second"),
        ("latency=150%", "'latency=150%': must be 0% to 100%, got 150%"),
    ],
)
def test_a_bad_tolerance_is_one_line_naming_the_part(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_tolerance(text)
    assert str(caught.value).startswith("--tolerance: ")
    assert message in str(caught.value) and "\n" not in str(caught.value)


# --- exit codes --------------------------------------------------------------------------------


def test_verdict_codes_are_distinct_from_every_error_and_reserved_code() -> None:
    codes = [VERDICT_CODES[v].code for v in VERDICTS]
    assert codes == [0, 30, 31]
    taken = {e.code for e in (INVALID, CRASHED, BROKEN_PIPE, *STOP_SIGNALS.values())}
    taken |= {e.code for e in ERROR_CODES.values()}
    assert not set(codes[1:]) & taken


def test_each_verdict_has_its_exit_code() -> None:
    near = judge(side(ss(500)), trials([500]), Tolerance())
    assert isinstance(near, Reproduction) and near.exit_code == VERDICT_CODES[near.verdict].code
