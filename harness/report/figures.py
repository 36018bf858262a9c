"""The report's plotted sections, read from each run's files: latency, telemetry, FLOP/s."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from harness.analysis.values import metric_getter
from harness.records.group import Group, RunSet
from harness.records.layout import CPU_TELEMETRY_FILE, QUERY_LATENCIES_FILE, TELEMETRY_FILE
from harness.records.measures import Plausibility, Utilization
from harness.records.metrics import percent
from harness.records.result import RunResult
from harness.report import latency_plots, plots
from harness.report.blocks import Block, Heading, Image, Para, Table
from harness.report.cells import distinct_notes, fixed, ms, slug
from harness.telemetry.cpufile import read_cpu_csv
from harness.telemetry.csvfile import read_telemetry_csv
from harness.telemetry.filestate import telemetry_file_state
from harness.telemetry.latencies import QueryLatencies, read_query_latencies

SAMPLE_FIELDS = ("power_w", "temp_c", "sm_clock_mhz", "mem_clock_mhz", "util_pct", "throttle")
CDF_CAPTION = (
    "LoadGen's detail log keeps only percentiles, so this CDF is drawn through the points "
    "recorded in result.json (min, p50, p90, p95, p97, p99, p99.9, max), not per query."
)
PERCENTILE_CAPTION = (
    "Every query's latency against its percentile, from query_latencies.npz; the x axis is "
    "1/(1-q), HdrHistogram's tail axis, so p99 and p99.9 get as much room as the median."
)
OVER_TIME = (
    "Samples completed per second over the run, from each query's completion time in "
    "query_latencies.npz: warm-up and throttling show as slopes and dips."
)
PERCENTILE_KEYS = ("min", "p50", "p90", "p95", "p97", "p99", "p999", "max", "mean")


def latency_blocks(g: Group, prefix: str) -> list[Block]:
    """Percentiles per run and their plot: per query where recorded, else through LoadGen's."""
    runs = g.labelled(g.runs)
    if g.results[0].scenario == "Offline":
        return _offline_over_time(runs, prefix)
    header = ("run", *(k.replace("p999", "p99.9") for k in PERCENTILE_KEYS))
    getters = [metric_getter(f"latency_ns.{k}") for k in PERCENTILE_KEYS]
    rows = tuple((label, *(ms(get(r)) for get in getters)) for label, _, r in runs)
    blocks: list[Block] = [Heading(3, "Latency distribution (ms)"), Table(header, rows)]
    queries = _query_latencies(runs)
    if queries:
        png = latency_plots.percentile_plot(queries, fmt="png")
        name = f"{prefix}-latency-percentiles.png"
        return [*blocks, Image(name, png, "latency by percentile", PERCENTILE_CAPTION)]
    png = plots.latency_cdf_png([(label, r.latency_ns) for label, _, r in runs])
    return [*blocks, Image(f"{prefix}-latency-cdf.png", png, "latency CDF", CDF_CAPTION)]


def _offline_over_time(runs: list[tuple[str, Path, RunResult]], prefix: str) -> list[Block]:
    queries = _query_latencies(runs)
    if not queries:
        return []
    png = latency_plots.throughput_plot(queries, fmt="png")
    image = Image(f"{prefix}-throughput-over-time.png", png, "throughput over time", OVER_TIME)
    return [Heading(3, "Throughput over the run"), image]


def _query_latencies(runs: list[tuple[str, Path, RunResult]]) -> list[tuple[str, QueryLatencies]]:
    """Each run's per-query latencies, where its directory has them."""
    paths = [(label, run_dir / QUERY_LATENCIES_FILE) for label, run_dir, _ in runs]
    return [(label, read_query_latencies(path)) for label, path in paths if path.is_file()]


def telemetry_blocks(g: Group, prefix: str) -> list[Block]:
    """Power, temperature and clocks: the plots, else why not, and a power row per source."""
    blocks: list[Block] = [Heading(3, "Power, temperature and clocks")]
    for runs in g.all_runs:
        blocks += _telemetry_plot(g, runs, prefix)
    if len(blocks) == 1:
        blocks += _telemetry_states(g)
    blocks += _cpu_telemetry(g, prefix)
    rows = tuple(row for label, _, r in g.labelled(g.runs) for row in _power_rows(label, r))
    if rows:
        header = (
            "run",
            "source",
            "avg power (W)",
            "energy/inference (mJ)",
            "samples/s/W",
            "peak temp (°C)",
            "throttled",
        )
        blocks.append(Table(header, rows))
        telemetry = g.results[0].telemetry
        note = telemetry.mlperf_comparable.note if telemetry is not None else None
        blocks += [Para(f"Note: {note}.")] if note else []
    else:
        blocks.append(Para("Power not measured: " + _unavailable(g.results[0]) + "."))
    return blocks


def _telemetry_plot(g: Group, runs: RunSet, prefix: str) -> list[Block]:
    for label, run_dir, _ in g.labelled(runs):
        if (run_dir / TELEMETRY_FILE).is_file():
            t = read_telemetry_csv(run_dir / TELEMETRY_FILE)
            if not plots.has_plottable(t):
                continue
            caption = (
                f"{label}: {TELEMETRY_FILE}, sampled every {t.interval_s:g} s over the "
                f"{t.duration_ns / 1e9:.2f} s window LoadGen timed."
            )
            name = f"{prefix}-telemetry-{slug(label)}.png"
            return [Image(name, plots.telemetry_png(t), f"telemetry of {label}", caption)]
    return []


def _cpu_telemetry(g: Group, prefix: str) -> list[Block]:
    """The host CPU's clocks, busy %, load and temperature: the first run's with samples."""
    states: dict[str, list[str]] = {}
    for label, run_dir, _ in g.labelled(g.runs):
        state = telemetry_file_state(run_dir / CPU_TELEMETRY_FILE)
        if state.state == "present":
            png = latency_plots.cpu_plot(read_cpu_csv(state.path), fmt="png")
            caption = f"{label}: {CPU_TELEMETRY_FILE}, the host CPU over the measured window."
            name = f"{prefix}-cpu-{slug(label)}.png"
            return [Image(name, png, f"host CPU of {label}", caption)]
        states.setdefault(state.describe(), []).append(label)
    return [Para(f"{', '.join(labels)}: {state}.") for state, labels in states.items()]


def _telemetry_states(g: Group) -> list[Block]:
    """Why there is no plot: each run's telemetry.csv absent, empty, or without plottable data."""
    states: dict[str, list[str]] = {}
    for runs in g.all_runs:
        for label, run_dir, result in g.labelled(runs):
            states.setdefault(_telemetry_state(run_dir, result), []).append(label)
    return [Para(f"{', '.join(labels)}: {state}.") for state, labels in states.items()]


def _telemetry_state(run_dir: Path, result: RunResult) -> str:
    path = run_dir / TELEMETRY_FILE
    if not path.is_file():
        return f"no {TELEMETRY_FILE} in the run directory"
    t = read_telemetry_csv(path)
    reasons = [f"{source}: {why}" for source, why in (*t.unavailable, *t.errors)]
    why = "; ".join(reasons) or _unavailable(result)
    if not t.samples:
        return f"{TELEMETRY_FILE} is there but holds no samples, only its header: {why}"
    columns = sorted({k for s in t.samples for k in SAMPLE_FIELDS if getattr(s, k) is not None})
    return (
        f"{TELEMETRY_FILE} holds {len(t.samples)} samples ({', '.join(columns) or 'no values'}) "
        "but no power, temperature or clock to plot"
    )


def _power_rows(label: str, r: RunResult) -> list[tuple[str, ...]]:
    sources = r.telemetry.sources if r.telemetry is not None else {}
    return [
        (
            label,
            name,
            fixed(s.avg_power_w, ".1f"),
            fixed(s.energy_per_inference_mj, ".2f"),
            fixed(s.samples_per_second_per_watt, ".2f"),
            fixed(s.peak_temp_c, ".1f"),
            _throttle(s.throttle),
        )
        for name, s in sorted(sources.items())
    ]


def _throttle(shares: Mapping[str, float] | None) -> str:
    if shares is None:
        return "n/a"
    return ", ".join(f"{k} {percent(v)}" for k, v in sorted(shares.items())) or "never"


def _unavailable(r: RunResult) -> str:
    if r.telemetry is None:
        return "the telemetry window never opened"
    items = r.telemetry.unavailable
    return "; ".join(f"{u.source}: {u.reason}" for u in items) or "no source"


def utilization_blocks(g: Group, prefix: str) -> list[Block]:
    """Achieved FLOP/s against peak and attainable, per run, with its notes and bars."""
    heading = Heading(3, "Achieved against peak FLOP/s")
    found = [(label, r.utilization) for label, _, r in g.labelled(g.runs)]
    header = (
        "run",
        "achieved TFLOP/s",
        "peak TFLOP/s",
        "% of peak",
        "attainable TFLOP/s",
        "% of attainable",
        "peak",
        "peak basis",
        "physics",
    )
    judged = {label: r.plausibility for label, _, r in g.labelled(g.runs)}
    rows = tuple(
        (
            label,
            fixed(u.achieved_tflops, ".3f"),
            fixed(u.peak_tflops, ".3f"),
            _percent(u.fraction_of_peak) + (" (guess)" if u.peak_basis == "guess" else ""),
            fixed(u.attainable_tflops, ".3f"),
            _percent(u.fraction_of_attainable),
            u.peak_name or "n/a",
            u.peak_basis or "n/a",
            _physics(judged[label]),
        )
        for label, u in found
    )
    notes = distinct_notes(
        [f"{p.figure}; {p.reason}" for p in judged.values() if p.verdict == "IMPLAUSIBLE"],
        "IMPLAUSIBLE",
    )
    notes += distinct_notes([u.note for _, u in found], "Notes")
    notes += distinct_notes([u.peak_source for _, u in found], "Peak source")
    notes += distinct_notes([u.peak_assumptions for _, u in found], "Peak assumptions")
    notes += distinct_notes([u.attainable_method for _, u in found], "Attainable rate")
    bars = [bar for label, u in found if (bar := _bar(label, u)) is not None]
    if not bars:
        return [heading, Table(header, rows), *notes]
    caption = (
        "Achieved FLOP/s (model FLOPs x samples/s) against the hardware's peak; a peak marked "
        "(guess) rests on a clock or vector width this machine does not reveal: read the "
        "attainable column, a GEMM measured through onnxruntime here."
    )
    png = plots.utilization_png(bars)
    image = Image(f"{prefix}-utilization.png", png, "achieved vs peak", caption)
    return [heading, Table(header, rows), *notes, image]


def _physics(p: Plausibility) -> str:
    """The physics check's cell: the verdict, achieved over the ceiling and the margin."""
    if p.ratio is None or p.limit is None:
        return p.verdict
    return f"{p.verdict}: {p.ratio:.2f}x (limit {p.limit:g}x)"


def _percent(fraction: float | None) -> str:
    return fixed(None if fraction is None else fraction * 100, ".2f")


def _bar(label: str, u: Utilization) -> plots.UtilizationBar | None:
    achieved, peak = u.achieved_tflops, u.peak_tflops
    if achieved is None or peak is None:
        return None
    return plots.UtilizationBar(
        label=label,
        achieved_tflops=achieved,
        peak_tflops=peak,
        attainable_tflops=u.attainable_tflops,
    )
