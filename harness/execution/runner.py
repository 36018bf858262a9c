"""One LoadGen test in a worker: plan, prepare, measure, record. The only place wiring layers.

A worker runs one job (`harness.records.job.Job`): the accuracy test writes its scored verdict into
its directory; the performance test measures and records result.json's content, or asks
for a re-run when LoadGen ended a first attempt too early (`harness.execution.pipeline` decides).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from harness.analysis.accuracy import load_accuracy, write_accuracy_block
from harness.compliance.outcome import ComplianceRun
from harness.compliance.rules import AUDIT_SETTINGS
from harness.datasets.samples import SampleSource
from harness.errors import RunError
from harness.execution.recording import Measured, Requested, build_result
from harness.execution.scoring import accuracy_plan, score
from harness.execution.serverplan import server_layout, server_plan
from harness.fingerprint.preflight import QUICK_PROFILE
from harness.fingerprint.survey import Survey, survey
from harness.loadgen.batching import BatchPolicy
from harness.loadgen.plan import Audit, expectation_from, retry_expectation, write_test_confs
from harness.loadgen.querytimes import QueryTimes, expected_rows
from harness.loadgen.sut import (
    AnySUT,
    BatcherStats,
    Executor,
    SampleStore,
    ServerPlan,
    ServerSUT,
    make_sut,
)
from harness.loadgen.timed import TestPlan, Window, load_settings, run_timed_test
from harness.models.prepare import (
    PreparedModel,
    prepare,
    sample_source,
)
from harness.models.registry import cache_root
from harness.records.job import Job, as_compliance_test
from harness.records.layout import ACCURACY_DIR, QUERY_LATENCIES_FILE
from harness.records.request import Expectation
from harness.records.result import RunResult
from harness.runtime.executors import DeviceExecutor, HostExecutor, executor_for
from harness.runtime.info import arena_bytes
from harness.runtime.session import Session, SessionRequest, create_session, placement_warnings
from harness.runtime.targets import get_target
from harness.runtime.warmup import WarmUpStats, describe, warm_up
from harness.stopping import Phases
from harness.telemetry import gpu_inventory
from harness.telemetry.latencies import QueryLatencies, write_query_latencies
from harness.telemetry.window import TelemetryWindow


@dataclass(frozen=True, kw_only=True)
class _Ready:
    """What either LoadGen test needs before it starts: the machine, model, session, data."""

    machine: Survey
    model: PreparedModel
    session: Session
    source: SampleSource
    warnings: list[str]
    server: ServerPlan | None = None  # Server: its batcher's executors and limits
    policy: BatchPolicy | None = None  # and how they were derived


def run_performance(
    job: Job, *, phases: Phases, progress: IO[str] | None = None
) -> RunResult | Expectation:
    """The job's timed test; its result, or the expectation to re-run with when undersized."""
    ready = _prepare(job, progress, phases)
    scenario = job.request.scenario
    executor, warmup, expected = _warmed(job, ready, phases)
    plan = write_test_confs(
        job.run_dir,
        scenario=scenario,
        profile=job.request.profile,
        model_key=job.request.loadgen_key,
        pins=job.request.pins,
        expected=expected,
        total_samples=ready.source.total_count,
        mode="performance",
    )
    telemetry = TelemetryWindow(job.request.hw, scenario.telemetry)
    try:
        tested = _loadgen_test(job, ready, executor, plan, telemetry, progress)
    finally:
        telemetry.release()
    phases.enter("write")
    power = telemetry.finish(job.run_dir, samples=tested.completed, scenario=scenario.scenario)
    arena, arena_note = arena_bytes(ready.session.ort_session)
    memory = telemetry.memory(arena_bytes=arena, arena_note=arena_note)
    files = {**telemetry.files, "query_latencies": _write_latencies(job, tested.times)}
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
        window=tested.window,
        warnings=ready.warnings,
        data_path=executor.data_path,
        machine=ready.machine,
        telemetry=power,
        accuracy=load_accuracy(job.run_dir / ACCURACY_DIR),
        precision=ready.model.precision,
        batcher=tested.batcher,
        batch_policy=ready.policy,
        files=files,
        memory=memory,
    )
    requested = Requested(
        scenario=scenario,
        profile=job.request.profile,
        hw=job.request.hw,
        model_name=job.request.model_name,
        label=job.request.label,
    )
    return build_result(requested, job.run_dir, measured)


def run_accuracy_test(job: Job, *, phases: Phases, progress: IO[str] | None = None) -> None:
    """The job's LoadGen AccuracyOnly test, scored against FP32 (and labels, when given)."""
    ready = _prepare(job, None, phases)
    # Responses must carry the outputs here: copy them back, whatever the timed run does.
    executor = executor_for(
        ready.session, io_binding=job.request.scenario.runtime.io_binding, include_host_copies=True
    )
    plan = accuracy_plan(
        job, total_samples=ready.source.total_count, phases=phases, progress=progress
    )
    _loadgen_test(job, ready, executor, plan, None, None)
    phases.enter("write")
    write_accuracy_block(score(job, ready.model, ready.session, ready.source), job.run_dir)


def run_compliance(
    job: Job, *, phases: Phases, progress: IO[str] | None = None
) -> ComplianceRun | Expectation:
    """A compliance test: the performance test as it ran, under the test's audit.config.

    The job's directory holds the audit.config and LoadGen's logs; the worker runs with it as
    its working directory. Returns the expectation to re-run with when LoadGen ended early.
    """
    test = as_compliance_test(job.test)
    ready = _prepare(job, progress, phases)
    executor, _, expected = _warmed(job, ready, phases)
    plan = write_test_confs(
        job.run_dir,
        scenario=job.request.scenario,
        profile=job.request.profile,
        model_key=job.request.loadgen_key,
        pins=job.request.pins,
        expected=expected,
        total_samples=ready.source.total_count,
        mode="performance",
        audit=Audit(name=f"MLPerf compliance {test}", settings=AUDIT_SETTINGS[test]),
    )
    audit = Path(str(plan.audit_config))
    if progress is not None:
        progress.write(f"  compliance {test}: performance mode under {audit}\n")
    completed = _loadgen_test(job, ready, executor, plan, None, progress).completed
    retry = retry_expectation(job.request.scenario, job.run_dir, expected)
    if retry is not None and job.attempt == 1:
        return retry
    return ComplianceRun(
        test=test,
        cwd=os.getcwd(),
        audit_config_sha256=hashlib.sha256(audit.read_bytes()).hexdigest(),
        response_dtype=ready.session.outputs[0].dtype.name,
        output_kind=ready.model.kind,
        completed_samples=completed,
    )


def _warmed(
    job: Job, ready: _Ready, phases: Phases
) -> tuple[HostExecutor | DeviceExecutor, WarmUpStats, Expectation]:
    """The timed path's executor, warmed up, and what LoadGen is told to expect of it."""
    phases.enter("warmup")
    runtime = job.request.scenario.runtime
    executor = executor_for(
        ready.session,
        io_binding=runtime.io_binding,
        include_host_copies=runtime.include_host_copies,
    )
    warmup = warm_up(
        executor,
        ready.session.inputs,
        ready.source,
        min_queries=job.request.scenario.warmup.min_queries,
        min_duration_ms=job.request.scenario.warmup.min_duration_ms,
    )
    expected = job.expected
    if expected is None:  # none recorded: what LoadGen is told comes from the warm-up
        expected = expectation_from(warmup.min_latency_ns, job.request.scenario.batch_size)
    phases.enter("loadgen")  # LoadGen's files (user.conf first) are written from here on
    return executor, warmup, expected


def _prepare(job: Job, progress: IO[str] | None, phases: Phases) -> _Ready:
    phases.enter("prepare")
    target = get_target(job.request.hw)
    gpus, gpu_missing = gpu_inventory(job.request.hw)
    # The accuracy test needs the fingerprint (the CPU's ISA), not the preflight's warnings:
    # the performance test checks and records those, unless --strict must stop the run early.
    machine = survey(
        gpus=gpus,
        gpu_missing=gpu_missing,
        profile=job.request.profile,
        strict=job.request.strict,
        checks=job.test == "performance",
    )
    isa = machine.fingerprint.cpu.isa or ()
    model = prepare(
        job.request.scenario, target=target, cpu_isa=isa, model_override=job.request.model_override
    )
    # The quick profile is the command's fact, not the machine's: its header and each run's
    # summary say it, so the progress lines leave it out (result.json keeps it).
    shown = [str(w) for w in machine.warnings if w.code != QUICK_PROFILE]
    for warning in [*shown, *model.warnings]:
        if progress is not None:
            progress.write(f"  warning: {warning}\n")
    scenario = job.request.scenario
    workers, runtime = 1, scenario.runtime
    if scenario.scenario == "Server":  # its workers share the cores (serverplan.server_layout)
        cpus = machine.fingerprint.cpu.usable_cpus
        workers, runtime = server_layout(
            scenario.server, runtime, gpu=target.is_gpu, usable_cpus=cpus
        )
    session = create_session(
        SessionRequest(
            model_path=model.info.path,
            runtime=runtime,
            target=target,
            dims=model.dims,
            cache_dir=cache_root() / "engines",
        )
    )
    warnings = [*model.warnings, *placement_warnings(session)]
    source = sample_source(job.request.scenario, session)
    server, policy = None, None
    if scenario.scenario == "Server":  # before any LoadGen file: a refusal leaves nothing
        server, policy = server_plan(job, model, session, source, workers=workers)
        if progress is not None:
            progress.write(f"  batcher: {policy.how}\n")
    return _Ready(
        machine=machine,
        model=model,
        session=session,
        source=source,
        warnings=warnings,
        server=server,
        policy=policy,
    )


@dataclass(frozen=True, kw_only=True)
class _Tested:
    """One LoadGen test's window, samples completed, per-query times and Server's batcher."""

    window: Window
    completed: int
    times: QueryTimes
    batcher: BatcherStats | None


def _write_latencies(job: Job, times: QueryTimes) -> str:
    """Write query_latencies.npz into the run directory; its name, for the result's files."""
    record = QueryLatencies(scenario=job.request.scenario.scenario, **times.columns())
    write_query_latencies(record, job.run_dir / QUERY_LATENCIES_FILE)
    return QUERY_LATENCIES_FILE


def _loadgen_test(
    job: Job,
    ready: _Ready,
    executor: Executor,
    plan: TestPlan,
    telemetry: TelemetryWindow | None,
    progress: IO[str] | None,
) -> _Tested:
    """LoadGen's test over the SUT, with the telemetry window on its load and unload hooks."""
    settings = load_settings(plan)
    server = ready.server
    store = SampleStore(
        ready.source,
        ready.session.inputs,
        executor,
        on_window_open=None if telemetry is None else telemetry.open,
        on_window_close=None if telemetry is None else telemetry.close,
        also_attach=[] if server is None else [e for w in server.workers for e in w.values()],
    )
    sut = (
        _make_sut(job, executor, store)
        if server is None
        else make_sut(job.request.scenario, executor, store, server)
    )
    sut.times.reserve(expected_rows(settings, plan.scenario, job.request.scenario.batch_size))
    window = run_timed_test(plan, settings, sut, store, progress=progress)
    if isinstance(sut.error, KeyboardInterrupt):
        raise sut.error
    if sut.error is not None:
        raise RunError(f"{job.run_dir}: inference failed during LoadGen: {describe(sut.error)}")
    if store.hook_errors:
        raise RunError(f"{job.run_dir}: telemetry failed: {describe(store.hook_errors[0])}")
    batcher = sut.stats if isinstance(sut, ServerSUT) else None
    return _Tested(window=window, completed=sut.completed, times=sut.times, batcher=batcher)


def _make_sut(job: Job, executor: Executor, store: SampleStore) -> AnySUT:
    return make_sut(job.request.scenario, executor, store)
