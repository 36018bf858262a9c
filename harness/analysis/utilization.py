"""Achieved TFLOP/s and the fraction of the peak it reaches, as a Utilization record."""

from __future__ import annotations

import math
from collections.abc import Sequence

from harness.analysis.peaks import Peak
from harness.records.measures import Utilization


def utilization(
    *,
    samples_per_second: float | None,
    flops_per_sample: float | None,
    peak: Peak | None,
    macs_per_sample: float | None = None,
    approximations: Sequence[str] = (),
    unknown_ops: Sequence[str] = (),
    attainable_tflops: float | None = None,
    attainable_method: str | None = None,
    attainable_missing: str | None = None,
) -> Utilization:
    """Achieved TFLOP/s (samples/s x FLOPs per sample) and the fraction of ``peak`` it is.

    Args:
        samples_per_second: The run's throughput; None when the run has none.
        flops_per_sample: FLOPs of one sample (see ``harness.analysis.flops``).
        peak: The dense peak for the precision used, or None when none is known.
        macs_per_sample: MACs of one sample, reported alongside when given.
        approximations: What the FLOP count approximated, one sentence each.
        unknown_ops: Op types the FLOP count had no rule for.
        attainable_tflops: The measured attainable rate (a GEMM probe), when there is one.
        attainable_method: How it was measured, one line.
        attainable_missing: Why there is none, when ``attainable_tflops`` is None.

    Returns:
        The record; a value that cannot be known is None (never 0), and ``note`` says why
        (None when nothing is missing).
    """
    reasons: list[str] = []
    sps = _positive(samples_per_second, "samples_per_second", reasons)
    flops = _positive(flops_per_sample, "flops_per_sample", reasons)
    macs = _positive(macs_per_sample, "macs_per_sample", reasons)
    achieved = None if sps is None or flops is None else sps * flops / 1e12
    if peak is None:
        reasons.append(
            "no peak known for this hardware and precision: set a peak override in the scenario"
        )
    fraction = None if achieved is None or peak is None else achieved / peak.tflops
    if fraction is not None and fraction > 1:
        # Either the peak's assumptions are wrong (VMs show the nominal clock, no boost) or
        # the run did not compute what it claims: the plausibility check tells them apart.
        reasons.append(
            f"achieved exceeds the peak ({fraction * 100:.0f} %): the peak's assumptions "
            "(often the clock) or the run itself is wrong; see plausibility"
        )
    elif peak is not None and peak.basis == "guess":
        reasons.append(
            "the peak is a guess (see peak_assumptions): the clock or vector width is not known "
            "here, so compare with the measured attainable rate"
        )
    attainable = _positive(attainable_tflops, "attainable_tflops", [])
    if attainable is None:
        reasons.append(f"no attainable rate: {attainable_missing or 'not measured'}")
    of_attainable = None if achieved is None or attainable is None else achieved / attainable
    if of_attainable is not None and of_attainable > 1:
        reasons.append(
            f"achieved exceeds the measured GEMM rate ({of_attainable * 100:.0f} %); see "
            "plausibility for whether this machine can compute that"
        )
    return Utilization(
        flops_per_sample=flops,
        macs_per_sample=macs,
        achieved_tflops=achieved,
        peak_name=None if peak is None else peak.name,
        peak_tflops=None if peak is None else peak.tflops,
        peak_precision=None if peak is None else peak.precision,
        peak_source=None if peak is None else peak.source,
        peak_assumptions=None if peak is None else peak.assumptions,
        peak_basis=None if peak is None else peak.basis,
        fraction_of_peak=fraction,
        attainable_tflops=attainable,
        attainable_method=None if attainable is None else attainable_method,
        fraction_of_attainable=of_attainable,
        note="; ".join(reasons) or None,
        approximations=tuple(approximations),
        unknown_ops=tuple(unknown_ops),
    )


def _positive(value: float | None, name: str, reasons: list[str]) -> float | None:
    """The value if it is a positive finite number; otherwise None and a reason."""
    if value is None:
        reasons.append(f"{name} unknown")
        return None
    if not math.isfinite(value) or value <= 0:
        reasons.append(f"{name} is {value}, not a positive number")
        return None
    return float(value)
