"""The physics check: achieved FLOP/s against what the machine can compute, as a Plausibility.

A SUT that answers without computing (a cache keyed by sample index, one answer for every
query) reports a speed that needs more arithmetic per second than the hardware has. The
ceiling is the measured attainable rate (a large GEMM through onnxruntime, the run's own
precision, providers and threads) and, where one is known, the peak. A model's kernels can
beat a plain GEMM a little (Winograd convolutions save up to 2.25x of a 3x3 convolution's
multiplies, about 1.3x over ResNet-50; structured sparsity 2x), so each ceiling has a margin
(README, Physics check: the honest ratios measured on the zoo models).
"""

from __future__ import annotations

import math
import types
from collections.abc import Mapping

from harness.errors import ImplausibleError
from harness.records.measures import Plausibility, Utilization
from harness.records.result import RunResult

# Achieved may reach this multiple of the measured GEMM rate before the run is IMPLAUSIBLE:
# honest runs reached 1.06x here, and a probe taken while other work shares the cores ran
# 1.8x slower (README, Physics check), which together come near 2x; the cheats ran at 30-94x.
PROBE_MARGIN = 3.0
# And this multiple of a peak: a datasheet's is a vendor's sum over every unit; a derived,
# guessed or user-given CPU peak may be wrong by a clock or a vector width (2x each way).
PEAK_MARGINS: Mapping[str, float] = types.MappingProxyType(
    {"datasheet": 2.0, "derived": 4.0, "guess": 4.0, "user": 4.0}
)
DEFAULT_PEAK_MARGIN = 4.0


def achieved_tflops(utilization: Utilization, samples_per_second: float | None) -> float | None:
    """Achieved TFLOP/s from the run's samples/s (LoadGen's figure) and the FLOPs per sample.

    The result's own ``achieved_tflops`` is used only where samples/s is not known: a gate
    judges from the number LoadGen logged, which bundle verification checks against its log.
    """
    flops = utilization.flops_per_sample
    if samples_per_second is not None and flops is not None:
        achieved: float | None = samples_per_second * flops / 1e12
    else:
        achieved = utilization.achieved_tflops
    return achieved if achieved is not None and _positive(achieved) else None


def judge(utilization: Utilization, samples_per_second: float | None) -> Plausibility:
    """IMPLAUSIBLE where achieved FLOP/s exceed a ceiling by more than its margin.

    The probe is judged first, then the peak; the verdict names the first ceiling broken, else
    the tighter of the two. Without FLOPs or any ceiling the verdict is "not judged", with why.
    """
    achieved = achieved_tflops(utilization, samples_per_second)
    if achieved is None:
        return Plausibility(
            verdict="not judged",
            figure=None,
            ratio=None,
            limit=None,
            reason="no achieved FLOP/s (samples/s or the FLOP count is unknown)",
        )
    ceilings = _ceilings(utilization)
    if not ceilings:
        return Plausibility(
            verdict="not judged",
            figure=f"achieved {achieved:.3g} TFLOP/s",
            ratio=None,
            limit=None,
            reason="neither a measured attainable rate nor a peak is known for this run",
        )
    judged = [(achieved / rate, margin, what, rate) for what, rate, margin in ceilings]
    broken = [j for j in judged if j[0] > j[1]]
    ratio, margin, what, rate = broken[0] if broken else max(judged, key=lambda j: j[0] / j[1])
    figure = f"achieved {achieved:.3g} TFLOP/s = {ratio:.2f}x the {what} ({rate:.3g} TFLOP/s)"
    if broken:
        return Plausibility(
            verdict="IMPLAUSIBLE",
            figure=figure,
            ratio=ratio,
            limit=margin,
            reason=(
                f"{ratio:.1f}x the {what}, above the {margin:g}x that a model's kernels can beat "
                "it by: the SUT answered faster than this machine computes (a cache of "
                "answers, or an answer not computed from its input); not a valid result"
            ),
        )
    return Plausibility(
        verdict="plausible",
        figure=figure,
        ratio=ratio,
        limit=margin,
        reason=f"within {margin:g}x of the {what}",
    )


def implausible(result: RunResult) -> Plausibility | None:
    """The IMPLAUSIBLE verdict that holds for ``result``, or None.

    The recorded verdict counts, and so does the check run again on the recorded figures: a
    result.json whose verdict was edited to "plausible" is judged by its numbers.
    """
    if result.plausibility.verdict == "IMPLAUSIBLE":
        return result.plausibility
    again = judge(result.utilization, result.samples_per_second)
    return again if again.verdict == "IMPLAUSIBLE" else None


def refuse_implausible(result: RunResult, where: str, what: str) -> None:
    """Raise ImplausibleError naming ``where`` and the figure when ``result`` is IMPLAUSIBLE.

    ``what`` is the artifact that refuses it ("bundled", "exported for MLPerf").
    """
    found = implausible(result)
    if found is None:
        return
    limit = "" if found.limit is None else f", limit {found.limit:g}x"
    raise ImplausibleError(
        f"{where}: IMPLAUSIBLE ({found.figure}{limit}): this machine cannot compute that fast, "
        f"so the run is not {what}; find what answered without inferring (a cache of answers?) "
        "and measure again"
    )


def _ceilings(utilization: Utilization) -> list[tuple[str, float, float]]:
    """(what, TFLOP/s, margin) of each ceiling the run has: the probe, then the peak."""
    found: list[tuple[str, float, float]] = []
    attainable, peak = utilization.attainable_tflops, utilization.peak_tflops
    if attainable is not None and _positive(attainable):
        found.append(("measured GEMM rate", attainable, PROBE_MARGIN))
    if peak is not None and _positive(peak):
        basis = utilization.peak_basis
        margin = DEFAULT_PEAK_MARGIN if basis is None else PEAK_MARGINS[basis]
        what = "peak" if basis is None else f"{basis} peak"
        found.append((what, peak, margin))
    return found


def _positive(value: float | None) -> bool:
    return value is not None and math.isfinite(value) and value > 0
