"""Report figures, drawn on matplotlib's Agg canvas in memory (no pyplot state), as 2x PNGs."""

from __future__ import annotations

import io
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.errors import DependencyError
from harness.records.group import Sweep
from harness.records.loadsweep import LoadSweep
from harness.records.result import Latencies
from harness.report.cells import drawn
from harness.telemetry.base import Sample, Telemetry

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.ticker import Formatter

MATPLOTLIB_MISSING = (
    "plots need matplotlib; install the report extra: pip install 'beyond-tops[report]'"
)
# The fractions of queries LoadGen's logs keep the latency of (min to max), for the CDF.
CDF_FRACTIONS = (0.0, 0.5, 0.9, 0.95, 0.97, 0.99, 0.999, 1.0)
TELEMETRY_PANELS = (
    ("power (W)", ("power_w",)),
    ("temperature (°C)", ("temp_c",)),
    ("clock (MHz)", ("sm_clock_mhz", "mem_clock_mhz")),
)
HIDPI = 2  # pixels per CSS pixel the figures are rendered for
SERIES_NAMES = {"sm_clock_mhz": " SM", "mem_clock_mhz": " memory"}


@dataclass(frozen=True, kw_only=True)
class UtilizationBar:
    """One run's achieved, peak and (where measured) attainable FLOP/s, in TFLOP/s."""

    label: str
    achieved_tflops: float
    peak_tflops: float
    attainable_tflops: float | None = None


def cdf_points(latency_ns: Latencies) -> list[tuple[float, float]]:
    """(latency ms, fraction of queries at or below it) from the recorded percentiles."""
    lat = latency_ns
    recorded = (lat.min, lat.p50, lat.p90, lat.p95, lat.p97, lat.p99, lat.p999, lat.max)
    points = zip(recorded, CDF_FRACTIONS, strict=True)
    return [(value / 1e6, q) for value, q in points if value is not None]


def throughput_png(sweep: Sweep) -> bytes:
    """The throughput figure as a 2x PNG."""
    return _png(throughput_figure(sweep))


def throughput_figure(sweep: Sweep) -> Figure:
    """Median samples/s per batch size (bars: min to max of the trials), saturation marked."""
    fig, ax = _axes()
    batches = [p.batch_size for p in sweep.points]
    medians = [p.stats.median for p in sweep.points]
    low = [m - min(p.stats.values) for m, p in zip(medians, sweep.points, strict=True)]
    high = [max(p.stats.values) - m for m, p in zip(medians, sweep.points, strict=True)]
    ax.errorbar(batches, medians, yerr=[low, high], marker="o", capsize=3, label="median")
    if sweep.saturation_batch is not None:
        ax.axvline(
            sweep.saturation_batch,
            linestyle="--",
            color="tab:red",
            label=f"saturation: batch {sweep.saturation_batch}",
        )
    if sweep.limit is not None:
        ax.axvline(
            float(sweep.limit.batch_size),
            linestyle=":",
            color="black",
            label=f"out of memory: batch {sweep.limit.batch_size}",
        )
    ax.set_xscale("log", base=2)
    ax.set_xticks(batches, [str(b) for b in batches])
    ax.minorticks_off()
    ax.set_title("Throughput against batch size")
    ax.set_xlabel("batch size (samples per query)")
    ax.set_ylabel("throughput (samples/s)")
    ax.set_ylim(bottom=0)
    _legend_outside(ax)
    return fig


def load_png(sweep: LoadSweep) -> bytes:
    """The load sweep's figure as a 2x PNG."""
    return _png(load_figure(sweep))


def load_figure(sweep: LoadSweep) -> Figure:
    """p50, p90 and p99 latency against the achieved rate; the bound and the knee marked.

    A rate that broke the bound in any trial is drawn hollow; the knee (the highest rate
    every trial of which met the bound) is a vertical line at its achieved rate.
    """
    fig, ax = _axes()
    points = [(p, p.completed_qps) for p in sweep.points if p.completed_qps is not None]
    for name, attribute in (("p50", "p50_ns"), ("p90", "p90_ns"), ("p99", "p99_ns")):
        line = [
            (x, float(y) / 1e6, p.valid)
            for p, x in points
            if (y := getattr(p, attribute)) is not None
        ]
        if not line:
            continue
        drawn = ax.plot([x for x, _, _ in line], [y for _, y, _ in line], label=name, marker="")
        colour = drawn[0].get_color()
        for x, y, ok in line:
            ax.plot([x], [y], marker="o", color=colour, fillstyle="full" if ok else "none")
    if sweep.latency_bound_ns:
        bound = sweep.latency_bound_ns / 1e6
        ax.axhline(bound, linestyle=":", color="black", label=f"p99 bound {bound:g} ms")
    knee = next((p for p, _ in points if p.target_qps == sweep.knee_qps), None)
    if knee is not None and knee.completed_qps is not None:
        ax.axvline(
            knee.completed_qps,
            linestyle="--",
            color="tab:red",
            label=f"knee: {knee.completed_qps:,.1f} qps achieved (target {knee.target_qps:g})",
        )
    ax.plot([], [], marker="o", color="grey", fillstyle="none", linestyle="", label="bound broken")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(_plain_numbers())
    ax.set_title(f"Latency against achieved rate: {sweep.scenario_name}")
    ax.set_xlabel("achieved rate (completed queries/s)")
    ax.set_ylabel("latency (ms, log scale)")
    ax.set_xlim(left=0)
    _legend_outside(ax)
    return fig


def latency_cdf_png(curves: Sequence[tuple[str, Latencies]]) -> bytes:
    """The latency CDF figure as a 2x PNG."""
    return _png(latency_cdf_figure(curves))


def latency_cdf_figure(curves: Sequence[tuple[str, Latencies]]) -> Figure:
    """One CDF line per run through its recorded percentile points (log latency axis)."""
    fig, ax = _axes()
    for label, latency_ns in curves:
        points = cdf_points(latency_ns)
        ax.plot([p[0] for p in points], [p[1] for p in points], marker=".", label=label)
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(_plain_numbers())
    ax.xaxis.set_minor_formatter(_plain_numbers())
    ax.set_title("Latency through the recorded percentiles")
    ax.set_xlabel("latency (ms, log scale)")
    ax.set_ylabel("fraction of queries")
    ax.set_ylim(0, 1.02)
    _legend_outside(ax)
    return fig


def has_plottable(t: Telemetry) -> bool:
    """Whether any sample carries power, temperature or a clock."""
    keys = [key for _, fields in TELEMETRY_PANELS for key in fields]
    return any(getattr(s, key) is not None for s in t.samples for key in keys)


def telemetry_png(t: Telemetry) -> bytes:
    """The telemetry figure as a 2x PNG."""
    return _png(telemetry_figure(t))


def telemetry_figure(t: Telemetry) -> Figure:
    """Power, temperature and clocks over the window, one panel each that has data."""
    panels = [(title, keys) for title, keys in TELEMETRY_PANELS if _has(t.samples, keys)]
    fig = _figure(height=1.0 + 1.6 * max(len(panels), 1))
    axes = fig.subplots(max(len(panels), 1), 1, sharex=True, squeeze=False)[:, 0]
    sources = sorted({s.source for s in t.samples})
    for ax, (title, keys) in zip(axes, panels, strict=False):
        for source in sources:
            rows = t.samples_of(source)
            for key in keys:
                _line(ax, rows, key, t.window_start_ns, source + SERIES_NAMES.get(key, ""))
        ax.set_ylabel(title)
        ax.grid(True, alpha=0.3)
        _legend_outside(ax, fontsize="small")
    axes[0].set_title("Telemetry in the measured window")
    axes[-1].set_xlabel("time in the measured window (s)")
    return fig


TICK_LABEL_CHARS = 28  # per line of a bar's label
LEGEND_LABEL_CHARS = 24  # per line of a legend entry


def utilization_png(bars: Sequence[UtilizationBar]) -> bytes:
    """The achieved-against-peak figure as a 2x PNG."""
    return _png(utilization_figure(bars))


def utilization_figure(bars: Sequence[UtilizationBar]) -> Figure:
    """Achieved TFLOP/s per run as bars, each distinct peak and attainable rate as a line.

    Peaks are dashed, attainable rates (the GEMM probe) dotted. A bar's label sits inside the
    bar when the bar is long and after it otherwise, so that no label runs past the frame;
    the axis reaches past the largest of every bar and line.
    """
    fig, ax = _axes()
    ys = list(range(len(bars)))
    ax.barh(ys, [b.achieved_tflops for b in bars], height=0.6, label="achieved")
    peaks = sorted({b.peak_tflops for b in bars})
    attainable = sorted({b.attainable_tflops for b in bars if b.attainable_tflops})
    right = max([*peaks, *attainable, *(b.achieved_tflops for b in bars)]) * 1.15
    for y, bar in zip(ys, bars, strict=True):
        share = f"{bar.achieved_tflops:.3f} ({bar.achieved_tflops / bar.peak_tflops:.1%} of peak)"
        inside = bar.achieved_tflops > right / 2
        x = bar.achieved_tflops + (-1 if inside else 1) * right * 0.01
        ax.text(
            x,
            y,
            share,
            va="center",
            ha="right" if inside else "left",
            color="white" if inside else "black",
            fontsize="small",
        )
    for number, peak in enumerate(peaks):
        ax.axvline(peak, linestyle="--", color=f"C{number + 1}", label=f"peak {peak:,.3f} TFLOP/s")
    for number, rate in enumerate(attainable, start=len(peaks)):
        ax.axvline(
            rate, linestyle=":", color=f"C{number + 1}", label=f"attainable {rate:,.3f} TFLOP/s"
        )
    # Wrapped: a long label (a bundle's note, a long run name) would squeeze the bars to nothing.
    ax.set_yticks(ys, [drawn(textwrap.fill(b.label, TICK_LABEL_CHARS)) for b in bars])
    ax.invert_yaxis()  # the first run on top, as in the table
    ax.set_xlim(0, right)
    ax.set_title("Achieved against peak FLOP/s")
    ax.set_xlabel("TFLOP/s (model FLOPs x samples/s)")
    _legend_outside(ax)
    return fig


def _legend_outside(ax: Axes, fontsize: str = "medium") -> None:
    """The legend right of the plot area, where it cannot cover data.

    Labels are wrapped: a long one (a bundle's label, a run path) would otherwise take the
    figure's whole width and squeeze the plot area to nothing.
    """
    handles, labels = ax.get_legend_handles_labels()
    wrapped = [drawn(textwrap.fill(label, LEGEND_LABEL_CHARS)) for label in labels]
    ax.legend(
        handles,
        wrapped,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        borderaxespad=0,
        fontsize=fontsize,
    )


def _has(samples: Sequence[Sample], keys: Sequence[str]) -> bool:
    return any(getattr(s, key) is not None for s in samples for key in keys)


def _line(ax: Axes, rows: Sequence[Sample], key: str, start_ns: int, label: str) -> None:
    points = [((s.t_ns - start_ns) / 1e9, getattr(s, key)) for s in rows]
    points = [(x, y) for x, y in points if y is not None]
    if points:
        ax.plot([p[0] for p in points], [p[1] for p in points], label=label)


def _plain_numbers() -> Formatter:
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda value, _: f"{value:g}")


def _figure(*, height: float = 3.6) -> Figure:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise DependencyError(MATPLOTLIB_MISSING) from None
    return Figure(figsize=(6.4, height), dpi=100 * HIDPI, layout="constrained")


def _axes() -> tuple[Figure, Axes]:
    fig = _figure()
    ax = fig.add_subplot()
    ax.grid(True, alpha=0.3)
    return fig, ax


def _png(fig: Figure) -> bytes:
    """Render with the Agg canvas chosen here, not a global backend; no timestamp metadata."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)  # attaches itself to the figure: savefig draws with Agg
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()
