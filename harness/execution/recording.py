"""Result building: a run's measurements and LoadGen's logs into a typed RunResult.

The runner hands over what it measured (``Measured``) and what was asked for (``Requested``);
everything else comes from the run directory's detail log and configuration files. The
telemetry summary and the accuracy score arrive as records; the blocks that other components
still hand over as JSON-ready data (session settings, precision record, LoadGen's latencies)
are decoded here, through the same checks as result.json.
"""

from __future__ import annotations

import datetime as dt
import math
import platform
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import harness
from harness.analysis.flops import count_flops
from harness.analysis.peaks import resolve_peak
from harness.analysis.plausibility import judge
from harness.analysis.utilization import utilization
from harness.config import ProfileName, Scenario
from harness.errors import ResultError
from harness.fingerprint.survey import Survey, image_info
from harness.handoff import read_peak
from harness.loadgen import conf as lgconf
from harness.loadgen.batching import BatchPolicy
from harness.loadgen.sut import BatcherStats
from harness.loadgen.timed import TestPlan, Window
from harness.models.validate import ModelInfo
from harness.packages import required_version
from harness.records.accuracy import Accuracy
from harness.records.codec import from_data
from harness.records.fingerprint import Fingerprint
from harness.records.layout import DETAIL_LOG, PEAK_SEARCH_DIR
from harness.records.loadgen_log import (
    DetailLog,
    effective_settings,
    latency_percentiles_ns,
    parse_detail_log,
    samples_per_second,
)
from harness.records.measures import PrecisionRecord, Utilization
from harness.records.memory import MemoryFootprint
from harness.records.result import (
    ContainerImage,
    Hardware,
    Latencies,
    LoadGenConfig,
    LoadGenOutcome,
    MeasuredWindow,
    ModelRecord,
    PreflightRecord,
    QueueDelays,
    RunResult,
    RuntimeRecord,
    ServerRecord,
    Versions,
    Warmup,
)
from harness.records.telemetry import TelemetrySummary
from harness.runtime.probe import AttainableRate, ProbeUnavailableError, attainable_rate
from harness.runtime.session import Session
from harness.runtime.warmup import WarmUpStats
from harness.strictjson import JsonObject


@dataclass(frozen=True, slots=True, kw_only=True)
class Requested:
    """What the run was asked to do; ``model_name`` is the name results show."""

    scenario: Scenario
    profile: ProfileName
    hw: str
    model_name: str
    label: str | None = None  # --label


@dataclass(frozen=True, slots=True, kw_only=True)
class Measured:
    """What the runner measured, as it hands it over (producers' JSON-ready blocks included)."""

    info: ModelInfo
    session: Session
    plan: TestPlan
    warmup: WarmUpStats
    window: Window
    warnings: list[str]
    data_path: str
    machine: Survey
    telemetry: TelemetrySummary | None
    accuracy: Accuracy
    precision: JsonObject
    batcher: BatcherStats | None = None  # Server's dynamic batcher
    batch_policy: BatchPolicy | None = None  # and how its limits were derived
    files: Mapping[str, str] | None = None  # the data files written into the run, by role
    memory: MemoryFootprint | None = None  # the worker's footprint over the window


def build_result(spec: Requested, run_dir: Path, measured: Measured) -> RunResult:
    """The run's result, from its measurements and the detail log LoadGen left in run_dir."""
    log = parse_detail_log(run_dir / DETAIL_LOG)
    accuracy = measured.accuracy
    sps = samples_per_second(log)
    session, machine = measured.session, measured.machine
    used = run_utilization(spec, measured, sps)
    plausibility = judge(used, sps)
    return RunResult(
        run_id=run_dir.name,
        label=spec.label,
        created_utc=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        scenario=spec.scenario.scenario,
        scenario_name=spec.scenario.name,
        outcome=outcome(
            spec,
            measured.plan,
            log,
            accuracy_passed=accuracy.passed,
            plausible=plausibility.verdict != "IMPLAUSIBLE",
        ),
        latency_ns=from_data(Latencies, latency_percentiles_ns(log), "latency_ns"),
        samples_per_second=sps,
        qps_with_loadgen_overhead=_float(log.get("result_qps_with_loadgen_overhead")),
        qps_without_loadgen_overhead=_float(log.get("result_qps_without_loadgen_overhead")),
        batch_size=spec.scenario.batch_size,
        model=_model(spec, measured),
        hardware=hardware(spec.hw, machine.fingerprint),
        providers=tuple(session.providers),
        runtime=from_data(
            RuntimeRecord, {**session.settings, "data_path": measured.data_path}, "runtime"
        ),
        versions=versions(),
        settings=effective_settings(log),
        loadgen_config=_loadgen_config(measured.plan),
        warmup=_warmup(measured.warmup),
        window=_window(measured.window),
        warnings=(*(str(w) for w in machine.warnings), *measured.warnings),
        preflight=tuple(PreflightRecord(code=w.code, message=w.message) for w in machine.warnings),
        fingerprint=machine.fingerprint,
        telemetry=measured.telemetry,
        memory=measured.memory,
        image=_image(image_info()),
        utilization=used,
        plausibility=plausibility,
        precision=from_data(PrecisionRecord, measured.precision, "precision"),
        accuracy=accuracy,
        server=server_record(spec, log, measured.batcher, run_dir, measured.batch_policy),
        files=None if measured.files is None else dict(sorted(measured.files.items())),
    )


def outcome(
    spec: Requested,
    plan: TestPlan,
    log: DetailLog,
    *,
    accuracy_passed: bool,
    plausible: bool = True,
) -> LoadGenOutcome:
    """LoadGen's verdict, and whether the run counts for a submission (never IMPLAUSIBLE)."""
    valid = log.get("result_validity") == "VALID"
    mode: Literal["performance", "accuracy"] = (
        "accuracy" if plan.mode == "accuracy" else "performance"
    )
    return LoadGenOutcome(
        mode=mode,
        profile=spec.profile,
        submission_valid=valid
        and spec.profile == "submission"
        and not log.errors
        and accuracy_passed
        and plausible,
        valid=valid,
        invalid_reasons=_invalid_reasons(log),
        loadgen_errors=tuple(log.errors),
    )


def _invalid_reasons(log: DetailLog) -> tuple[str, ...]:
    """LoadGen's reasons (it logs an empty one when early stopping alone failed: say so)."""
    reasons = [str(r).strip() for r in log.get("result_invalid_reason", []) if str(r).strip()]
    if log.get("result_validity") != "VALID" and log.get("early_stopping_met") is False:
        detail = " ".join(str(log.get("early_stopping_result") or "").split())
        reasons.append(f"early stopping not met: {detail}".strip())
    return tuple(reasons)


def server_record(
    spec: Requested,
    log: DetailLog,
    batcher: BatcherStats | None,
    run_dir: Path,
    policy: BatchPolicy | None = None,
) -> ServerRecord | None:
    """The Server scenario's record from the detail log and the batcher (None elsewhere)."""
    if spec.scenario.scenario != "Server":
        return None
    server = spec.scenario.server
    met = log.get("result_perf_constraints_met")
    early = log.get("early_stopping_met")
    bound = log.get("effective_target_latency_ns")
    percentile = log.get("effective_target_latency_percentile")
    overlatency = log.get("result_overlatency_query_count")
    result_text = log.get("early_stopping_result")
    return ServerRecord(
        target_qps=float(log.get("effective_target_qps") or server.target_qps or 0.0),
        target_qps_source=_qps_source(run_dir),
        scheduled_samples_per_second=_float(log.get("result_scheduled_samples_per_sec")),
        completed_samples_per_second=_float(log.get("result_completed_samples_per_sec")),
        latency_bound_ns=None if bound is None else int(bound),
        latency_percentile=_percent(percentile),
        latency_constraint_met=None if met is None else bool(met),
        overlatency_queries=None if overlatency is None else int(overlatency),
        early_stopping_met=None if early is None else bool(early),
        early_stopping_result=None if result_text is None else " ".join(str(result_text).split()),
        compiled_batch=spec.scenario.batch_size,
        max_batch=spec.scenario.batch_size if policy is None else policy.max_batch,
        max_wait_ms=(policy.max_wait_ms if policy is not None else server.max_wait_ms) or 0.0,
        batching=None if policy is None else policy.how,
        batch_costs_ms={} if policy is None else {str(k): v for k, v in policy.costs_ms.items()},
        queue_depth=server.queue_depth,
        workers=policy.workers if policy is not None else server.workers or 1,
        batches=0 if batcher is None else batcher.batches,
        mean_batch=None if batcher is None else batcher.mean_batch,
        batch_sizes={} if batcher is None else {str(k): v for k, v in batcher.batch_sizes.items()},
        queue_delay_ns=_delays(None if batcher is None else batcher.queue_delay_ns),
        hold_ns=_delays(None if batcher is None else batcher.hold_ns),
    )


def _delays(delays_ns: list[int] | None) -> QueueDelays | None:
    """Percentiles of a list of durations in ns (nearest rank); None for none."""
    if not delays_ns:
        return None
    ordered = sorted(delays_ns)

    def rank(share: float) -> int:
        return ordered[min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))]

    return QueueDelays(p50=rank(0.5), p90=rank(0.9), p99=rank(0.99), max=ordered[-1])


def _qps_source(run_dir: Path) -> str:
    """Where Server's rate came from: the scenario, or the peak search the pipeline ran."""
    try:
        search = read_peak(run_dir / PEAK_SEARCH_DIR)
    except ResultError:
        return "the scenario's server.target_qps"
    found, start = search.found_qps, search.start_qps
    runs = search.runs if search.runs is not None else len(search.steps) + 1
    text = (
        f"the peak search found {found:g} QPS in {runs} runs from {start:g} QPS "
        f"(logs in {PEAK_SEARCH_DIR}/)"
    )
    aside = sorted(p.name for p in run_dir.glob("confirm-*") if p.is_dir())
    if aside:
        text += (
            f"; {len(aside)} other confirming run(s) are kept in {', '.join(aside)}/ (the "
            "highest VALID rate is the result)"
        )
    return f"{text}; this performance run confirms the rate or not"


def _percent(value: Any) -> float | None:
    """LoadGen logs the effective percentile as a fraction (0.99): as a percentage (99)."""
    return (
        None
        if value is None
        else round(float(value) * 100 if float(value) <= 1 else float(value), 6)
    )


def run_utilization(spec: Requested, measured: Measured, sps: float | None) -> Utilization:
    """Achieved FLOP/s against the peak and the measured attainable rate, at the run's shapes.

    The attainable rate is a GEMM probe through onnxruntime on this machine (cached).
    """
    batch = spec.scenario.batch_size
    dims = measured.session.settings["free_dimension_overrides"]
    count = count_flops(measured.info.path, dims=dims)
    precision = spec.scenario.model.precision
    fingerprint = measured.machine.fingerprint
    peak = resolve_peak(
        hw=spec.hw,
        precision=precision,
        fingerprint=fingerprint.to_dict(),
        override_tflops=spec.scenario.peak_tflops,
    )
    flops = count.flops / batch
    achieved = None if sps is None or not flops > 0 else sps * flops / 1e12
    rate, missing = _attainable(measured.session, precision, fingerprint.fingerprint_id, achieved)
    return utilization(
        samples_per_second=sps,
        flops_per_sample=flops,
        macs_per_sample=count.macs / batch,
        peak=peak,
        approximations=count.approximations,
        unknown_ops=count.unknown_ops,
        attainable_tflops=None if rate is None else rate.tflops,
        attainable_method=None if rate is None else rate.method,
        attainable_missing=missing,
    )


def _attainable(
    session: Session, precision: str, fingerprint_id: str, achieved_tflops: float | None
) -> tuple[AttainableRate | None, str | None]:
    """The probe's rate, or None and why: a probe that fails never costs the run its result."""
    try:
        rate = attainable_rate(
            session, precision, fingerprint_id=fingerprint_id, at_least_tflops=achieved_tflops
        )
    except ProbeUnavailableError as exc:
        return None, str(exc)
    except Exception as exc:  # the run is measured; the probe is extra
        return None, f"the GEMM probe failed: {type(exc).__name__}: {exc}".splitlines()[0]
    return rate, None


def hardware(hw: str, fingerprint: Fingerprint) -> Hardware:
    """The target and the machine facts a summary shows, from the fingerprint."""
    cpu = fingerprint.section("cpu")
    model, usable = cpu.get("model"), cpu.get("usable_cpus")
    return Hardware(
        target=hw,
        fingerprint_id=fingerprint.fingerprint_id,
        cpu_model=None if model is None else str(model),
        usable_cpus=usable if isinstance(usable, int) else None,
        gpus=tuple(str(gpu.get("name") or "unknown GPU") for gpu in fingerprint.gpus),
    )


def versions() -> Versions:
    """Versions of this harness, Python and the packages that measure."""
    return Versions(
        harness=harness.__version__,
        python=platform.python_version(),
        onnxruntime=required_version("onnxruntime"),
        loadgen=required_version("mlcommons-loadgen"),
        numpy=required_version("numpy"),
        onnx=required_version("onnx"),
    )


def _model(spec: Requested, measured: Measured) -> ModelRecord:
    info = measured.info
    return ModelRecord(
        name=spec.model_name,
        path=str(info.path),
        sha256=info.sha256,
        precision=spec.scenario.model.precision,
        opset=info.opset,
        dims=dict(measured.session.settings["free_dimension_overrides"]),
    )


def _loadgen_config(plan: TestPlan) -> LoadGenConfig:
    return LoadGenConfig(
        model_key=plan.model_key,
        mlperf_conf_sha256=lgconf.sha256_text(plan.mlperf_conf.read_text()),
        user_conf_sha256=lgconf.sha256_text(plan.user_conf.read_text()),
    )


def _warmup(warmup: WarmUpStats) -> Warmup:
    return Warmup(
        queries=warmup.queries,
        duration_ms=warmup.duration_ms,
        median_latency_ns=float(warmup.median_latency_ns),
        min_latency_ns=warmup.min_latency_ns,
        samples_per_second=warmup.samples_per_second,
    )


def _window(window: Window) -> MeasuredWindow:
    return MeasuredWindow(duration_s=round((window.end_ns - window.start_ns) / 1e9, 3))


def _image(info: Mapping[str, str] | None) -> ContainerImage | None:
    return None if info is None else ContainerImage(id=info["id"], tag=info["tag"])


def _float(value: Any) -> float | None:
    return None if value is None else float(value)
