"""The regression gate's verdict as the one line `compare --fail-if-slower` prints."""

from __future__ import annotations

from harness.records.regression import Regression


def regression_line(verdict: Regression) -> str:
    """The verdict, the ratio, the threshold and the noise rule, in one line.

    E.g. ``gate: SLOWER: throughput NEW/BASE 0.420x, beyond the 5% threshold (slower below
    0.950x); noise: 95% interval of the ratio 0.400x-0.440x (Fieller), wholly beyond 0.950x``.
    """
    word = "SLOWER" if verdict.slower else "not slower"
    side = "below" if verdict.higher_is_better else "above"
    ratio, limit = verdict.ratio, verdict.limit
    beyond = ratio < limit if verdict.higher_is_better else ratio > limit
    return (
        f"gate: {word}: {verdict.label} NEW/BASE {verdict.ratio:.3f}x, "
        f"{'beyond' if beyond else 'within'} the {_percent(verdict.threshold)} threshold "
        f"(slower {side} {verdict.limit:.3f}x); noise: {_noise(verdict)}"
    )


def _noise(verdict: Regression) -> str:
    confidence = _percent(verdict.confidence)
    if verdict.noise == "unknown":
        return "unknown (a side has one result, no trials): the threshold alone decides"
    low, high = verdict.interval or (None, None)
    if verdict.noise == "unbounded" or low is None or high is None:
        return (
            f"the {confidence} interval of the ratio is unbounded (BASE's mean is not clear "
            "of zero): too noisy to call slower"
        )
    where = "wholly beyond" if verdict.interval_beyond else "not wholly beyond"
    interval = f"{low:.3f}x-{high:.3f}x"
    return f"{confidence} interval of the ratio {interval} (Fieller), {where} {verdict.limit:.3f}x"


def _percent(fraction: float) -> str:
    return f"{fraction * 100:g}%"
