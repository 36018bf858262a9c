"""Summaries: the text a run prints, and a report's summary row."""

from __future__ import annotations

import statistics
from collections.abc import Collection, Sequence

from harness.analysis.spread import spread_flags
from harness.analysis.values import catalogue_for, headline, metric_values
from harness.records.group import Group
from harness.records.metrics import (
    PER_INFERENCE,
    PER_TOKEN,
    SCENARIOS,
    per_source,
    percent,
)
from harness.records.result import RunResult
from harness.records.trust import Trust
from harness.report.badges import trust_line, trust_rows
from harness.report.memory import memory_line
from harness.report.tokenenergy import energy_rows
from harness.report.tokens import token_rows
from harness.text import printable


def render_summary(
    result: RunResult,
    run_dir: str | None = None,
    trust: Trust | None = None,
    *,
    said: Collection[str] = (),
) -> str:
    """A short, aligned table of the numbers a user looks at first; `trust` below its verdict.

    `said`: warnings this command printed already (a trial's, word for word), left out.
    """
    outcome = result.outcome
    verdict = "VALID" if outcome.valid else "INVALID"
    if outcome.profile == "submission":
        profile = "submission profile" + ("" if outcome.submission_valid else " (not valid)")
    else:
        profile = "quick profile - NOT submission-valid"
    model, versions, warmup = result.model, result.versions, result.warmup
    implausible = "; IMPLAUSIBLE (see physics)" if is_implausible(result) else ""
    rows = [
        ("result", f"{verdict} per LoadGen; {profile}{implausible}"),
        *(trust_rows(trust) if trust is not None else []),
        ("throughput", _throughput(result)),
        *token_rows(result),
        *energy_rows(result),
        ("latency", _latency(result)),
        *([("server", line)] if (line := _server(result)) is not None else []),
        ("model", f"{model.name} {model.precision} sha256 {model.sha256[:12]}"),
        (
            "runtime",
            f"onnxruntime {versions.onnxruntime} {','.join(result.providers)}"
            f" | LoadGen {versions.loadgen}",
        ),
        ("warm-up", f"{warmup.queries} queries in {warmup.duration_ms / 1000:.1f} s"),
        ("precision", _precision(result)),
        ("accuracy", _accuracy(result)),
        ("compute", _compute(result)),
        ("physics", physics_text(result)),
        ("power", _power(result)),
        ("memory", memory_line(result.memory)),
    ]
    rows += [("reason", reason) for reason in outcome.invalid_reasons if reason]
    rows += [("warning", warning) for warning in result.warnings if warning not in said]
    if run_dir is not None:
        rows.append(("run dir", run_dir))
    title = f"{result.scenario_name}: {result.scenario}, batch {result.batch_size}"
    if result.label is not None:
        title = f"{printable(result.label, newlines=False)} · {title}"
    return "\n".join([title] + [f"  {key:<11} {value}" for key, value in rows])


def _precision(result: RunResult) -> str:
    block = result.precision
    method = block.recipe.method
    if method == "none":
        return f"{block.precision} (the source model, unconverted)"
    params = block.recipe.params
    calib = params.get("calibration_method")
    how = f"{method}, {calib} on {params.get('calibration_samples')} samples" if calib else method
    return f"{block.precision} ({how}) from fp32 sha256 {block.source_sha256[:12]}"


def _accuracy(result: RunResult) -> str:
    block = result.accuracy
    fp32 = block.against_fp32
    if block.samples == 0 and block.not_measurable is not None:  # not scored (generative)
        return f"{block.verdict}: {block.not_measurable}"
    if block.tokens is not None:  # a generative model's greedy tokens against FP32's
        t = block.tokens
        return (
            f"token agreement with FP32 {t.agreement * 100:.2f} % over {t.prompts} prompts "
            f"(first divergence: median position {t.median_first_divergence:g}; ROUGE-L "
            f"{t.rouge_l:.3f}): {block.verdict} (>= {t.threshold * 100:g} % to pass)"
        )
    if fp32.top1_agreement is not None:
        found = f"top-1 agreement with FP32 {fp32.top1_agreement * 100:.2f} %"
    else:
        cosine = float("nan") if fp32.cosine_similarity is None else fp32.cosine_similarity
        found = f"cosine similarity with FP32 {cosine:.6f}"
    labelled = block.against_labels
    if labelled is not None and labelled.top1 is not None:
        top5 = "" if labelled.top5 is None else f", top-5 {labelled.top5 * 100:.2f} %"
        found = f"top-1 {labelled.top1 * 100:.2f} %{top5} against labels; {found}"
    why = block.criterion if block.not_measurable is None else block.not_measurable
    return f"{found} over {block.samples} samples: {block.verdict} ({why})"


def _compute(result: RunResult) -> str:
    block = result.utilization
    achieved, peak = block.achieved_tflops, block.peak_tflops
    share = block.fraction_of_peak
    if achieved is None:
        return f"n/a ({block.note})"
    text = f"{achieved:.3f} TFLOP/s achieved"
    if peak is None or share is None:
        text = f"{text}; no peak known; set peak_tflops in the scenario"
    else:
        basis = ", a GUESS" if block.peak_basis == "guess" else ""
        text = f"{text} of {peak:.3f} peak ({block.peak_precision}{basis}): {share * 100:.1f} %"
    attainable, of_attainable = block.attainable_tflops, block.fraction_of_attainable
    if attainable is not None and of_attainable is not None:
        text = f"{text}; of {attainable:.3f} attainable (GEMM probe): {of_attainable * 100:.1f} %"
    flagged = block.peak_basis == "guess" or (share or 0) > 1 or (of_attainable or 0) > 1
    return f"{text}; {block.note}" if flagged and block.note else text


def is_implausible(result: RunResult) -> bool:
    """Whether the physics check found the run's achieved compute impossible."""
    return result.plausibility.verdict == "IMPLAUSIBLE"


def physics_text(result: RunResult) -> str:
    """The physics check in one line: its verdict, the figure judged and the margin."""
    block = result.plausibility
    if block.verdict == "not judged":
        return f"not judged: {block.reason}"
    limit = "" if block.limit is None else f" (limit {block.limit:g}x)"
    if block.verdict == "IMPLAUSIBLE":
        return f"IMPLAUSIBLE: {block.figure}{limit}; {block.reason}"
    return f"plausible: {block.figure}{limit}"


def _power(result: RunResult) -> str:
    telemetry = result.telemetry
    if telemetry is None:
        return "not measured (the telemetry window never opened)"
    parts = []
    for name, source in telemetry.sources.items():
        watts, per_inference = source.avg_power_w, source.energy_per_inference_mj
        text = f"{name} {watts:.1f} W" if watts is not None else f"{name} n/a"
        if per_inference is not None:
            text += f", {per_inference:.2f} mJ/inference"
        parts.append(text)
    if parts:
        return "; ".join(parts)
    missing = ", ".join(item.source for item in telemetry.unavailable)
    return f"not measured here (unavailable: {missing or 'no source'}; see result.json)"


def _throughput(result: RunResult) -> str:
    if result.samples_per_second is None:
        return "n/a"
    return f"{result.samples_per_second:,.1f} samples/s"


def _latency(result: RunResult) -> str:
    lat = result.latency_ns
    if result.scenario == "Offline":
        return "n/a (Offline measures throughput; see SingleStream for latency)"
    parts = [f"p50 {_ms(lat.p50)}", f"p90 {_ms(lat.p90)}", f"p99 {_ms(lat.p99)}"]
    if result.scenario == "SingleStream":
        parts.append(f"early-stopping p90 {_ms(lat.early_stopping_p90)}")
    elif result.scenario == "MultiStream":
        parts = [f"per query of {result.batch_size}:", *parts]
        parts.append(f"early-stopping p99 {_ms(lat.early_stopping_p99)}")
    server = result.server
    if server is not None and result.generation is None:  # a generative one: TTFT and TPOT
        met = {True: "met", False: "NOT met", None: "unknown"}
        bound = _ms(server.latency_bound_ns)
        parts.append(
            f"bound {bound} at p{server.latency_percentile or 99:g}: "
            f"{met[server.latency_constraint_met]}; early stopping {met[server.early_stopping_met]}"
        )
    return "  ".join(parts)


def _server(result: RunResult) -> str | None:
    server = result.server
    if server is None:
        return None
    scheduled = server.scheduled_samples_per_second
    completed = server.completed_samples_per_second
    sizes = ", ".join(f"{size}: {count}" for size, count in server.batch_sizes.items())
    delays = server.queue_delay_ns
    queued = "" if delays is None else f"; queue delay p50 {_ms(delays.p50)} p99 {_ms(delays.p99)}"
    return (
        f"target {server.target_qps:g} QPS ({server.target_qps_source}); scheduled "
        f"{_rate(scheduled)}, completed {_rate(completed)} samples/s; {server.batches} "
        f"batches of at most {server.max_batch} (queries: batches {sizes or 'none'}), hold "
        f"{server.max_wait_ms:g} ms{queued}"
    )


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.1f}"


def _ms(value: int | None) -> str:
    return "n/a" if value is None else f"{value / 1e6:.3f} ms"


# The report's first screen: what each configuration is, and MLPerf's metric for it.

MODEL_NAMES = {"resnet50": "ResNet-50", "resnet50-mlperf": "ResNet-50 (MLPerf)"}
SUMMARY_HEADER = (
    "#",
    "device",
    "model",
    "scenario",
    "MLPerf metric",
    "value",
    "LoadGen",
    "trust",
    "energy",
    "spread (CoV)",
    "warnings",
)
SUMMARY_NOTE = (
    "One row per configuration; value: the median over its runs of the metric MLPerf reports "
    f"for the scenario ({'; '.join(f'{s.scenario}: {s.note}' for s in SCENARIOS.values())}); "
    "spread: the CoV of that metric over the runs, marked ⚠ where the spread check warns "
    "(too large to trust, or fewer runs than requested); trust: the tier and every verdict "
    "(profile, LoadGen, INCOMPLETE, physics, TEST01/TEST04, bundle, reproduction, spread)."
)


def model_label(result: RunResult) -> str:
    """The model and its precision as a reader names them, e.g. "ResNet-50 fp32"."""
    name = result.model.name
    return f"{MODEL_NAMES.get(name, name)} {result.model.precision}"


def device_label(result: RunResult) -> str:
    """What measured: the GPU(s) of a GPU target, else the CPU model and its usable CPUs."""
    hw = result.hardware
    if hw.target != "cpu" and hw.gpus:
        names = list(dict.fromkeys(hw.gpus))
        if len(names) == 1 and len(hw.gpus) > 1:
            return f"{len(hw.gpus)}x {names[0]}"
        return ", ".join(names)
    cpus = f" ({hw.usable_cpus} CPUs)" if hw.usable_cpus else ""
    return f"{hw.cpu_model or 'unknown CPU'}{cpus}"


def configuration_label(result: RunResult) -> str:
    """A configuration named by what it is: model and precision, scenario, device."""
    return f"{model_label(result)} · {result.scenario} · {device_label(result)}"


def summary_row(
    group: Group, link: str, warnings: int, trust: Trust | None = None
) -> tuple[str, ...]:
    """The group's row of the summary table; `link` is the Markdown link to its section."""
    results = group.results
    shown = "n/a" if trust is None else f"{trust.tier}: {trust_line(trust)}"
    if not results:
        return (
            link,
            "n/a",
            "n/a",
            "n/a",
            "n/a",
            "n/a",
            "no run",
            shown,
            "n/a",
            "n/a",
            str(warnings),
        )
    r = results[0]
    metric = headline(r.scenario, results)
    values = metric_values(results, metric)
    value = metric.format(statistics.median(values)) if values else "n/a"
    return (
        link,
        device_label(r),
        model_label(r),
        r.scenario,
        metric.title,
        value,
        _validity(results, group.runs.requested),
        shown,
        _energy(results),
        _spread(values) + (" ⚠" if metric.key in spread_flags(group) else ""),
        str(warnings),
    )


def _validity(results: Sequence[RunResult], requested: int) -> str:
    valid = sum(r.outcome.valid for r in results)
    parts = [f"{valid}/{len(results)} VALID"]
    if requested > len(results):
        parts.append(f"{requested} runs requested")
    if any(r.server is not None and r.server.latency_constraint_met is False for r in results):
        parts.append("bound NOT met")
    if any(r.outcome.profile == "quick" for r in results):
        parts.append("quick profile")
    implausible = sum(is_implausible(r) for r in results)
    if implausible:
        parts.append(f"{implausible}/{len(results)} IMPLAUSIBLE")
    return ", ".join(parts)


def _energy(results: Sequence[RunResult]) -> str:
    """Per source, the value that suits the scenario: mJ per inference, or samples/s/W."""
    name = catalogue_for(results[0].scenario, results).energy
    sources = sorted({s for r in results if r.telemetry for s in r.telemetry.sources})
    parts = []
    for source in sources:
        metric = per_source(source, name)
        values = metric_values(results, metric)
        if values:
            unit = {PER_TOKEN: "mJ/token", PER_INFERENCE: "mJ/inference"}.get(name, metric.unit)
            parts.append(f"{source} {metric.format(statistics.median(values))} {unit}")
    return "; ".join(parts) or "not measured"


def _spread(values: Sequence[float]) -> str:
    if len(values) < 2:
        return f"n/a ({len(values)} run{'s' * (len(values) != 1)})"
    mean = statistics.fmean(values)
    return percent(statistics.stdev(values) / mean) if mean else "n/a"
