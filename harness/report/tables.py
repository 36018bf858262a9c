"""The report's metric tables: each metric over the runs with its spread, the sweep, Server."""

from __future__ import annotations

from collections.abc import Sequence

from harness.analysis.spread import spread_flags
from harness.analysis.trials import trial_stats
from harness.analysis.values import (
    catalogue_for,
    headline,
    metric_values,
    reported,
    telemetry_metrics,
)
from harness.records.group import Group, Sweep
from harness.records.metrics import (
    MEMORY,
    THROUGHPUT,
    UTILIZATION,
    Metric,
    percent,
)
from harness.records.result import RunResult
from harness.report import plots
from harness.report.blocks import Block, Bullets, Heading, Image, Para, Table
from harness.report.cells import cov_cell, distinct_notes, fixed, ms
from harness.report.memory import memory_notes

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
FLAG = "⚠"  # marks a number whose spread over the runs is too large to trust


def results_blocks(g: Group) -> list[Block]:
    """The group's metrics over its runs: median, best, CoV and each run, spread flagged."""
    metrics = [
        *_scenario_metrics(g.results),
        *telemetry_metrics(g.results),
        *UTILIZATION,
        *MEMORY,
    ]
    flags = spread_flags(g)
    rows = [_metric_row(m, metric_values(g.results, m), m.key in flags) for m in metrics]
    shown = [flags[m.key] for m in metrics if m.key in flags]
    return [
        Heading(3, "Results"),
        Table(("metric", "median", "best", "CoV", "per run"), tuple(r for r in rows if r)),
        Para("Median and best over the runs; CoV is the sample standard deviation over the mean."),
        Bullets(memory_notes(g.results)),
        *([Bullets(_flag_lines(shown))] if shown else []),
    ]


def _flag_lines(flags: Sequence[str]) -> tuple[str, ...]:
    """One line per distinct warning, naming every metric it concerns."""
    metrics: dict[str, list[str]] = {}
    for flag in flags:
        name, _, text = flag.partition(": ")
        metrics.setdefault(text, []).append(name)
    return tuple(f"{FLAG} {'; '.join(names)}: {text}" for text, names in metrics.items())


def _scenario_metrics(results: Sequence[RunResult]) -> list[Metric]:
    """MLPerf's metric for the scenario first, the others it reports, then the harness's own."""
    scenario = results[0].scenario
    found = catalogue_for(scenario, results)
    metrics = [headline(scenario, results), *reported(scenario, results), *found.beside]
    return list({m.key: m for m in metrics}.values())


def _metric_row(metric: Metric, values: list[float], flagged: bool) -> tuple[str, ...]:
    if not values:
        return ()
    stats = trial_stats(values, requested=len(values), higher_is_better=metric.higher_is_better)
    cov = cov_cell(stats)
    cov += f" {FLAG}" if flagged else ""
    each = ", ".join(metric.format(v) for v in values)
    return (metric.title, metric.format(stats.median), metric.format(stats.best), cov, each)


def sweep_blocks(sweep: Sweep, name: str) -> list[Block]:
    """Throughput against batch size: its plot, a row per batch and the verdict."""
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
            cov_cell(p.stats),
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


def server_blocks(g: Group) -> list[Block]:
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
                f"{fixed(server.scheduled_samples_per_second, '.1f')} / "
                f"{fixed(server.completed_samples_per_second, '.1f')}",
                ms(server.latency_bound_ns),
                ms(r.latency_ns.p99),
                {True: "yes", False: "NO", None: "n/a"}[server.latency_constraint_met],
                ", ".join(f"{size}: {count}" for size, count in server.batch_sizes.items())
                or "n/a",
                "n/a" if delays is None else f"{ms(delays.p50)} / {ms(delays.p99)}",
                "n/a" if holds is None else ms(holds.p99),
            )
        )
    notes = distinct_notes([r.server.target_qps_source for _, r in found if r.server], "Rate")
    notes += distinct_notes([r.server.batching for _, r in found if r.server], "Batching")
    return [
        Heading(3, "Server: arrival rate, latency bound and batching"),
        Table(header, tuple(rows)),
        *notes,
    ]
