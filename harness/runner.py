"""One run, start to finish: the only place that wires config, models, runtime and LoadGen."""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from harness.accuracy_run import AccuracyJob, read_accuracy_block, run_accuracy
from harness.config import ProfileName, Scenario
from harness.data import SampleSource
from harness.errors import HarnessError, RunError
from harness.files import ACCURACY_DIR, atomic_write_text, create_run_dir
from harness.job import Job
from harness.loadgen import conf as lgconf
from harness.loadgen.logparse import parse_detail_log
from harness.loadgen.sut import Executor, OfflineSUT, SampleStore, SingleStreamSUT, make_sut
from harness.loadgen.timed import TestPlan, Window, load_settings, run_timed_test
from harness.modelprep import PreparedModel, prepare, sample_source
from harness.models.registry import cache_root
from harness.observe import Survey, TelemetryWindow, survey
from harness.results.build import Measured as _Measured
from harness.results.build import Requested, build_result
from harness.results.records import RunResult
from harness.results.runfile import INCOMPLETE_FILE, write_result
from harness.runtime.executors import DeviceExecutor, HostExecutor, executor_for
from harness.runtime.session import Session, SessionRequest, TensorSpec, create_session
from harness.runtime.targets import get_target


@dataclass(frozen=True, kw_only=True)
class RunRequest:
    """What to run and where to put it."""

    scenario: Scenario
    profile: ProfileName = "quick"
    hw: str = "cpu"
    model_override: Path | None = None
    out_root: Path = Path("results/runs")
    strict: bool = False
    run_name: str | None = None


def run(request: RunRequest, *, progress: IO[str] | None = None) -> tuple[Path, RunResult]:
    """Run one scenario and write its run directory; returns the directory and its result."""
    scenario = request.scenario
    target = get_target(request.hw)
    machine = survey(request.hw, profile=request.profile, strict=request.strict)
    isa = machine.fingerprint.to_dict().get("cpu", {}).get("isa") or []
    prepared = prepare(scenario, target=target, cpu_isa=isa, model_override=request.model_override)
    warnings = list(prepared.warnings)
    for warning in [*(str(w) for w in machine.warnings), *warnings]:
        if progress is not None:
            progress.write(f"  warning: {warning}\n")
    session = create_session(
        SessionRequest(
            model_path=prepared.info.path,
            runtime=scenario.runtime,
            target=target,
            dims=prepared.dims,
            cache_dir=cache_root() / "engines",
        )
    )
    warnings += _placement_warnings(session)
    source = sample_source(scenario, session)
    run_dir = create_run_dir(
        request.out_root,
        model=_model_name(request),
        scenario=scenario.scenario,
        name=request.run_name,
    )
    atomic_write_text(run_dir / INCOMPLETE_FILE, "run started; no result yet\n")
    try:
        result = _measure(request, run_dir, prepared, session, source, warnings, machine, progress)
    except KeyboardInterrupt:
        atomic_write_text(run_dir / INCOMPLETE_FILE, "interrupted (Ctrl-C)\n")
        raise
    except HarnessError as exc:
        atomic_write_text(run_dir / INCOMPLETE_FILE, f"failed: {exc}\n")
        raise
    write_result(result, run_dir)
    (run_dir / INCOMPLETE_FILE).unlink()
    return run_dir, result


@dataclass(frozen=True, kw_only=True)
class _Prepared:
    """What both LoadGen tests need before they start: the machine, model, session, data."""

    machine: Survey
    model: PreparedModel
    session: Session
    source: SampleSource
    warnings: list[str]


def _prepare(request: RunRequest, progress: IO[str] | None) -> _Prepared:
    target = get_target(request.hw)
    machine = survey(request.hw, profile=request.profile, strict=request.strict)
    isa = machine.fingerprint.to_dict().get("cpu", {}).get("isa") or []
    model = prepare(
        request.scenario, target=target, cpu_isa=isa, model_override=request.model_override
    )
    warnings = list(model.warnings)
    for warning in [*(str(w) for w in machine.warnings), *warnings]:
        if progress is not None:
            progress.write(f"  warning: {warning}\n")
    session = create_session(
        SessionRequest(
            model_path=model.info.path,
            runtime=request.scenario.runtime,
            target=target,
            dims=model.dims,
            cache_dir=cache_root() / "engines",
        )
    )
    warnings += _placement_warnings(session)
    source = sample_source(request.scenario, session)
    return _Prepared(
        machine=machine, model=model, session=session, source=source, warnings=warnings
    )


def run_performance(job: Job, *, progress: IO[str] | None = None) -> RunResult | lgconf.Expectation:
    """The job's timed LoadGen test, in this process's one LoadGen settings load.

    Returns the run's result, or, when LoadGen ended a first attempt before its minimum
    duration because the warm-up misjudged the speed, the expectation to re-run with.
    """
    request = _request(job)
    ready = _prepare(request, progress)
    scenario = request.scenario
    executor = _executor(scenario, ready.session)
    warmup = _warm_up(scenario, executor, ready.session.inputs, ready.source)
    # LoadGen sizes its run from these; the fastest warm-up query errs on the side of a run
    # that is too long rather than one that ends before its minimum duration (INVALID).
    expected = (
        lgconf.Expectation(**vars(job.expected))
        if job.expected is not None
        else lgconf.Expectation(
            latency_ns=warmup["min_latency_ns"],
            samples_per_second=scenario.batch_size * 1e9 / warmup["min_latency_ns"],
        )
    )
    attempt = _Attempt(
        request=request, run_dir=job.run_dir, session=ready.session, source=ready.source
    )
    plan, window, power, _ = attempt.run(executor, _model_key(request), expected, progress)
    retry = _retry_expectation(scenario, job.run_dir, expected)
    if retry is not None and job.attempt == 1:
        return retry
    warnings = ready.warnings
    if job.previous_attempt is not None:
        warnings.append(
            "LoadGen's first attempt ended before its minimum duration (the warm-up "
            "under-estimated the speed); re-run sized from the measured speed; the first "
            f"attempt's logs are in {job.previous_attempt}/"
        )
    measured = _Measured(
        info=ready.model.info,
        session=ready.session,
        plan=plan,
        warmup=warmup,
        window=window,
        warnings=warnings,
        data_path=executor.data_path,
        machine=ready.machine,
        telemetry=power,
        accuracy=read_accuracy_block(job.run_dir / ACCURACY_DIR),
        precision=ready.model.precision,
    )
    return _result(request, job.run_dir, measured)


def run_accuracy_test(job: Job, *, progress: IO[str] | None = None) -> None:
    """The job's LoadGen AccuracyOnly test into its run directory, scored and written."""
    request = _request(job)
    ready = _prepare(request, None)
    accuracy_job = AccuracyJob(
        scenario=request.scenario,
        profile=request.profile,
        run_dir=job.run_dir,
        model_key=_model_key(request),
        expected=None,
    )
    run_accuracy(accuracy_job, ready.model, ready.session, ready.source, progress)


def _request(job: Job) -> RunRequest:
    return RunRequest(
        scenario=job.scenario,
        profile=job.profile,
        hw=job.hw,
        model_override=job.model_override,
        out_root=job.run_dir.parent,
        strict=job.strict,
        run_name=job.run_dir.name,
    )


def _model_key(request: RunRequest) -> str:
    # LoadGen's config parser splits on whitespace: derive a key it can read.
    name = request.scenario.model.loadgen_name
    return name or re.sub(r"[^A-Za-z0-9_.-]", "_", _model_name(request))


def _measure(
    request: RunRequest,
    run_dir: Path,
    prepared: PreparedModel,
    session: Session,
    source: SampleSource,
    warnings: list[str],
    machine: Survey,
    progress: IO[str] | None,
) -> RunResult:
    scenario = request.scenario
    executor = _executor(scenario, session)
    warmup = _warm_up(scenario, executor, session.inputs, source)
    # LoadGen sizes its run from these; the fastest warm-up query errs on the side of a run
    # that is too long rather than one that ends before its minimum duration (INVALID).
    batch = scenario.batch_size
    expected = lgconf.Expectation(
        latency_ns=warmup["min_latency_ns"],
        samples_per_second=batch * 1e9 / warmup["min_latency_ns"],
    )
    # LoadGen's config parser splits on whitespace: derive a key it can read.
    model_key = scenario.model.loadgen_name or re.sub(r"[^A-Za-z0-9_.-]", "_", _model_name(request))
    attempt = _Attempt(request=request, run_dir=run_dir, session=session, source=source)
    plan, window, power, completed = attempt.run(executor, model_key, expected, progress)
    retry = _retry_expectation(scenario, run_dir, expected)
    if retry is not None:
        # LoadGen sized its run from the warm-up and it ended before the minimum duration:
        # keep that attempt for the record and run again at the speed LoadGen just measured.
        _set_aside(run_dir, run_dir / "attempt-1")
        warnings.append(
            "LoadGen's first attempt ended before its minimum duration (the warm-up "
            "under-estimated the speed); re-run sized from the measured speed; the first "
            "attempt's logs are in attempt-1/"
        )
        expected = retry
        plan, window, power, completed = attempt.run(executor, model_key, expected, progress)
    del completed
    job = AccuracyJob(
        scenario=scenario,
        profile=request.profile,
        run_dir=run_dir / ACCURACY_DIR,
        model_key=model_key,
        expected=expected,
    )
    accuracy = run_accuracy(job, prepared, session, source, progress)
    measured = _Measured(
        info=prepared.info,
        session=session,
        plan=plan,
        warmup=warmup,
        window=window,
        warnings=warnings,
        data_path=executor.data_path,
        machine=machine,
        telemetry=power,
        accuracy=accuracy,
        precision=prepared.precision,
    )
    return _result(request, run_dir, measured)


def _model_name(request: RunRequest) -> str:
    if request.model_override is not None:
        return request.model_override.stem
    return request.scenario.model.name


def _warm_up(
    scenario: Scenario,
    executor: Executor,
    specs: Sequence[TensorSpec],
    source: SampleSource,
    clock: Callable[[], int] = time.perf_counter_ns,
) -> dict[str, Any]:
    """Untimed inferences on the timed path until both the query and the time minimum are met."""
    batch = executor.batch_size
    rows = list(range(batch))
    arrays = {s.name: np.empty(s.shape, dtype=s.dtype) for s in specs}
    source.fill([i % source.total_count for i in rows], arrays)
    executor.attach(arrays)
    latencies: list[int] = []
    start = clock()
    while (
        len(latencies) < scenario.warmup.min_queries
        or clock() - start < scenario.warmup.min_duration_ms * 1_000_000
    ):
        t0 = clock()
        try:
            executor.run_single(0) if batch == 1 else executor.run_batch(rows)
        except Exception as exc:  # onnxruntime's errors are untyped; report the cause once
            raise RunError(f"inference failed during warm-up: {_describe(exc)}") from None
        latencies.append(clock() - t0)
    executor.attach({})
    median_ns = statistics.median(latencies)
    return {
        "queries": len(latencies),
        "duration_ms": round((clock() - start) / 1e6, 3),
        "median_latency_ns": median_ns,
        "min_latency_ns": min(latencies),
        "samples_per_second": batch * 1e9 / median_ns,
    }


def _executor(scenario: Scenario, session: Session) -> HostExecutor | DeviceExecutor:
    runtime = scenario.runtime
    return executor_for(
        session, io_binding=runtime.io_binding, include_host_copies=runtime.include_host_copies
    )


def _placement_warnings(session: Session) -> list[str]:
    placement: dict[str, int] = session.settings["node_placement"]
    on_cpu = placement.get("CPUExecutionProvider", 0)
    if not on_cpu:
        return []
    total = sum(placement.values())
    return [
        f"partial CPU placement: {on_cpu} of {total} nodes ran on CPUExecutionProvider "
        "(allow_cpu_fallback: true); this is not a pure accelerator result"
    ]


def _write_confs(
    request: RunRequest, run_dir: Path, model_key: str, expected: lgconf.Expectation, total: int
) -> TestPlan:
    scenario = request.scenario
    official = lgconf.official_mlperf_conf()
    atomic_write_text(run_dir / "mlperf.conf", official)
    overrides = lgconf.user_conf_overrides(scenario, request.profile, expected)
    atomic_write_text(
        run_dir / "user.conf", lgconf.render_user_conf(model_key, scenario.scenario, overrides)
    )
    return TestPlan(
        scenario=scenario.scenario,
        mode="performance",
        model_key=model_key,
        mlperf_conf=run_dir / "mlperf.conf",
        user_conf=run_dir / "user.conf",
        out_dir=run_dir,
        total_sample_count=total,
    )


@dataclass(frozen=True, kw_only=True)
class _Attempt:
    """One timed LoadGen test with its telemetry window."""

    request: RunRequest
    run_dir: Path
    session: Session
    source: SampleSource

    def run(
        self,
        executor: Executor,
        model_key: str,
        expected: lgconf.Expectation,
        progress: IO[str] | None,
    ) -> tuple[TestPlan, Window, dict[str, Any] | None, int]:
        scenario = self.request.scenario
        plan = _write_confs(
            self.request, self.run_dir, model_key, expected, self.source.total_count
        )
        settings = load_settings(plan)
        telemetry = TelemetryWindow(self.request.hw, scenario.telemetry)
        store = SampleStore(
            self.source,
            self.session.inputs,
            executor,
            on_window_open=telemetry.open,
            on_window_close=telemetry.close,
        )
        sut = _make_sut(scenario, executor, store)
        try:
            window = run_timed_test(plan, settings, sut, store, progress=progress)
        finally:
            telemetry.release()
        if isinstance(sut.error, KeyboardInterrupt):
            raise sut.error
        if sut.error is not None:
            raise RunError(
                f"{self.run_dir}: inference failed during LoadGen: {_describe(sut.error)}"
            )
        if store.hook_errors:
            raise RunError(f"{self.run_dir}: telemetry failed: {_describe(store.hook_errors[0])}")
        power = telemetry.finish(self.run_dir, samples=sut.completed, scenario=scenario.scenario)
        return plan, window, power, sut.completed


_UNDERSIZED = ("Increase expected QPS", "Decrease the expected latency")


def _retry_expectation(
    scenario: Scenario, run_dir: Path, expected: lgconf.Expectation
) -> lgconf.Expectation | None:
    """A better expectation when LoadGen says its run was too short for the one it had."""
    log = parse_detail_log(run_dir / "mlperf_log_detail.txt")
    reasons = " ".join(log.get("result_invalid_reason", []))
    if log.get("result_validity") == "VALID" or not any(r in reasons for r in _UNDERSIZED):
        return None
    if scenario.scenario == "Offline":
        measured = float(log.get("result_samples_per_second") or 0)
        return lgconf.Expectation(
            latency_ns=expected.latency_ns,
            samples_per_second=max(measured, expected.samples_per_second) * 1.5,
        )
    latency = float(log.get("result_min_latency_ns") or expected.latency_ns)
    return lgconf.Expectation(
        latency_ns=min(latency, expected.latency_ns) / 2,
        samples_per_second=expected.samples_per_second,
    )


def _set_aside(run_dir: Path, attempt: Path) -> None:
    attempt.mkdir()
    for name in (
        "mlperf_log_summary.txt",
        "mlperf_log_detail.txt",
        "mlperf_log_accuracy.json",
        "mlperf_log_trace.json",
        "user.conf",
        "telemetry.csv",
    ):
        if (run_dir / name).exists():
            (run_dir / name).rename(attempt / name)


def _make_sut(
    scenario: Scenario, executor: Executor, store: SampleStore
) -> SingleStreamSUT | OfflineSUT:
    return make_sut(scenario.scenario, executor, store)


def _describe(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0]}" if text else type(error).__name__


def _result(request: RunRequest, run_dir: Path, measured: _Measured) -> RunResult:
    requested = Requested(
        scenario=request.scenario,
        profile=request.profile,
        hw=request.hw,
        model_name=_model_name(request),
    )
    return build_result(requested, run_dir, measured)
