"""A generative load sweep's figure: TTFT and TPOT percentiles, tokens/s and goodput, by rate.

One panel each for TTFT and TPOT (LoadGen's p50, p90 and p99, medians over a rate's trials)
with the scenario's p99 limit dotted, and one for completed tokens/s with goodput (the queries
that met both limits, per second) on its own axis; the knee, the highest rate every trial of
which met both limits, dashed in each. The x axis is the offered (target) rate: past the knee
the achieved rate stalls while the queue grows, and the offered rate keeps the points apart.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.analysis.loadsweep import holds
from harness.records.loadsweep import LoadPoint, LoadSweep
from harness.report.cells import drawn
from harness.report.latency_plots import (
    ImageFormat,
    figure_sized,
    latency_axis,
    plain_numbers,
    render,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

PANELS = (("TTFT", "ttft", "ttft_limit_ns"), ("TPOT", "tpot", "tpot_limit_ns"))


def token_load_plot(sweep: LoadSweep, *, fmt: ImageFormat = "png") -> bytes:
    """The sweep's three panels as SVG or 2x PNG bytes."""
    return render(token_load_figure(sweep), fmt)


def token_load_figure(sweep: LoadSweep) -> Figure:
    """TTFT, TPOT (limits dotted) and tokens/s with goodput against the rate; the knee dashed."""
    fig = figure_sized(height=8.4)
    axes = fig.subplots(3, 1, sharex=True, squeeze=False)[:, 0]
    fig.suptitle(drawn(f"Token latencies and tokens/s against rate: {sweep.scenario_name}"))
    points = [p for p in sweep.points if p.tokens is not None]
    for ax, (what, key, limit_key) in zip(axes, PANELS, strict=False):
        spans = _percentiles(ax, points, what, key)
        limit = getattr(sweep, limit_key)
        if limit is not None:
            ax.axhline(
                limit / 1e6, linestyle=":", color="black", label=f"p99 limit {limit / 1e6:g} ms"
            )
            spans.append(limit / 1e6)
        _knee(ax, sweep)
        ax.set_ylabel(f"{what} (ms)")
        latency_axis(ax, spans)  # log-scaled where the queue has grown by orders of magnitude
        _legend(ax)
    _throughput(axes[2], points)
    _knee(axes[2], sweep)
    _legend(axes[2], inside=True)  # the goodput axis takes the right side
    axes[2].set_xlabel("offered rate (LoadGen's target queries/s)")
    axes[2].set_xlim(left=0)
    return fig


def _percentiles(ax: Axes, points: list[LoadPoint], what: str, key: str) -> list[float]:
    """p50, p90 and p99 against the rate, one that did not hold hollow; the values (ms)."""
    ax.grid(True, alpha=0.3)
    spans: list[float] = []
    for rank in ("p50", "p90", "p99"):
        line = [
            (p.target_qps, value / 1e6, holds(p))
            for p in points
            if p.tokens is not None and (value := getattr(p.tokens, f"{key}_{rank}_ns")) is not None
        ]
        if not line:
            continue
        (drawn_line,) = ax.plot(
            [x for x, _, _ in line], [y for _, y, _ in line], label=f"{what} {rank}"
        )
        for x, y, ok in line:
            colour = drawn_line.get_color()
            ax.plot([x], [y], marker="o", color=colour, fillstyle="full" if ok else "none")
        spans += [y for _, y, _ in line]
    return spans


def _throughput(ax: Axes, points: list[LoadPoint]) -> None:
    """Completed tokens/s (left axis) and goodput (right axis) against the rate."""
    ax.grid(True, alpha=0.3)
    rates = [
        (p.target_qps, p.tokens.tokens_per_second)
        for p in points
        if p.tokens and p.tokens.tokens_per_second is not None
    ]
    if rates:
        ax.plot(
            [x for x, _ in rates], [y for _, y in rates], marker="o", label="completed tokens/s"
        )
    ax.set_ylabel("completed tokens/s")
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_formatter(plain_numbers())
    good = [
        (p.target_qps, p.tokens.goodput_qps)
        for p in points
        if p.tokens and p.tokens.goodput_qps is not None
    ]
    if not good:
        return
    right = ax.twinx()
    right.plot(
        [x for x, _ in good], [y for _, y in good], marker="s", linestyle="--", color="tab:green"
    )
    right.set_ylabel("goodput (queries/s)", color="tab:green")
    right.set_ylim(bottom=0)
    ax.plot([], [], marker="s", linestyle="--", color="tab:green", label="goodput (right axis)")


def _knee(ax: Axes, sweep: LoadSweep) -> None:
    if sweep.knee_qps is not None:
        ax.axvline(
            sweep.knee_qps, linestyle="--", color="tab:red", label=f"knee: {sweep.knee_qps:g} qps"
        )


def _legend(ax: Axes, *, inside: bool = False) -> None:
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return
    shown = [drawn(label) for label in labels]
    if inside:
        ax.legend(handles, shown, loc="best", fontsize="small", framealpha=0.8)
    else:
        ax.legend(handles, shown, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
