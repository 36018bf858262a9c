"""A generative run's result: LoadGen's logs and the SUT's token counts into a RunResult.

The blocks every result has are filled as they apply to onnxruntime-genai (no session options
of the harness's, no FLOP count: utilization unmeasured); ``generation`` holds the token
figures, and the token checks' findings (harness.analysis.tokens) make the run INVALID.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.analysis.peaks import resolve_peak
from harness.analysis.plausibility import judge
from harness.analysis.tokens import output_tokens, token_problems, told_tokens_per_query
from harness.analysis.utilization import utilization
from harness.config import Scenario
from harness.execution.recording import (
    Requested,
    hardware,
    outcome,
    server_record,
    versions,
)
from harness.fingerprint.survey import Survey, image_info
from harness.loadgen import conf as lgconf
from harness.loadgen.timed import TestPlan, Window
from harness.models.llm.genai_config import MODEL_FILE
from harness.models.llm.graph import OPSET
from harness.models.precision import ConvertedModel
from harness.models.recipes import isa_for_precision
from harness.models.validate import file_sha256
from harness.packages import required_version
from harness.records.accuracy import Accuracy
from harness.records.codec import from_data
from harness.records.generation import Concurrency, GenerationRecord, TokenPercentiles
from harness.records.layout import DETAIL_LOG
from harness.records.loadgen_conf import conf_value
from harness.records.loadgen_log import (
    DetailLog,
    effective_settings,
    latency_percentiles_ns,
    logged_float,
    parse_detail_log,
    samples_per_second,
    token_early_stopping,
    token_figures,
)
from harness.records.measures import PrecisionRecord
from harness.records.memory import MemoryFootprint
from harness.records.request import RunRequest
from harness.records.result import (
    ContainerImage,
    Latencies,
    LoadGenConfig,
    LoadGenOutcome,
    MeasuredWindow,
    ModelRecord,
    PreflightRecord,
    RunResult,
    RuntimeRecord,
    Warmup,
)
from harness.records.telemetry import TelemetrySummary
from harness.runtime.genai import genai_version
from harness.runtime.targets import GENAI_PROVIDERS
from harness.runtime.warmup import WarmUpStats


@dataclass(frozen=True, slots=True, kw_only=True)
class GenMeasured:
    """What the generative runner measured, as it hands it over."""

    directory: Path
    plan: TestPlan
    warmup: WarmUpStats
    window: Window
    machine: Survey
    telemetry: TelemetrySummary | None
    prompts: str
    token_counts: tuple[int, ...]
    span_s: float | None  # the first query's issue to the last answer, as the SUT stamped them
    files: Mapping[str, str]
    converted: ConvertedModel  # model.onnx at the run's precision, and how it was made
    accuracy: Accuracy  # the accuracy job's tokens against FP32's
    rerun_of: str | None = None
    memory: MemoryFootprint | None = None  # the worker's footprint over the window
    concurrency: Concurrency | None = None  # Server's continuous batch, rows per step


def build_generative_result(request: RunRequest, run_dir: Path, measured: GenMeasured) -> RunResult:
    """The run's result from LoadGen's detail log and the SUT's own token counts."""
    log = parse_detail_log(run_dir / DETAIL_LOG)
    spec = Requested(
        scenario=request.scenario,
        profile=request.profile,
        hw=request.hw,
        model_name=request.model_name,
        label=request.label,
    )
    sps = samples_per_second(log)
    generation = generation_record(spec, log, measured)
    machine = measured.machine
    peak = resolve_peak(
        hw=spec.hw,
        precision="fp32",
        fingerprint=machine.fingerprint.to_dict(),
        override_tflops=spec.scenario.peak_tflops,
    )
    used = utilization(
        samples_per_second=sps,
        flops_per_sample=None,
        peak=peak,
        attainable_missing="not measured for generative models",
    )
    plain = outcome(spec, measured.plan, log, accuracy_passed=measured.accuracy.passed)
    warnings = [*(str(w) for w in machine.warnings)]
    if measured.rerun_of is not None:
        warnings.append(
            "LoadGen's first attempt ended before its minimum duration; re-run sized from the "
            f"measured speed; the first attempt's logs are in {measured.rerun_of}/"
        )
    model_path = measured.directory / MODEL_FILE
    return RunResult(
        run_id=run_dir.name,
        label=spec.label,
        memory=measured.memory,
        created_utc=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        scenario=spec.scenario.scenario,
        scenario_name=spec.scenario.name,
        outcome=_checked(plain, generation.token_problems),
        latency_ns=from_data(Latencies, latency_percentiles_ns(log), "latency_ns"),
        samples_per_second=sps,
        qps_with_loadgen_overhead=logged_float(log, "result_qps_with_loadgen_overhead"),
        qps_without_loadgen_overhead=logged_float(log, "result_qps_without_loadgen_overhead"),
        batch_size=spec.scenario.batch_size,
        model=ModelRecord(
            name=spec.model_name,
            path=str(model_path),
            sha256=file_sha256(model_path),
            precision=spec.scenario.model.precision,
            opset=OPSET,
            dims={},
        ),
        hardware=hardware(spec.hw, machine.fingerprint),
        providers=(GENAI_PROVIDERS[spec.hw][1],),
        runtime=_runtime(GENAI_PROVIDERS[spec.hw][1]),
        versions=versions(),
        settings=effective_settings(log),
        loadgen_config=LoadGenConfig(
            model_key=measured.plan.model_key,
            mlperf_conf_sha256=lgconf.sha256_text(measured.plan.mlperf_conf.read_text()),
            user_conf_sha256=lgconf.sha256_text(measured.plan.user_conf.read_text()),
        ),
        warmup=Warmup(
            queries=measured.warmup.queries,
            duration_ms=measured.warmup.duration_ms,
            median_latency_ns=measured.warmup.median_latency_ns,
            min_latency_ns=measured.warmup.min_latency_ns,
            samples_per_second=measured.warmup.samples_per_second,
        ),
        window=MeasuredWindow(
            duration_s=round((measured.window.end_ns - measured.window.start_ns) / 1e9, 3)
        ),
        warnings=(*warnings, *(f"token check: {p}" for p in generation.token_problems)),
        preflight=tuple(PreflightRecord(code=w.code, message=w.message) for w in machine.warnings),
        fingerprint=machine.fingerprint,
        telemetry=measured.telemetry,
        image=_image(image_info()),
        utilization=used,
        plausibility=judge(used, sps),
        precision=_precision(spec, measured),
        accuracy=measured.accuracy,
        server=server_record(spec, log, None, run_dir),
        files=dict(sorted(measured.files.items())),
        generation=generation,
    )


def generation_record(spec: Requested, log: DetailLog, measured: GenMeasured) -> GenerationRecord:
    """The token figures, LoadGen's limits and where they came from, and the token checks."""
    figures = token_figures(log)
    scenario = spec.scenario
    generation = scenario.generation
    assert generation is not None  # a generative run
    counted = output_tokens(measured.token_counts)
    if figures is None:
        problems: tuple[str, ...] = ("LoadGen ran without token latencies",)
        rate, ttft, tpot, told = None, None, None, None
    else:
        problems = token_problems(
            scenario=scenario.scenario, figures=figures, counted=counted, span_s=measured.span_s
        )
        rate = figures.tokens_per_second
        told = told_tokens_per_query(figures, counted, measured.span_s)
        ttft, tpot = _percentiles(figures.ttft_ns), _percentiles(figures.tpot_ns)
    limits = server_limits(scenario, measured.plan) if scenario.scenario == "Server" else None
    return GenerationRecord(
        engine=f"onnxruntime-genai {genai_version()}"
        if measured.concurrency is None
        else f"onnxruntime {required_version('onnxruntime')} continuous batch "
        f"(onnxruntime-genai {genai_version()} tokenizer)",
        prompts=measured.prompts,
        max_active=generation.max_active,
        tokens_per_second=rate,
        ttft_ns=ttft,
        tpot_ns=tpot,
        output_tokens_per_query=told,
        output_tokens=counted,
        ttft_limit_ns=limits[0] if limits else None,
        tpot_limit_ns=limits[1] if limits else None,
        limits_source=limits[2] if limits else None,
        token_problems=problems,
        ttft_early_stopping=token_early_stopping(log, "ttft"),
        tpot_early_stopping=token_early_stopping(log, "tpot"),
        concurrency=measured.concurrency,
    )


def server_limits(scenario: Scenario, plan: TestPlan) -> tuple[int, int, str] | None:
    """Server's p99 TTFT and TPOT limits (ns) and their source: the scenario's, or mlperf.conf's.

    LoadGen logs no effective value of either: they are read as LoadGen resolved them.
    """
    generation = scenario.generation
    assert generation is not None
    if generation.limits is not None:
        ms = (generation.limits.ttft_ms, generation.limits.tpot_ms)
        source = "the scenario's generation.limits (not MLPerf's)"
    else:
        text = plan.mlperf_conf.read_text()
        found = [
            conf_value(text, plan.model_key, "Server", k) for k in ("ttft_latency", "tpot_latency")
        ]
        if None in found:
            return None
        ms = (float(str(found[0])), float(str(found[1])))
        source = f"mlperf.conf's for {plan.model_key} (MLPerf's)"
    return round(ms[0] * 1e6), round(ms[1] * 1e6), source


def _percentiles(values: Mapping[str, int | None] | None) -> TokenPercentiles | None:
    if values is None:
        return None
    return TokenPercentiles(p50=values.get("p50"), p90=values.get("p90"), p99=values.get("p99"))


def _checked(plain: LoadGenOutcome, problems: tuple[str, ...]) -> LoadGenOutcome:
    """LoadGen's verdict, INVALID where the token checks found a problem."""
    if not problems:
        return plain
    reasons = (*plain.invalid_reasons, *(f"token check: {p}" for p in problems))
    return dataclasses.replace(plain, valid=False, submission_valid=False, invalid_reasons=reasons)


def _runtime(provider: str) -> RuntimeRecord:
    """onnxruntime-genai's session as genai_config.json sets it: its defaults, on ``provider``."""
    return RuntimeRecord(
        graph_optimization_level="all",
        intra_op_threads=0,
        inter_op_threads=0,
        execution_mode="sequential",
        allow_spinning=True,
        free_dimension_overrides={},
        provider_options={},
        requested_providers=(provider,),
        cpu_fallback_allowed=False,
        cuda_graphs=False,
        node_placement={},
        data_path="host",
    )


def _precision(spec: Requested, measured: GenMeasured) -> PrecisionRecord:
    """How model.onnx was made (harness.models.precision's record) and the ISA it can use."""
    precision = spec.scenario.model.precision
    record = {
        **measured.converted.to_dict(),
        "file": spec.model_name,
        "precision": precision,
        "io_dtype": "int32 tokens",
        "isa": isa_for_precision(precision, measured.machine.fingerprint.cpu.isa or ()),
    }
    return from_data(PrecisionRecord, record, "precision")


def _image(info: Mapping[str, str] | None) -> ContainerImage | None:
    return None if info is None else ContainerImage(id=info["id"], tag=info["tag"])
