"""The report on groups of runs: its sections as plain blocks, and their Markdown rendering."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from harness.analysis.compare import LATENCIES, THROUGHPUT, UTILIZATION, Metric, telemetry_metrics
from harness.analysis.groups import Group, RunSet, Sweep, group_warnings
from harness.analysis.stats import percent, trial_stats
from harness.files import atomic_write_bytes
from harness.report import plots
from harness.results.measures import Utilization
from harness.results.metrics import metric_getter, metric_values
from harness.results.published import PublishedResult, describe
from harness.results.records import RunResult
from harness.telemetry.csvfile import read_telemetry_csv

TELEMETRY_FILE = "telemetry.csv"
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
PERCENTILE_KEYS = ("min", "p50", "p90", "p95", "p97", "p99", "p999", "max", "mean")


@dataclass(frozen=True)
class Heading:
    """A section title; level 1 is the page title."""

    level: int
    text: str


@dataclass(frozen=True)
class Para:
    """A paragraph of plain text."""

    text: str


@dataclass(frozen=True)
class Table:
    """A table of plain-text cells."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Bullets:
    """A list of plain-text items."""

    items: tuple[str, ...]


@dataclass(frozen=True)
class Image:
    """A PNG figure with its file name, alternative text and caption."""

    name: str
    png: bytes
    alt: str
    caption: str


@dataclass(frozen=True)
class Details:
    """A collapsed block: a summary line that opens a table."""

    summary: str
    table: Table


Block = Heading | Para | Table | Bullets | Image | Details


def render_markdown(
    groups: Sequence[Group], *, images_dir: Path, published: Sequence[PublishedResult] = ()
) -> str:
    """The report as Markdown, its PNGs written to images_dir; published results at the end.

    Images are linked as `<images_dir name>/<file>`: write the Markdown into images_dir's parent.
    """
    blocks = build_report(groups, published)
    images_dir.mkdir(parents=True, exist_ok=True)
    for block in blocks:
        if isinstance(block, Image):
            atomic_write_bytes(images_dir / block.name, block.png)
    return "\n\n".join(_markdown(b, images_dir.name) for b in blocks) + "\n"


def build_report(groups: Sequence[Group], published: Sequence[PublishedResult] = ()) -> list[Block]:
    """Every section of the report, in order, for any renderer."""
    blocks: list[Block] = [Heading(1, "beyond-tops report")]
    if groups:
        blocks.append(Para("Groups: " + ", ".join(f"{g.label} ({g.kind})" for g in groups) + "."))
    results = [r for g in groups for runs in g.all_runs for r in runs.results]
    if any(r.outcome.profile == "quick" for r in results):
        blocks.append(Para("Quick profile: shortened LoadGen runs, NOT valid for MLPerf."))
    for number, group in enumerate(groups, start=1):
        blocks += _group(group, f"{number}-{slug(group.label)}")
    return blocks + _published(published)


def slug(text: str) -> str:
    """A file-name-safe lower-case form of a label."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "group"


def _group(g: Group, prefix: str) -> list[Block]:
    """The group's sections; `prefix` makes its image names unique within the report."""
    blocks: list[Block] = [Heading(2, g.label), Para(_describe(g))]
    if g.results:
        blocks += _results(g)
    if g.sweep is not None:
        blocks += _sweep(g.sweep, prefix)
    if g.results:
        blocks += _latency(g, prefix) + _server(g)
        blocks += _telemetry(g, prefix) + _utilization(g, prefix)
        blocks += _fingerprint(g.results[0])
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
    return f"{text}; {runs} run{'s' * (runs != 1)}{requested}, LoadGen VALID in {valid}."


def _results(g: Group) -> list[Block]:
    offline = g.results[0].scenario == "Offline"
    metrics = [THROUGHPUT, *(() if offline else LATENCIES)]
    metrics += [*telemetry_metrics(g.results), *UTILIZATION]
    rows = [_metric_row(m, metric_values(g.results, m.key)) for m in metrics]
    return [
        Heading(3, "Results"),
        Table(("metric", "median", "best", "CoV", "per run"), tuple(r for r in rows if r)),
        Para("Median and best over the runs; CoV is the sample standard deviation over the mean."),
    ]


def _metric_row(metric: Metric, values: list[float]) -> tuple[str, ...]:
    if not values:
        return ()
    stats = trial_stats(values, requested=len(values), higher_is_better=metric.higher_is_better)
    cov = percent(stats.cov) if len(values) > 1 else "n/a (1 run)"
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
    if g.results[0].scenario != "SingleStream":
        return []
    runs = g.labelled(g.runs)
    header = ("run", *(k.replace("p999", "p99.9") for k in PERCENTILE_KEYS))
    getters = [metric_getter(f"latency_ns.{k}") for k in PERCENTILE_KEYS]
    rows = tuple((label, *(_ms(get(r)) for get in getters)) for label, _, r in runs)
    png = plots.latency_cdf_png([(label, r.latency_ns) for label, _, r in runs])
    return [
        Heading(3, "Latency distribution (ms)"),
        Table(header, rows),
        Image(f"{prefix}-latency-cdf.png", png, "latency CDF", CDF_CAPTION),
    ]


def _telemetry(g: Group, prefix: str) -> list[Block]:
    blocks: list[Block] = [Heading(3, "Power, temperature and clocks")]
    for runs in g.all_runs:
        blocks += _telemetry_plot(g, runs, prefix)
    if len(blocks) == 1:
        blocks.append(
            Para(f"No {TELEMETRY_FILE} with power, temperature or clocks: nothing to plot.")
        )
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


def _fingerprint(r: RunResult) -> list[Block]:
    fp = r.fingerprint.to_dict()
    missing = [(f"missing: {m.get('field')}", str(m.get("reason"))) for m in fp.pop("missing", [])]
    state = "complete" if r.fingerprint.complete else f"incomplete: {len(missing)} missing"
    summary = f"Fingerprint {r.fingerprint.fingerprint_id} ({state})"
    table = Table(("field", "value"), (*_flatten(fp, ""), *missing))
    return [Heading(3, "Fingerprint"), Details(summary, table)]


def _flatten(value: Any, key: str) -> list[tuple[str, str]]:
    if isinstance(value, Mapping) and value:
        return [row for k, v in value.items() for row in _flatten(v, f"{key}.{k}".lstrip("."))]
    if isinstance(value, list) and any(isinstance(v, (Mapping, list)) for v in value):
        return [row for i, v in enumerate(value) for row in _flatten(v, f"{key}.{i}")]
    if isinstance(value, list):
        return [(key, ", ".join(str(v) for v in value) or "(none)")]
    return [
        (key, value if isinstance(value, str) else json.dumps(value) if value != {} else "(none)")
    ]


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


def _markdown(block: Block, images: str) -> str:
    if isinstance(block, Heading):
        return f"{'#' * block.level} {block.text}"
    if isinstance(block, Para):
        return block.text
    if isinstance(block, Bullets):
        return "\n".join(f"- {item}" for item in block.items)
    if isinstance(block, Image):
        return f"![{block.alt}]({quote(images)}/{block.name})\n\n*{block.caption}*"
    if isinstance(block, Details):
        summary = html.escape(block.summary)
        return f"<details>\n<summary>{summary}</summary>\n\n{_table(block.table)}\n\n</details>"
    return _table(block)


def _table(table: Table) -> str:
    lines = [table.header, tuple("---" for _ in table.header), *table.rows]
    return "\n".join("| " + " | ".join(_cell(c) for c in line) + " |" for line in lines)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _published(records: Sequence[PublishedResult]) -> list[Block]:
    """Published MLPerf results, each labelled as such: imported, never measured here."""
    if not records:
        return []
    blocks: list[Block] = [
        Heading(2, "Published MLPerf results"),
        Para(
            "Imported with `harness import mlperf` from MLPerf's published results trees: "
            "measured by their submitters on their systems, not by this harness on this machine."
        ),
    ]
    for record in records:
        rows = tuple((field, value) for field, value in describe(record))
        blocks += [Heading(3, record.label), Table(("field", "value"), rows)]
    return blocks
