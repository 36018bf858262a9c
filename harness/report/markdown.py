"""The report on groups of runs: its sections as blocks (harness.report.blocks), and report.md."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from harness.analysis.compare import (
    LATENCIES,
    THROUGHPUT,
    UTILIZATION,
    Metric,
    telemetry_metrics,
)
from harness.analysis.groups import Group, RunSet, Sweep, group_warnings
from harness.analysis.spread import spread_flags
from harness.analysis.stats import percent, trial_stats
from harness.files import atomic_write_bytes
from harness.fingerprint import Fingerprint
from harness.report import latency_plots, plots
from harness.report.blocks import (
    Block,
    Bullets,
    Heading,
    Image,
    Para,
    Table,
    block_markdown,
)
from harness.report.summary import (
    SUMMARY_HEADER,
    SUMMARY_NOTE,
    configuration_label,
    device_label,
    headline_metric,
    machine_label,
    machine_rows,
    model_label,
    summary_row,
)
from harness.results.measures import Utilization
from harness.results.metrics import metric_getter, metric_values
from harness.results.published import PublishedResult, describe
from harness.results.records import RunResult
from harness.telemetry.cpufile import CPU_TELEMETRY_FILE, read_cpu_csv
from harness.telemetry.csvfile import read_telemetry_csv
from harness.telemetry.filestate import telemetry_file_state
from harness.telemetry.latencies import QUERY_LATENCIES_FILE, QueryLatencies, read_query_latencies

TELEMETRY_FILE = "telemetry.csv"
SAMPLE_FIELDS = ("power_w", "temp_c", "sm_clock_mhz", "mem_clock_mhz", "util_pct", "throttle")
CDF_CAPTION = (
    "LoadGen's detail log keeps only percentiles, so this CDF is drawn through the points "
    "recorded in result.json (min, p50, p90, p95, p97, p99, p99.9, max), not per query."
)
STOPPED = {
    "plateau": "throughput stopped rising (two points in a row under 3 % above the best)",
    "out_of_memory": "out of memory",
    "max_batch": "reached the largest batch size asked for",
    "error": "an error ended it",
}
THROUGHPUT_CAPTION = (
    "Median samples/s per batch size (bars: min to max over its runs); the dashed line marks "
    "the saturation batch, the smallest reaching 95 % of the best median."
)
RAW_FILES = ("mlperf_log_summary.txt", "result.json", "mlperf_log_detail.txt", TELEMETRY_FILE)
FLAG = "⚠"  # marks a number whose spread over the runs is too large to trust
PERCENTILE_CAPTION = (
    "Every query's latency against its percentile, from query_latencies.npz; the x axis is "
    "1/(1-q), HdrHistogram's tail axis, so p99 and p99.9 get as much room as the median."
)
OVER_TIME = (
    "Samples completed per second over the run, from each query's completion time in "
    "query_latencies.npz: warm-up and throttling show as slopes and dips."
)
PERCENTILE_KEYS = ("min", "p50", "p90", "p95", "p97", "p99", "p999", "max", "mean")


def render_markdown(
    groups: Sequence[Group], *, images_dir: Path, published: Sequence[PublishedResult] = ()
) -> str:
    """The report as Markdown, its PNGs written to images_dir; published results at the end.

    Images are linked as `<images_dir name>/<file>`, and each run's raw files relative to
    images_dir's parent: write the Markdown there.
    """
    blocks = build_report(groups, published, links_from=images_dir.parent)
    images_dir.mkdir(parents=True, exist_ok=True)
    for block in blocks:
        if isinstance(block, Image):
            atomic_write_bytes(images_dir / block.name, block.png)
    return "\n\n".join(block_markdown(b, images_dir.name) for b in blocks) + "\n"


def build_report(
    groups: Sequence[Group],
    published: Sequence[PublishedResult] = (),
    *,
    links_from: Path | None = None,
) -> list[Block]:
    """Every section of the report, in order, for any renderer.

    Links to each run's raw files are relative to `links_from`, the directory the page is
    written to; without it they are absolute file:// URLs.
    """
    sections = _sections(groups)
    blocks: list[Block] = [Heading(1, page_title(groups, published)), Para(_context(groups))]
    results = [r for g in groups for runs in g.all_runs for r in runs.results]
    if any(r.outcome.profile == "quick" for r in results):
        blocks.append(Para("Quick profile: shortened LoadGen runs, NOT valid for MLPerf."))
    if sections:
        rows = tuple(
            summary_row(s.group, f"[{n}](#{s.anchor})", _warning_count(s.group))
            for n, s in enumerate(sections, start=1)
        )
        blocks += [Table(SUMMARY_HEADER, rows), Para(SUMMARY_NOTE)]
    blocks += _contents(sections, published)
    for section in sections:
        blocks += _group(section, links_from)
    return blocks + _machines(sections) + _published(published)


def page_title(groups: Sequence[Group], published: Sequence[PublishedResult] = ()) -> str:
    """What was measured, in one line: models, scenarios and devices."""
    results = [g.results[0] for g in groups if g.results]
    if not results:
        return "Published MLPerf results" if published else "beyond-tops: no run measured"
    models = _few(model_label(r) for r in results)
    scenarios = _few(r.scenario for r in results)
    return f"{models} · {scenarios} on {_few(device_label(r) for r in results)}"


def slug(text: str) -> str:
    """A file-name-safe lower-case form of a label."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "group"


@dataclass(frozen=True)
class _Section:
    """A group as the report shows it: its title, anchor and image-name prefix."""

    group: Group
    title: str
    anchor: str
    prefix: str


def _sections(groups: Sequence[Group]) -> list[_Section]:
    titles = [configuration_label(g.results[0]) if g.results else g.label for g in groups]
    repeated = {t for t in titles if titles.count(t) > 1}
    sections = []
    for number, (group, title) in enumerate(zip(groups, titles, strict=True), start=1):
        title = f"{title} ({group.label})" if title in repeated else title
        prefix = f"{number}-{slug(group.label)}"
        sections.append(_Section(group, title, f"c{number}-{slug(title)}", prefix))
    return sections


def _few(items: Iterable[str], most: int = 3) -> str:
    distinct = list(dict.fromkeys(items))
    return ", ".join(distinct) if len(distinct) <= most else f"{len(distinct)} kinds"


def _context(groups: Sequence[Group]) -> str:
    results = [r for g in groups for runs in g.all_runs for r in runs.results]
    if not results:
        return "No run was measured: the page lists what was given."
    days = sorted({r.created_utc[:10] for r in results})
    when = days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"
    machines = {r.fingerprint.fingerprint_id: r.fingerprint for r in results}
    where = "; ".join(f"{machine_label(fp)}, machine {fid}" for fid, fp in machines.items())
    return (
        f"Measured {when} (UTC) on {where}; result.json records no host name, so a machine "
        "goes by its fingerprint (see Machines)."
    )


def _contents(sections: Sequence[_Section], published: Sequence[PublishedResult]) -> list[Block]:
    items = [f"[{s.title}](#{s.anchor})" for s in sections]
    items += ["[Machines](#machines)"] if any(s.group.results for s in sections) else []
    items += ["[Published MLPerf results](#published)"] if published else []
    return [Heading(2, "Contents", "contents"), Bullets(tuple(items))] if items else []


def _group(section: _Section, links_from: Path | None) -> list[Block]:
    """The group's sections; its prefix makes its image names unique within the report."""
    g, prefix = section.group, section.prefix
    blocks: list[Block] = [Heading(2, section.title, section.anchor), Para(_describe(g))]
    if g.results:
        blocks += _results(g)
    if g.sweep is not None:
        blocks += _sweep(g.sweep, prefix)
    if g.results:
        blocks += _latency(g, prefix) + _server(g)
        blocks += _telemetry(g, prefix) + _utilization(g, prefix)
    blocks += _runs(g, links_from)
    return blocks + _warnings(g)


def _describe(g: Group) -> str:
    if not g.results:
        return f"Sweep in {g.label}: no point was measured."
    r = g.results[0]
    what = {"run": "One run", "trials": "Trials", "sweep": "Sweep"}[g.kind]
    text = (
        f"{what} of {r.scenario_name}: {r.scenario}, model {r.model.name} "
        f"{r.model.precision} (sha256 {r.model.sha256[:12]}), "
        f"{', '.join(r.providers)}, {r.outcome.profile} profile"
    )
    text += f"; batch size {r.batch_size}" + (" (the best: its runs below)" if g.sweep else "")
    runs, valid = len(g.results), sum(x.outcome.valid for x in g.results)
    requested = f" of {g.runs.requested} requested" if runs < g.runs.requested else ""
    fid = r.fingerprint.fingerprint_id
    return (
        f"{text}; {runs} run{'s' * (runs != 1)}{requested}, LoadGen VALID in {valid}. "
        f"Directory {g.label}, on machine [{fid}](#machine-{fid})."
    )


def _results(g: Group) -> list[Block]:
    metrics = [*_scenario_metrics(g.results), *telemetry_metrics(g.results), *UTILIZATION]
    flags = spread_flags(g)
    rows = [_metric_row(m, metric_values(g.results, m.key), m.key in flags) for m in metrics]
    shown = [flags[m.key] for m in metrics if m.key in flags]
    return [
        Heading(3, "Results"),
        Table(("metric", "median", "best", "CoV", "per run"), tuple(r for r in rows if r)),
        Para("Median and best over the runs; CoV is the sample standard deviation over the mean."),
        *([Bullets(_flag_lines(shown))] if shown else []),
    ]


def _flag_lines(flags: Sequence[str]) -> tuple[str, ...]:
    """One line per distinct warning, naming every metric it concerns."""
    metrics: dict[str, list[str]] = {}
    for flag in flags:
        name, _, text = flag.partition(": ")
        metrics.setdefault(text, []).append(name)
    return tuple(f"{FLAG} {', '.join(names)}: {text}" for text, names in metrics.items())


def _scenario_metrics(results: Sequence[RunResult]) -> list[Metric]:
    """MLPerf's metric for the scenario first, then the others it defines; no duplicates."""
    scenario = results[0].scenario
    headline = headline_metric(results)
    others = {
        "SingleStream": [*LATENCIES, THROUGHPUT],
        "MultiStream": list(LATENCIES),
        "Offline": [THROUGHPUT],
        "Server": [THROUGHPUT, *LATENCIES],
    }[scenario]
    first = [] if scenario == "Server" else [headline]  # its rate has a table of its own
    return list({m.key: m for m in [*first, *others]}.values())


def _metric_row(metric: Metric, values: list[float], flagged: bool) -> tuple[str, ...]:
    if not values:
        return ()
    stats = trial_stats(values, requested=len(values), higher_is_better=metric.higher_is_better)
    cov = percent(stats.cov) if len(values) > 1 else "n/a (1 run)"
    cov += f" {FLAG}" if flagged else ""
    each = ", ".join(metric.format(v) for v in values)
    return (metric.title, metric.format(stats.median), metric.format(stats.best), cov, each)


def _sweep(sweep: Sweep, name: str) -> list[Block]:
    blocks: list[Block] = [Heading(3, "Throughput against batch size")]
    if sweep.points:
        png = plots.throughput_png(sweep)
        blocks.append(Image(f"{name}-throughput.png", png, "throughput", THROUGHPUT_CAPTION))
    best = max((p.stats.median for p in sweep.points), default=0.0)
    rows = tuple(
        (
            str(p.batch_size),
            THROUGHPUT.format(p.stats.median),
            str(len(p.stats.values)),
            percent(p.stats.cov),
            percent(p.stats.median / best) if best else "n/a",
        )
        for p in sweep.points
    )
    blocks.append(Table(("batch size", "samples/s (median)", "runs", "CoV", "of best"), rows))
    return [*blocks, Para(_sweep_verdict(sweep))]


def _sweep_verdict(sweep: Sweep) -> str:
    stopped = STOPPED.get(sweep.stopped, sweep.stopped)
    if sweep.limit is not None:
        stopped += f" at batch {sweep.limit.batch_size}: {sweep.limit.error}"
    if sweep.saturation_batch is None:
        return f"No saturation point. Stopped: {stopped}."
    return (
        f"Saturation at batch {sweep.saturation_batch}; best throughput at batch "
        f"{sweep.best_batch}. Stopped: {stopped}."
    )


def _server(g: Group) -> list[Block]:
    """Server: the rate and where it came from, the bound and p99 at it, the batcher's work."""
    found = [(label, r) for label, _, r in g.labelled(g.runs) if r.server is not None]
    if not found:
        return []
    header = (
        "run",
        "target QPS",
        "scheduled / completed samples/s",
        "bound (ms)",
        "p99 (ms)",
        "bound met",
        "batch sizes (queries: batches)",
        "queue delay p50 / p99 (ms)",
        "hold p99 (ms)",
    )
    rows = []
    for label, r in found:
        server = r.server
        assert server is not None
        delays, holds = server.queue_delay_ns, server.hold_ns
        rows.append(
            (
                label,
                f"{server.target_qps:g}",
                f"{_f(server.scheduled_samples_per_second, '.1f')} / "
                f"{_f(server.completed_samples_per_second, '.1f')}",
                _ms(server.latency_bound_ns),
                _ms(r.latency_ns.p99),
                {True: "yes", False: "NO", None: "n/a"}[server.latency_constraint_met],
                ", ".join(f"{size}: {count}" for size, count in server.batch_sizes.items())
                or "n/a",
                "n/a" if delays is None else f"{_ms(delays.p50)} / {_ms(delays.p99)}",
                "n/a" if holds is None else _ms(holds.p99),
            )
        )
    notes = _distinct([r.server.target_qps_source for _, r in found if r.server], "Rate")
    notes += _distinct([r.server.batching for _, r in found if r.server], "Batching")
    return [
        Heading(3, "Server: arrival rate, latency bound and batching"),
        Table(header, tuple(rows)),
        *notes,
    ]


def _latency(g: Group, prefix: str) -> list[Block]:
    """Percentiles per run and their plot: per query where recorded, else through LoadGen's."""
    runs = g.labelled(g.runs)
    if g.results[0].scenario == "Offline":
        return _offline_over_time(runs, prefix)
    header = ("run", *(k.replace("p999", "p99.9") for k in PERCENTILE_KEYS))
    getters = [metric_getter(f"latency_ns.{k}") for k in PERCENTILE_KEYS]
    rows = tuple((label, *(_ms(get(r)) for get in getters)) for label, _, r in runs)
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


def _telemetry(g: Group, prefix: str) -> list[Block]:
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
            _f(s.avg_power_w, ".1f"),
            _f(s.energy_per_inference_mj, ".2f"),
            _f(s.samples_per_second_per_watt, ".2f"),
            _f(s.peak_temp_c, ".1f"),
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


def _utilization(g: Group, prefix: str) -> list[Block]:
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
    )
    rows = tuple(
        (
            label,
            _f(u.achieved_tflops, ".3f"),
            _f(u.peak_tflops, ".3f"),
            _percent(u.fraction_of_peak) + (" (guess)" if u.peak_basis == "guess" else ""),
            _f(u.attainable_tflops, ".3f"),
            _percent(u.fraction_of_attainable),
            u.peak_name or "n/a",
            u.peak_basis or "n/a",
        )
        for label, u in found
    )
    notes = _distinct([u.note for _, u in found], "Notes")
    notes += _distinct([u.peak_source for _, u in found], "Peak source")
    notes += _distinct([u.peak_assumptions for _, u in found], "Peak assumptions")
    notes += _distinct([u.attainable_method for _, u in found], "Attainable rate")
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


def _percent(fraction: float | None) -> str:
    return _f(None if fraction is None else fraction * 100, ".2f")


def _distinct(texts: list[str | None], lead: str) -> list[Block]:
    return [Para(f"{lead}: {text}.") for text in dict.fromkeys(texts) if text]


def _bar(label: str, u: Utilization) -> plots.UtilizationBar | None:
    achieved, peak = u.achieved_tflops, u.peak_tflops
    if achieved is None or peak is None:
        return None
    return plots.UtilizationBar(label=label, achieved_tflops=achieved, peak_tflops=peak)


def _runs(g: Group, links_from: Path | None) -> list[Block]:
    """Each run with its LoadGen verdict, when it ran, and links to its raw files."""
    rows = tuple(
        (
            label,
            "VALID" if r.outcome.valid else "INVALID",
            r.created_utc[:19].replace("T", " "),
            _files(run_dir, links_from),
        )
        for runs in g.all_runs
        for label, run_dir, r in g.labelled(runs)
    )
    if not rows:
        return []
    header = ("run", "LoadGen", "measured (UTC)", "raw files")
    return [Heading(3, "Runs and raw logs"), Table(header, rows)]


def _files(run_dir: Path, links_from: Path | None) -> str:
    links = [
        f"[{name}]({_link(run_dir / name, links_from)})" if (run_dir / name).is_file() else ""
        for name in RAW_FILES
    ]
    missing = [name for name in RAW_FILES[:1] if not (run_dir / name).is_file()]
    return " · ".join([*filter(None, links), *(f"no {name}" for name in missing)])


def _link(path: Path, links_from: Path | None) -> str:
    """A URL of `path`: relative to the page's directory when known, else file://."""
    if links_from is None:
        return path.resolve().as_uri()
    return quote(Path(os.path.relpath(path.resolve(), links_from.resolve())).as_posix())


def _machines(sections: Sequence[_Section]) -> list[Block]:
    """Each machine once, by fingerprint id, with the configurations measured on it."""
    used: dict[str, list[_Section]] = {}
    prints: dict[str, Fingerprint] = {}
    for section in sections:
        for runs in section.group.all_runs:
            for r in runs.results:
                fid = r.fingerprint.fingerprint_id
                prints.setdefault(fid, r.fingerprint)
                if section not in used.setdefault(fid, []):
                    used[fid].append(section)
    if not prints:
        return []
    blocks: list[Block] = [Heading(2, "Machines", "machines")]
    for fid, fp in prints.items():
        state = "complete" if fp.complete else "incomplete"
        where = ", ".join(f"[{s.title}](#{s.anchor})" for s in used[fid])
        blocks += [
            Heading(3, f"Machine {fid}", f"machine-{fid}"),
            Para(f"{machine_label(fp)}; fingerprint {state}. Measured here: {where}."),
            Table(("part", "what was read"), tuple(machine_rows(fp))),
        ]
    return blocks


def _warning_count(g: Group) -> int:
    return len({text for _, text in group_warnings(g)})


def _warnings(g: Group) -> list[Block]:
    found: dict[str, list[str]] = {}
    for where, text in group_warnings(g):
        found.setdefault(text, []).append(where)
    items = tuple(f"[{', '.join(dict.fromkeys(where))}] {text}" for text, where in found.items())
    return [Heading(3, "Warnings"), Bullets(items) if items else Para("No warnings.")]


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value / 1e6:.3f}"


def _f(value: Any, spec: str) -> str:
    return format(value, spec) if isinstance(value, (int, float)) else "n/a"


def _published(records: Sequence[PublishedResult]) -> list[Block]:
    """Published MLPerf results, each labelled as such: imported, never measured here."""
    if not records:
        return []
    blocks: list[Block] = [
        Heading(2, "Published MLPerf results", "published"),
        Para(
            "Imported with `harness import mlperf` from MLPerf's published results trees: "
            "measured by their submitters on their systems, not by this harness on this machine."
        ),
    ]
    for record in records:
        rows = tuple((field, value) for field, value in describe(record))
        blocks += [Heading(3, record.label), Table(("field", "value"), rows)]
    return blocks
