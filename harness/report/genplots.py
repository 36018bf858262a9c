"""A generative run's figures from its token stamps: TTFT and TPOT by percentile, tokens/s.

Drawn from each run's token_times.npz (harness.telemetry.tokentimes), every query a point, on
the same HdrHistogram tail axis as the latency percentile plot (harness.report.latency_plots),
with the scenario's p99 limits as dotted lines where it has them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from harness.report.latency_plots import (
    PLOT_POINTS,
    ImageFormat,
    axes_titled,
    latency_axis,
    legend_below,
    percent_label,
    plain_numbers,
    render,
    tail_points,
)
from harness.telemetry.latencies import percentile_curve
from harness.telemetry.tokentimes import TokenTimes, span_s, tokens_over_time

if TYPE_CHECKING:
    from matplotlib.figure import Figure

BINS = 50  # about this many bins over the longest run
MIN_QUERIES_PER_BIN = 8  # and at least this many completions in a bin, on average


@dataclass(frozen=True, kw_only=True, eq=False)
class TokenRun:
    """One run's stamps and the limits it was held to (ns; None where it has none)."""

    label: str
    times: TokenTimes
    ttft_limit_ns: int | None = None
    tpot_limit_ns: int | None = None


def ttft_plot(runs: Sequence[TokenRun], *, fmt: ImageFormat = "png") -> bytes:
    """The TTFT percentile figure as SVG or 2x PNG bytes."""
    return render(ttft_figure(runs), fmt)


def ttft_figure(runs: Sequence[TokenRun]) -> Figure:
    """Time to first token by percentile, per query, each run a line; its limit dotted."""
    curves = [(r.label, r.times.ttft_ns(), r.ttft_limit_ns) for r in runs]
    return _percentile_figure(curves, "Time to first token by percentile", "TTFT")


def tpot_plot(runs: Sequence[TokenRun], *, fmt: ImageFormat = "png") -> bytes:
    """The TPOT percentile figure as SVG or 2x PNG bytes."""
    return render(tpot_figure(runs), fmt)


def tpot_figure(runs: Sequence[TokenRun]) -> Figure:
    """Time per output token by percentile, per query (2 tokens or more); its limit dotted."""
    curves = [(r.label, r.times.tpot_ns(), r.tpot_limit_ns) for r in runs]
    return _percentile_figure(curves, "Time per output token by percentile", "TPOT")


def _percentile_figure(
    curves: Sequence[tuple[str, np.ndarray, int | None]], title: str, what: str
) -> Figure:
    fig, ax = axes_titled(title)
    spans: list[float] = []
    longest = 1
    for label, values_ns, _ in curves:
        shares, ms = percentile_curve(np.rint(values_ns).astype(np.int64))
        if len(ms) == 0:
            continue
        keep = tail_points(len(ms), PLOT_POINTS)
        x = 1.0 / (1.0 - shares)
        ax.plot(x[keep], ms[keep], drawstyle="steps-post", label=f"{label} ({len(ms):,} queries)")
        spans += [float(ms[0]), float(ms[-1])]
        longest = max(longest, len(ms))
    for limit_ns in sorted({limit for _, _, limit in curves if limit is not None}):
        limit_ms = limit_ns / 1e6
        ax.axhline(
            limit_ms, linestyle=":", color="black", label=f"p99 {what} limit {limit_ms:g} ms"
        )
        spans.append(limit_ms)
    ax.set_xscale("log")
    ticks = [10.0**k for k in range(math.floor(math.log10(longest)) + 1)]
    marks = [1.0, 2.0, *ticks[1:]]
    ax.set_xticks(marks, [percent_label(x) for x in marks])
    ax.minorticks_off()
    ax.set_xlim(1, max(longest, 2))
    ax.set_xlabel("percentile of queries (tail axis: 1 / (1 - q))")
    ax.set_ylabel(f"{what} (ms)")
    latency_axis(ax, spans)
    limited = any(limit is not None for _, _, limit in curves)
    legend_below(fig, ax, note="dotted: the scenario's p99 limit" if limited else None)
    return fig


def tokens_plot(runs: Sequence[TokenRun], *, fmt: ImageFormat = "png") -> bytes:
    """Completed output tokens per second over each run, in time bins; its average dashed."""
    return render(tokens_figure(runs), fmt)


def tokens_figure(runs: Sequence[TokenRun]) -> Figure:
    """Completed output tokens per second in time bins from the first issue, per run."""
    fig, ax = axes_titled("Output tokens over time")
    width_s = _bin_s(runs)
    for run in runs:
        mids_s, rate = tokens_over_time(run.times, width_s)
        if len(rate) == 0:
            continue
        (line,) = ax.plot(mids_s, rate, drawstyle="steps-mid", label=run.label)
        span = span_s(run.times)
        average = float(run.times.tokens.sum()) / span if span > 0 else float(rate.mean())
        ax.axhline(average, linestyle="--", linewidth=1, color=line.get_color())
    ax.set_xlabel(f"time since the first query was issued (s; bins of {width_s:g} s)")
    ax.set_ylabel("completed output tokens/s")
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_formatter(plain_numbers())
    legend_below(fig, ax, note="dashed: average over the run")
    return fig


def _bin_s(runs: Sequence[TokenRun]) -> float:
    """About BINS bins over the longest run, each with MIN_QUERIES_PER_BIN completions."""
    longest = max(runs, key=lambda r: span_s(r.times), default=None)
    if longest is None or longest.times.queries == 0:
        return 1.0
    span = max(span_s(longest.times), 1e-3)
    raw = max(span / BINS, span * MIN_QUERIES_PER_BIN / longest.times.queries)
    power = 10 ** math.floor(math.log10(raw))
    return float(next(m * power for m in (1, 2, 5, 10) if m * power >= raw))
