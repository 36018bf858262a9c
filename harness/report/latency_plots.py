"""Figures from per-query latencies and CPU telemetry: percentile, throughput and CPU plots.

Each ``*_figure`` function builds a matplotlib Figure (no pyplot state) with a title, axis
labels with units and its legend outside the axes; ``render`` draws it as SVG or as PNG at
twice the usual resolution, for HiDPI screens. ``*_plot`` does both.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np

from harness.errors import DependencyError
from harness.report.cells import drawn
from harness.telemetry.cpufile import CpuTelemetry
from harness.telemetry.latencies import (
    QueryLatencies,
    default_bin_s,
    percentile_curve,
    throughput_over_time,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.ticker import Formatter

ImageFormat = Literal["svg", "png"]
MATPLOTLIB_MISSING = (
    "plots need matplotlib; install the report extra: pip install 'beyond-tops[report]'"
)
WIDTH_IN = 6.4
PNG_DPI = 200  # 2x the 100 dpi a 6.4 in figure is laid out for: sharp on HiDPI screens
LOG_RANGE = 10.0  # a latency axis spanning more than this factor is drawn log-scaled
PLOT_POINTS = 4000  # points drawn per percentile curve (every tail point is kept)
PER_CORE_LINES = 8  # more cores than this: their mean and range, not a line each
CPU_PANELS = (
    ("clock", "clock (MHz)"),
    ("busy", "CPU busy (%)"),
    ("load", "load (1 min)"),
    ("temperature", "temperature (°C)"),
)


def percentile_plot(
    curves: Sequence[tuple[str, QueryLatencies]],
    *,
    title: str = "Latency by percentile",
    fmt: ImageFormat = "svg",
) -> bytes:
    """The percentile plot of each run's per-query latencies, as SVG or 2x PNG bytes."""
    return render(percentile_figure(curves, title=title), fmt)


def percentile_figure(
    curves: Sequence[tuple[str, QueryLatencies]], *, title: str = "Latency by percentile"
) -> Figure:
    """Per-query latency against percentile, on HdrHistogram's 1/(1-q) tail axis.

    Every query is a point (thinned to PLOT_POINTS log-spaced ones, the tail kept), so the
    slowest 1 % fills the right of the plot. Latency is in ms, log-scaled when it spans
    more than LOG_RANGE times.
    """
    fig, ax = axes_titled(title)
    spans: list[float] = []
    longest = 1
    for label, record in curves:
        shares, ms = percentile_curve(record.latencies_ns())
        if len(ms) == 0:
            continue
        x = 1.0 / (1.0 - shares)
        keep = tail_points(len(ms), PLOT_POINTS)
        ax.plot(x[keep], ms[keep], drawstyle="steps-post", label=f"{label} ({len(ms):,} queries)")
        spans += [float(ms[0]), float(ms[-1])]
        longest = max(longest, len(ms))
    ax.set_xscale("log")
    ticks = [10.0**k for k in range(math.floor(math.log10(longest)) + 1)]
    ax.set_xticks([1.0, 2.0, *ticks[1:]], [percent_label(x) for x in (1.0, 2.0, *ticks[1:])])
    ax.minorticks_off()
    ax.set_xlim(1, max(longest, 2))
    ax.set_xlabel("percentile of queries (tail axis: 1 / (1 - q))")
    ax.set_ylabel("latency (ms)")
    latency_axis(ax, spans)
    legend_below(fig, ax)
    return fig


def throughput_plot(
    runs: Sequence[tuple[str, QueryLatencies]],
    *,
    title: str = "Throughput over time",
    bin_s: float | None = None,
    fmt: ImageFormat = "svg",
) -> bytes:
    """The throughput-over-time plot of each run's completions, as SVG or 2x PNG bytes."""
    return render(throughput_figure(runs, title=title, bin_s=bin_s), fmt)


def throughput_figure(
    runs: Sequence[tuple[str, QueryLatencies]],
    *,
    title: str = "Throughput over time",
    bin_s: float | None = None,
) -> Figure:
    """Samples completed per second in time bins from the issue (Offline): warm-up, throttling.

    ``bin_s`` defaults to about 50 bins over the longest run; a dashed line marks each run's
    average over its whole span.
    """
    fig, ax = axes_titled(title)
    longest = max(runs, key=lambda run: run[1].rows, default=None)
    width_s = bin_s or (default_bin_s(longest[1]) if longest is not None else 1.0)
    for label, record in runs:
        mids_s, rate = throughput_over_time(record, width_s)
        if len(rate) == 0:
            continue
        (line,) = ax.plot(mids_s, rate, drawstyle="steps-mid", label=label)
        span_s = float(record.complete_ns.max() - record.issue_ns.min()) / 1e9
        average = float(record.samples.sum()) / span_s if span_s > 0 else float(rate.mean())
        ax.axhline(average, linestyle="--", linewidth=1, color=line.get_color())
    ax.set_xlabel(f"time since the query was issued (s; bins of {width_s:g} s)")
    ax.set_ylabel("samples/s")
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_formatter(plain_numbers())
    legend_below(fig, ax, note="dashed: average over the run")
    return fig


def cpu_plot(
    t: CpuTelemetry, *, title: str = "Host CPU over the measured window", fmt: ImageFormat = "svg"
) -> bytes:
    """The CPU telemetry figure, as SVG or 2x PNG bytes."""
    return render(cpu_figure(t, title=title), fmt)


def cpu_figure(t: CpuTelemetry, *, title: str = "Host CPU over the measured window") -> Figure:
    """Clocks, busy share, load and temperature over the window, a panel each.

    A panel with no data says why (e.g. no temperature sensor on a VM) instead of a line.
    """
    fig = figure_sized(height=1.2 + 1.5 * len(CPU_PANELS))
    axes = fig.subplots(len(CPU_PANELS), 1, sharex=True, squeeze=False)[:, 0]
    fig.suptitle(title)
    for ax, (kind, label) in zip(axes, CPU_PANELS, strict=True):
        ax.grid(True, alpha=0.3)
        ax.set_ylabel(label)
        reason = t.why_missing(kind)
        if reason is not None:
            _no_data(ax, reason)
            continue
        _cpu_panel(ax, t, kind)
        ax.yaxis.set_major_formatter(plain_numbers())
        if kind == "busy":
            ax.set_ylim(0, 105)  # a dip to 90 % is a dip, not a cliff
        sources = sorted({s.source for s in t.of_kind(kind)})
        note = f"from {sources[0]}" if kind == "clock" and len(sources) == 1 else None
        ax.legend(
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            fontsize="small",
            title=note,
            title_fontsize="x-small",
        )
    axes[-1].set_xlabel("time in the measured window (s)")
    axes[-1].set_xlim(0, max((t.window_end_ns - t.window_start_ns) / 1e9, 1e-3))
    return fig


def render(fig: Figure, fmt: ImageFormat = "svg") -> bytes:
    """Draw a figure on the Agg canvas chosen here (no global backend); no date metadata."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    if fmt == "svg":
        fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    else:
        fig.savefig(buffer, format="png", dpi=PNG_DPI, metadata={"Software": None})
    return buffer.getvalue()


def _cpu_panel(ax: Axes, t: CpuTelemetry, kind: str) -> None:
    series = t.of_kind(kind)
    overall = [s for s in series if s.column == "busy_pct"]
    cores = [s for s in series if s.column != "busy_pct"]
    if len(cores) > PER_CORE_LINES:
        _band(ax, t, [s.column for s in cores], f"{len(cores)} cores: mean, min to max")
    else:
        for s in cores:
            points = t.points(s.column)
            ax.plot([p[0] for p in points], [p[1] for p in points], label=_series_label(s.column))
    for s in overall:
        points = t.points(s.column)
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        ax.plot(xs, ys, color="black", linewidth=2, label="all CPUs")


def _series_label(column: str) -> str:
    """A legend label from a column name: cpu3_mhz -> cpu3, temp_coretemp_c -> coretemp."""
    if column == "load_1m":
        return "1-min load average"
    return re.sub(r"^temp_|_(busy_pct|mhz|c)$", "", column)


def _band(ax: Axes, t: CpuTelemetry, columns: list[str], label: str) -> None:
    """Mean line and min-max band across many columns, on the rows where each is read."""
    index = [s.column for s in t.series]
    picks = [index.index(c) for c in columns]
    xs, means, lows, highs = [], [], [], []
    for row in t.rows:
        values = [v for i in picks if (v := row.values[i]) is not None]
        if values:
            xs.append((row.t_ns - t.window_start_ns) / 1e9)
            means.append(sum(values) / len(values))
            lows.append(min(values))
            highs.append(max(values))
    ax.fill_between(xs, lows, highs, alpha=0.3, label="min to max")
    ax.plot(xs, means, label=label)


def _no_data(ax: Axes, reason: str) -> None:
    ax.text(
        0.5,
        0.5,
        "\n".join(_wrap(f"not sampled: {reason}", 50)),
        transform=ax.transAxes,
        ha="center",
        va="center",
        fontsize="small",
        color="dimgray",
    )
    ax.set_yticks([])


def _wrap(text: str, width: int) -> list[str]:
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return [*lines, line]


def tail_points(count: int, most: int) -> np.ndarray:
    """Indices of a sorted curve's points to draw: log-spaced in 1/(1-q), so the tail stays."""
    if count <= most:
        return np.arange(count)
    x = np.geomspace(1.0, float(count), most)
    ranks = np.ceil(count - count / x).astype(np.int64)
    return np.unique(np.clip(np.r_[0, ranks, count - 1], 0, count - 1))


def percent_label(x: float) -> str:
    """The percentile at x = 1/(1-q) on the tail axis: 2 -> '50 %', 1000 -> '99.9 %'."""
    return f"{round(100.0 - 100.0 / x, 6):g} %"


def latency_axis(ax: Axes, spans: list[float]) -> None:
    """Log-scaled when the latencies span more than LOG_RANGE times; plain-number ticks."""
    from matplotlib.ticker import LogLocator, NullLocator

    low = min((v for v in spans if v > 0), default=0.0)
    high = max(spans, default=0.0)
    if low > 0 and high / low > LOG_RANGE:
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_minor_locator(NullLocator())
    else:
        ax.set_ylim(bottom=0)
    ax.yaxis.set_major_formatter(plain_numbers())


def plain_numbers() -> Formatter:
    """Tick labels as plain numbers with thousands separators (no 1e3 offsets)."""
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda value, _: f"{value:,.6g}")


def legend_below(fig: Figure, ax: Axes, note: str | None = None) -> None:
    """The legend below the axes, outside the data; with a note on what dashes mean."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return
    title = note if note else None
    shown = [drawn(label) for label in labels]
    fig.legend(handles, shown, loc="outside lower center", ncols=min(len(labels), 2), title=title)


def figure_sized(*, height: float = 3.6) -> Figure:
    """A figure of the report's width and ``height`` inches, laid out by constraint."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise DependencyError(MATPLOTLIB_MISSING) from None
    return Figure(figsize=(WIDTH_IN, height), dpi=100, layout="constrained")


def axes_titled(title: str) -> tuple[Figure, Axes]:
    """A figure with one gridded, titled axes."""
    fig = figure_sized()
    ax = fig.add_subplot()
    ax.grid(True, alpha=0.3)
    ax.set_title(title)
    return fig, ax
