"""Achieved TFLOP/s and utilization: exact arithmetic and explicit nulls."""

from __future__ import annotations

import math

import pytest

from harness.analysis.peaks import Peak
from harness.analysis.utilization import utilization
from harness.records.measures import Utilization

PEAK = Peak(name="Test GPU", precision="fp16", tflops=16.0, source="datasheet", assumptions="a")


def test_exact_utilization() -> None:
    # 1000 samples/s x 8 GFLOP = 8 TFLOP/s of a 16 TFLOP/s peak.
    out = utilization(
        samples_per_second=1000.0,
        flops_per_sample=8e9,
        peak=PEAK,
        macs_per_sample=4e9,
        approximations=["bias adds not counted"],
        unknown_ops=["Foo"],
        attainable_tflops=10.0,
        attainable_method="probe",
    )
    assert out == Utilization(
        flops_per_sample=8e9,
        macs_per_sample=4e9,
        achieved_tflops=8.0,
        peak_name="Test GPU",
        peak_tflops=16.0,
        peak_precision="fp16",
        peak_source="datasheet",
        peak_assumptions="a",
        peak_basis="datasheet",
        fraction_of_peak=0.5,
        attainable_tflops=10.0,
        attainable_method="probe",
        fraction_of_attainable=0.8,
        note=None,
        approximations=("bias adds not counted",),
        unknown_ops=("Foo",),
    )


def test_no_peak_leaves_utilization_null() -> None:
    out = utilization(samples_per_second=10.0, flops_per_sample=1e12, peak=None, macs_per_sample=1)
    assert out.achieved_tflops == 10.0
    assert out.fraction_of_peak is None
    assert out.peak_tflops is None
    assert out.peak_source is None
    assert out.note is not None and "override" in out.note


def test_no_throughput_is_null_not_zero() -> None:
    out = utilization(samples_per_second=None, flops_per_sample=8e9, peak=PEAK)
    assert out.achieved_tflops is None
    assert out.fraction_of_peak is None
    assert out.peak_tflops == 16.0
    assert out.note is not None and "samples_per_second unknown" in out.note
    assert "macs_per_sample unknown" in out.note


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf])
def test_non_positive_or_non_finite_values_are_null(bad: float) -> None:
    out = utilization(samples_per_second=bad, flops_per_sample=8e9, peak=PEAK, macs_per_sample=1)
    assert out.achieved_tflops is None
    assert out.fraction_of_peak is None
    assert out.note is not None and "samples_per_second is" in out.note


def test_unknown_flops_is_null() -> None:
    out = utilization(samples_per_second=5.0, flops_per_sample=None, peak=PEAK, macs_per_sample=1)
    assert out.flops_per_sample is None
    assert out.achieved_tflops is None
    assert out.note == "flops_per_sample unknown; no attainable rate: not measured"


def test_a_result_above_the_peak_points_to_the_plausibility_check() -> None:
    # 3000 samples/s x 8 GFLOP = 24 TFLOP/s of a "16 TFLOP/s peak": 150 %.
    out = utilization(
        samples_per_second=3000.0, flops_per_sample=8e9, macs_per_sample=4e9, peak=PEAK
    )
    assert out.fraction_of_peak == 1.5
    assert out.note is not None
    assert out.note.startswith("achieved exceeds the peak (150 %): the peak's assumptions")
    assert "or the run itself is wrong; see plausibility" in out.note
    kept = utilization(
        samples_per_second=2000.0,
        flops_per_sample=8e9,
        macs_per_sample=4e9,
        peak=PEAK,
        attainable_tflops=20.0,
    )
    assert kept.note is None


GUESS = Peak(name="VM CPU", precision="fp32", tflops=0.16, source="derived", basis="guess")


def test_a_guessed_peak_is_said_to_be_a_guess_and_the_attainable_rate_stands_beside_it() -> None:
    # 20 samples/s x 7.5 GFLOP = 0.15 TFLOP/s: 93.75 % of a guessed 0.16, 75 % of 0.2 measured.
    out = utilization(
        samples_per_second=20.0,
        flops_per_sample=7.5e9,
        macs_per_sample=3.75e9,
        peak=GUESS,
        attainable_tflops=0.2,
        attainable_method="onnxruntime GEMM probe ...",
    )
    assert out.peak_basis == "guess"
    assert out.fraction_of_peak == pytest.approx(0.9375)
    assert out.fraction_of_attainable == pytest.approx(0.75)
    assert out.attainable_method == "onnxruntime GEMM probe ..."
    assert out.note is not None and out.note.startswith("the peak is a guess")
    assert "measured attainable rate" in out.note


def test_a_missing_attainable_rate_is_null_and_says_why() -> None:
    out = utilization(
        samples_per_second=20.0,
        flops_per_sample=7.5e9,
        macs_per_sample=1.0,
        peak=PEAK,
        attainable_missing="no GEMM probe for bf16",
    )
    assert out.attainable_tflops is None and out.fraction_of_attainable is None
    assert out.attainable_method is None
    assert out.note == "no attainable rate: no GEMM probe for bf16"


@pytest.mark.parametrize("bad", [0.0, -2.0, math.nan, math.inf])
def test_a_non_finite_attainable_rate_is_null(bad: float) -> None:
    out = utilization(
        samples_per_second=20.0,
        flops_per_sample=7.5e9,
        macs_per_sample=1.0,
        peak=PEAK,
        attainable_tflops=bad,
        attainable_method="m",
    )
    assert out.attainable_tflops is None and out.fraction_of_attainable is None
    assert out.attainable_method is None


def test_above_the_attainable_rate_is_explained() -> None:
    out = utilization(
        samples_per_second=20.0,
        flops_per_sample=7.5e9,
        macs_per_sample=1.0,
        peak=PEAK,
        attainable_tflops=0.1,
        attainable_method="m",
    )
    assert out.fraction_of_attainable == pytest.approx(1.5)
    assert out.note is not None and "exceeds the measured GEMM rate (150 %)" in out.note
