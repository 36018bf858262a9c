"""The physics check: achieved FLOP/s against the measured GEMM rate and the peak, with margins."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from harness.analysis.plausibility import PROBE_MARGIN, implausible, judge, refuse_implausible
from harness.analysis.utilization import utilization
from harness.cli import main
from harness.errors import ERROR_CODES, ImplausibleError
from harness.records.measures import Plausibility, Utilization
from harness.records.result import RunResult
from harness.report.html import render_html
from harness.report.summary import render_summary
from harness.results.groups import load_group
from harness.results.runfile import load_result, to_dict, write_result
from harness.submission.plan import plan_export

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "results" / "tiny-singlestream-v3"
FLOPS = 8.2e9  # ResNet-50's FLOPs per sample


def _util(
    sps: float,
    *,
    attainable: float | None = 0.31,
    peak: float | None = None,
    basis: str | None = None,
) -> Utilization:
    block = utilization(
        samples_per_second=sps,
        flops_per_sample=FLOPS,
        peak=None,
        attainable_tflops=attainable,
        attainable_method="onnxruntime GEMM probe",
    )
    return dataclasses.replace(block, peak_tflops=peak, peak_basis=basis)  # type: ignore[arg-type]


def test_an_honest_rate_is_plausible_and_names_its_figure() -> None:
    found = judge(_util(29.0), 29.0)  # 0.238 TFLOP/s of a 0.31 probe: 0.77x
    assert found.verdict == "plausible" and found.limit == PROBE_MARGIN == 3.0
    assert found.ratio == pytest.approx(29.0 * FLOPS / 1e12 / 0.31)
    assert found.figure == "achieved 0.238 TFLOP/s = 0.77x the measured GEMM rate (0.31 TFLOP/s)"


def test_the_cached_resnet50_of_issue_25_is_implausible() -> None:
    # 87x the honest SingleStream speed: 10.5 TFLOP/s against a 0.31 TFLOP/s GEMM probe.
    sps = 10.5e12 / FLOPS
    found = judge(_util(sps), sps)
    assert found.verdict == "IMPLAUSIBLE" and found.limit == 3.0
    assert found.ratio == pytest.approx(10.5 / 0.31)
    assert found.figure == "achieved 10.5 TFLOP/s = 33.87x the measured GEMM rate (0.31 TFLOP/s)"
    assert "faster than this machine computes" in found.reason


@pytest.mark.parametrize(("ratio", "verdict"), [(2.99, "plausible"), (3.01, "IMPLAUSIBLE")])
def test_the_probe_margin_is_the_line(ratio: float, verdict: str) -> None:
    sps = ratio * 0.31e12 / FLOPS
    assert judge(_util(sps), sps).verdict == verdict


@pytest.mark.parametrize(
    ("basis", "ratio", "verdict"),
    [
        ("guess", 3.9, "plausible"),
        ("guess", 4.1, "IMPLAUSIBLE"),
        ("derived", 4.1, "IMPLAUSIBLE"),
        ("datasheet", 1.9, "plausible"),
        ("datasheet", 2.1, "IMPLAUSIBLE"),
        (None, 4.1, "IMPLAUSIBLE"),
    ],
)
def test_without_a_probe_the_peak_and_its_basis_set_the_margin(
    basis: str | None, ratio: float, verdict: str
) -> None:
    sps = ratio * 1.0e12 / FLOPS
    found = judge(_util(sps, attainable=None, peak=1.0, basis=basis), sps)
    assert found.verdict == verdict, found
    assert found.figure is not None and "peak (1 TFLOP/s)" in found.figure


def test_a_peak_broken_below_the_probe_margin_still_fails() -> None:
    # 1.5x the probe is allowed, 2.5x a datasheet peak is not: the first broken ceiling counts.
    sps = 2.5e12 / FLOPS
    found = judge(_util(sps, attainable=1.67, peak=1.0, basis="datasheet"), sps)
    assert found.verdict == "IMPLAUSIBLE" and found.limit == 2.0
    assert found.figure is not None and "datasheet peak" in found.figure


def test_nothing_to_judge_by_says_why() -> None:
    none = judge(_util(10.0, attainable=None), 10.0)
    assert none.verdict == "not judged" and none.ratio is None and "neither" in none.reason
    unknown = judge(
        dataclasses.replace(_util(10.0), flops_per_sample=None, achieved_tflops=None), None
    )
    assert unknown.verdict == "not judged" and "FLOP" in unknown.reason


def test_samples_per_second_wins_over_an_edited_achieved_figure() -> None:
    sps = 10.5e12 / FLOPS
    edited = dataclasses.replace(_util(sps), achieved_tflops=0.2)
    assert judge(edited, sps).verdict == "IMPLAUSIBLE"


def _cached(result: RunResult) -> RunResult:
    """The fixture run as a cache would report it: 40x its GEMM probe."""
    util = dataclasses.replace(result.utilization, attainable_tflops=0.0043)
    return dataclasses.replace(
        result, utilization=util, plausibility=judge(util, result.samples_per_second)
    )


def test_a_verdict_edited_to_plausible_is_judged_by_its_numbers() -> None:
    cached = _cached(load_result(FIXTURE))
    assert cached.plausibility.verdict == "IMPLAUSIBLE"
    edited = dataclasses.replace(
        cached,
        plausibility=Plausibility(
            verdict="plausible", figure=None, ratio=None, limit=None, reason="edited"
        ),
    )
    found = implausible(edited)
    assert found is not None and found.verdict == "IMPLAUSIBLE"
    with pytest.raises(ImplausibleError) as info:
        refuse_implausible(edited, "RUN", "bundled")
    assert str(info.value).startswith("RUN: IMPLAUSIBLE (achieved 0.172 TFLOP/s = 39.94x")
    assert "limit 3x): this machine cannot compute that fast, so the run is not bundled" in str(
        info.value
    )
    assert info.value.exit_code == ERROR_CODES[ImplausibleError].code == 29


def test_a_schema_5_result_is_judged_when_read(tmp_path: Path) -> None:
    data = to_dict(_cached(load_result(FIXTURE)))
    del data["plausibility"]
    data["schema_version"] = 5
    (tmp_path / "result.json").write_text(json.dumps(data))
    found = load_result(tmp_path).plausibility
    assert found.verdict == "IMPLAUSIBLE" and found.ratio == pytest.approx(40, rel=0.01)


def test_show_and_report_name_the_figure_and_html_shows_it_red(tmp_path: Path) -> None:
    cached = _cached(load_result(FIXTURE))
    text = render_summary(cached)
    assert "quick profile - NOT submission-valid; IMPLAUSIBLE (see physics)" in text
    assert "  physics     IMPLAUSIBLE: achieved 0.172 TFLOP/s = 39.94x" in text
    write_result(cached, tmp_path)
    page = render_html([load_group(tmp_path)])
    assert '<td class="implausible">IMPLAUSIBLE: 39.94x' in page
    assert '<p class="implausible">IMPLAUSIBLE: achieved 0.172 TFLOP/s' in page
    assert "1/1 VALID, quick profile, 1/1 IMPLAUSIBLE" in page


def test_the_mlperf_export_refuses_an_implausible_trial_of_a_group(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = load_result(FIXTURE)
    resnet = dataclasses.replace(
        base, loadgen_config=dataclasses.replace(base.loadgen_config, model_key="resnet50")
    )
    write_result(resnet, _mkdir(tmp_path / "honest"))
    write_result(_cached(resnet), _mkdir(tmp_path / "cached"))
    out = tmp_path / "tree"
    args = ["submission", "--org", "B", "--system", "s", "--division", "open", "--force-quick"]
    assert main([*args, str(tmp_path / "cached"), "--out", str(out)]) == 29
    err = capsys.readouterr().err
    assert f"error: {tmp_path / 'cached'}: IMPLAUSIBLE (achieved 0.172 TFLOP/s = 39.94x" in err
    assert "so the run is not exported for MLPerf" in err and not out.exists()
    honest = [tmp_path / "honest"]
    plan = plan_export(honest, division="open", org="B", system="s", force_quick=True)
    assert plan.entries[0].result.plausibility.verdict == "plausible"


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True)
    return path
