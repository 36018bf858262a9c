"""A published record's rows as a person reads them first: for `harness show` and the report."""

from __future__ import annotations

from harness.records.published import (
    MainMetric,
    PublishedResult,
    PublishedSystem,
    times,
    whole_count,
)
from harness.records.result import Latencies

# Offline's one query spans the whole run: its "latency" percentiles are not a result.
OFFLINE_LATENCY = "n/a (Offline measures throughput; its one query's latency is the run's length)"


def describe(record: PublishedResult) -> list[tuple[str, str]]:
    """(field, value) rows: where the result is from, what it ran and what it measured."""
    s, lat = record.system, record.latency_ns
    rows = [
        ("source", f"{record.label}; never measured here"),
        ("org", record.org),
        ("system", f"{s.id}" + (f" ({s.name})" if s.name and s.name != s.id else "")),
        ("division", record.division),
        ("MLPerf version", record.mlperf_version or "unknown (not in the tree; give --version)"),
        ("LoadGen", record.loadgen_version or "not logged"),
        ("benchmark", f"{record.benchmark} (model {record.model})"),
        ("scenario", record.scenario),
        ("precision", _precision(record)),
        ("result", record.verdict + "".join(f"; {r}" for r in record.invalid_reasons)),
        ("metric", f"{record.metric.label} {_metric_value(record.metric)}"),
        *([("per accelerator", per)] if (per := _per_accelerator(record)) else []),
        *([("token latency", tok)] if (tok := _token_latency(record)) else []),
        ("latency", _latency(lat) if record.scenario != "Offline" else OFFLINE_LATENCY),
        ("processor", _device(s.processor, s.processors_per_node)),
        ("accelerator", _accelerators(s)),
        ("nodes", s.nodes or "not stated"),
        ("software", ", ".join(x for x in (s.framework, s.software) if x) or "not stated"),
        ("status", f"{s.status or 'not stated'}; system type {s.system_type or 'not stated'}"),
    ]
    if record.accuracy:
        rows.append(("accuracy", record.accuracy))
    if record.compliance:
        rows.append(("compliance", "; ".join(c.verdict for c in record.compliance)))
    rows += [("warning", w) for w in (*record.loadgen_warnings, *record.import_warnings)]
    rows.append(("from", record.source_path))
    return rows


def _precision(record: PublishedResult) -> str:
    if record.precision is None:
        return "not stated (no measurements JSON with weight_data_types)"
    inputs = f", inputs {record.input_precision}" if record.input_precision else ""
    return f"weights {record.precision}{inputs}"


def _metric_value(metric: MainMetric) -> str:
    if metric.unit == "ns":
        return f"{metric.value / 1e6:,.3f} ms"
    return f"{metric.value:,.2f} {metric.unit}"


def _latency(lat: Latencies) -> str:
    parts = [
        f"{name} {value / 1e6:,.3f} ms"
        for name, value in (("p50", lat.p50), ("p90", lat.p90), ("p99", lat.p99))
        if value is not None
    ]
    early = lat.early_stopping_p90 or lat.early_stopping_p99
    if early is not None:
        which = "p90" if lat.early_stopping_p90 is not None else "p99"
        parts.append(f"early-stopping {which} {early / 1e6:,.3f} ms")
    return "  ".join(parts) or "not logged"


def _token_latency(record: PublishedResult) -> str | None:
    """An LLM's TTFT and TPOT percentiles beside its tokens/s; None for any other result."""
    gen = record.generation
    if gen is None:
        return None
    parts = [
        f"{name} {which} {value / 1e6:,.3f} ms"
        for name, found in (("TTFT", gen.ttft_ns), ("TPOT", gen.tpot_ns))
        if found is not None
        for which, value in (("p50", found.p50), ("p90", found.p90), ("p99", found.p99))
        if value is not None
    ]
    return "  ".join(parts) or "not logged (Offline measures neither)"


def _device(model: str | None, count: str | None) -> str:
    return times(count, model) if model else "none"


def _accelerators(s: PublishedSystem) -> str:
    """The accelerators per node, and in the whole system where it has several nodes."""
    if not s.accelerator:
        return "none"
    count, nodes = s.accelerator_count, whole_count(s.nodes)
    if count is None:
        return f"{_device(s.accelerator, s.accelerators_per_node)} (total not stated)"
    if nodes == 1:
        return times(s.accelerators_per_node, s.accelerator)
    return f"{nodes} nodes x {times(s.accelerators_per_node, s.accelerator)} = {count} in all"


def _per_accelerator(record: PublishedResult) -> str | None:
    """A rate over the whole system's accelerators; None for a latency or no accelerator."""
    metric, count = record.metric, record.system.accelerator_count
    if metric.unit == "ns" or not record.system.accelerator:
        return None
    if count is None:
        return "unknown (the system JSON does not state both counts)"
    return f"{metric.value / count:,.2f} {metric.unit} ({count} accelerators)"
