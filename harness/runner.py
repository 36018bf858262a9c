"""One LoadGen test in a worker: plan, prepare, measure, record. The only place wiring layers.

A worker runs one job (`harness.job.Job`): the accuracy test writes its scored verdict into
its directory; the performance test measures and records result.json's content, or asks
for a re-run when LoadGen ended a first attempt too early (`harness.pipeline` decides).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np

from harness.analysis.accuracy import (
    accuracy_block,
    decode_outputs,
    labels_by_index,
    load_labels,
    read_accuracy_block,
    read_accuracy_log,
    verdict,
    write_accuracy_block,
)
from harness.data import SampleSource
from harness.errors import RunError
from harness.files import ACCURACY_DIR
from harness.fingerprint.survey import Survey, survey
from harness.job import Job
from harness.loadgen import conf as lgconf
from harness.loadgen.plan import expectation_from, retry_expectation, write_test_confs
from harness.loadgen.sut import Executor, OfflineSUT, SampleStore, SingleStreamSUT, make_sut
from harness.loadgen.timed import TestPlan, Window, load_settings, run_timed_test
from harness.models.prepare import (
    PreparedModel,
    data_key,
    prepare,
    reference_outputs,
    sample_source,
)
from harness.models.registry import cache_root
from harness.recording import Measured, Requested, build_result
from harness.results.records import RunResult
from harness.runtime.executors import executor_for
from harness.runtime.session import Session, SessionRequest, create_session, placement_warnings
from harness.runtime.targets import get_target
from harness.runtime.warmup import describe, warm_up
from harness.telemetry import gpu_inventory
from harness.telemetry.window import TelemetryWindow


@dataclass(frozen=True, kw_only=True)
class _Ready:
    """What either LoadGen test needs before it starts: the machine, model, session, data."""

    machine: Survey
    model: PreparedModel
    session: Session
    source: SampleSource
    warnings: list[str]


def run_performance(job: Job, *, progress: IO[str] | None = None) -> RunResult | lgconf.Expectation:
    """The job's timed test; its result, or the expectation to re-run with when undersized."""
    ready = _prepare(job, progress)
    scenario = job.scenario
    executor = executor_for(
        ready.session,
        io_binding=scenario.runtime.io_binding,
        include_host_copies=scenario.runtime.include_host_copies,
    )
    warmup = warm_up(
        executor,
        ready.session.inputs,
        ready.source,
        min_queries=scenario.warmup.min_queries,
        min_duration_ms=scenario.warmup.min_duration_ms,
    )
    expected = (
        lgconf.Expectation(**vars(job.expected))
        if job.expected is not None
        else expectation_from(warmup.min_latency_ns, scenario.batch_size)
    )
    plan = write_test_confs(
        job.run_dir,
        scenario=scenario,
        profile=job.profile,
        model_key=_model_key(job),
        expected=expected,
        total_samples=ready.source.total_count,
        mode="performance",
    )
    telemetry = TelemetryWindow(job.hw, scenario.telemetry)
    try:
        window, completed = _loadgen_test(job, ready, executor, plan, telemetry, progress)
    finally:
        telemetry.release()
    power = telemetry.finish(job.run_dir, samples=completed, scenario=scenario.scenario)
    retry = retry_expectation(scenario, job.run_dir, expected)
    if retry is not None and job.attempt == 1:
        return retry
    if job.previous_attempt is not None:
        ready.warnings.append(
            "LoadGen's first attempt ended before its minimum duration (the warm-up "
            "under-estimated the speed); re-run sized from the measured speed; the first "
            f"attempt's logs are in {job.previous_attempt}/"
        )
    measured = Measured(
        info=ready.model.info,
        session=ready.session,
        plan=plan,
        warmup=warmup,
        window=window,
        warnings=ready.warnings,
        data_path=executor.data_path,
        machine=ready.machine,
        telemetry=power,
        accuracy=read_accuracy_block(job.run_dir / ACCURACY_DIR),
        precision=ready.model.precision,
    )
    requested = Requested(
        scenario=scenario, profile=job.profile, hw=job.hw, model_name=_model_name(job)
    )
    return build_result(requested, job.run_dir, measured)


def run_accuracy_test(job: Job, *, progress: IO[str] | None = None) -> None:
    """The job's LoadGen AccuracyOnly test, scored against FP32 (and labels, when given)."""
    ready = _prepare(job, None)
    # Responses must carry the outputs here: copy them back, whatever the timed run does.
    executor = executor_for(
        ready.session, io_binding=job.scenario.runtime.io_binding, include_host_copies=True
    )
    plan = write_test_confs(
        job.run_dir,
        scenario=job.scenario,
        profile=job.profile,
        model_key=_model_key(job),
        expected=None,
        total_samples=ready.source.total_count,
        mode="accuracy",
    )
    if progress is not None:
        progress.write("  accuracy pass (LoadGen AccuracyOnly)\n")
    _loadgen_test(job, ready, executor, plan, None, None)
    write_accuracy_block(_score(job, ready), job.run_dir)


def _prepare(job: Job, progress: IO[str] | None) -> _Ready:
    target = get_target(job.hw)
    gpus, gpu_missing = gpu_inventory(job.hw)
    # The accuracy test needs the fingerprint (the CPU's ISA), not the preflight's warnings:
    # the performance test checks and records those, unless --strict must stop the run early.
    machine = survey(
        gpus=gpus,
        gpu_missing=gpu_missing,
        profile=job.profile,
        strict=job.strict,
        checks=job.test == "performance",
    )
    isa = machine.fingerprint.to_dict().get("cpu", {}).get("isa") or []
    model = prepare(job.scenario, target=target, cpu_isa=isa, model_override=job.model_override)
    for warning in [*(str(w) for w in machine.warnings), *model.warnings]:
        if progress is not None:
            progress.write(f"  warning: {warning}\n")
    session = create_session(
        SessionRequest(
            model_path=model.info.path,
            runtime=job.scenario.runtime,
            target=target,
            dims=model.dims,
            cache_dir=cache_root() / "engines",
        )
    )
    warnings = [*model.warnings, *placement_warnings(session)]
    source = sample_source(job.scenario, session)
    return _Ready(machine=machine, model=model, session=session, source=source, warnings=warnings)


def _loadgen_test(
    job: Job,
    ready: _Ready,
    executor: Executor,
    plan: TestPlan,
    telemetry: TelemetryWindow | None,
    progress: IO[str] | None,
) -> tuple[Window, int]:
    """LoadGen's test over the SUT, with the telemetry window on its load and unload hooks."""
    settings = load_settings(plan)
    store = SampleStore(
        ready.source,
        ready.session.inputs,
        executor,
        on_window_open=None if telemetry is None else telemetry.open,
        on_window_close=None if telemetry is None else telemetry.close,
    )
    sut = _make_sut(job, executor, store)
    window = run_timed_test(plan, settings, sut, store, progress=progress)
    if isinstance(sut.error, KeyboardInterrupt):
        raise sut.error
    if sut.error is not None:
        raise RunError(f"{job.run_dir}: inference failed during LoadGen: {describe(sut.error)}")
    if store.hook_errors:
        raise RunError(f"{job.run_dir}: telemetry failed: {describe(store.hook_errors[0])}")
    return window, sut.completed


def _make_sut(job: Job, executor: Executor, store: SampleStore) -> SingleStreamSUT | OfflineSUT:
    return make_sut(job.scenario.scenario, executor, store)


def _score(job: Job, ready: _Ready) -> dict[str, object]:
    """Decode LoadGen's accuracy log and compare it with the FP32 model and the labels."""
    log = job.run_dir / "mlperf_log_accuracy.json"
    entries = read_accuracy_log(log)
    if not entries:
        raise RunError(f"{log}: LoadGen logged no responses")
    dtype = ready.session.outputs[0].dtype
    outputs = decode_outputs(entries, dtype=dtype, shape=(len(entries[0][1]) // dtype.itemsize,))
    reference = reference_outputs(
        ready.model, ready.source, sorted(outputs), data_key=data_key(job.scenario)
    )
    flat = {k: np.asarray(v).reshape(-1) for k, v in reference.items()}
    labels = None
    if job.scenario.data.labels:
        labels = labels_by_index(load_labels(Path(str(job.scenario.data.dir))))
    block = accuracy_block(outputs, flat, kind=ready.model.kind, labels=labels)
    block.update(verdict(block))
    block["reference"] = f"FP32 source model sha256 {ready.model.source.sha256[:12]}, batch 1"
    return block


def _model_name(job: Job) -> str:
    return job.model_override.stem if job.model_override else job.scenario.model.name


def _model_key(job: Job) -> str:
    # LoadGen's config parser splits on whitespace: derive a key it can read.
    return job.scenario.model.loadgen_name or re.sub(r"[^A-Za-z0-9_.-]", "_", _model_name(job))
