"""Run LoadGen's timed test: settings from mlperf.conf + user.conf, GC off, a progress line."""

from __future__ import annotations

import gc
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import mlperf_loadgen as lg

from harness.config import ScenarioName
from harness.errors import ConfigError, RunError
from harness.loadgen.gensut import GenerativeSUT, PromptStore
from harness.loadgen.sut import AnySUT, SampleStore

# Python hands the GIL to a waiting thread only every switch interval (5 ms by default): a
# Server worker whose hold just ended, or whose batch just finished, would wait that long for
# the thread that holds it. 0.5 ms while LoadGen measures Server keeps hand-overs within the bound.
SWITCH_INTERVAL_S = 0.0005

_SCENARIOS = {
    "SingleStream": lg.TestScenario.SingleStream,
    "MultiStream": lg.TestScenario.MultiStream,
    "Server": lg.TestScenario.Server,
    "Offline": lg.TestScenario.Offline,
}
SEED_KEYS = ("qsl_rng_seed", "sample_index_rng_seed", "schedule_rng_seed")
_MODES = {
    "performance": lg.TestMode.PerformanceOnly,
    "accuracy": lg.TestMode.AccuracyOnly,
}


@dataclass(frozen=True, kw_only=True)
class TestPlan:
    """Everything LoadGen needs for one timed test."""

    __test__ = False  # not a pytest test class, despite its name

    scenario: ScenarioName
    mode: str
    model_key: str
    mlperf_conf: Path
    user_conf: Path
    out_dir: Path
    total_sample_count: int
    # A compliance test's audit.config; None for every other test, which LoadGen is then
    # told to read from no file at all (not even an audit.config in the working directory).
    audit_config: Path | None = None
    # RNG seeds set on LoadGen's settings after both files (a published result's, reproduced):
    # LoadGen takes seeds from mlperf.conf only, never from a user.conf.
    seeds: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, kw_only=True)
class Window:
    """When the timed test ran, on the monotonic clock (ns)."""

    start_ns: int
    end_ns: int


def load_settings(plan: TestPlan) -> lg.TestSettings:
    """Official mlperf.conf first, then our user.conf on top."""
    settings = lg.TestSettings()
    for path, conf_type in ((plan.mlperf_conf, 0), (plan.user_conf, 1)):
        if settings.FromConfig(str(path), plan.model_key, plan.scenario, conf_type) != 0:
            raise RunError(f"{path}: LoadGen could not read it")
    settings.scenario = _SCENARIOS[plan.scenario]
    settings.mode = _MODES[plan.mode]
    for key, value in plan.seeds:
        if key not in SEED_KEYS:
            raise ConfigError(
                f"seeds: {key!r} is not one of LoadGen's seeds ({', '.join(SEED_KEYS)})"
            )
        setattr(settings, key, value)
    return settings


def performance_sample_count(settings: lg.TestSettings, plan: TestPlan) -> int:
    """How many samples LoadGen will load; more than the data holds is a config error."""
    count = int(settings.performance_sample_count_override) or plan.total_sample_count
    if count > plan.total_sample_count:
        raise ConfigError(
            f"data.total_sample_count: {plan.total_sample_count} is smaller than the "
            f"performance_sample_count {count} LoadGen uses for '{plan.model_key}'; raise it"
        )
    return count


def run_timed_test(
    plan: TestPlan,
    settings: lg.TestSettings,
    sut: AnySUT | GenerativeSUT,
    store: SampleStore | PromptStore,
    *,
    progress: IO[str] | None = None,
    clock: Callable[[], int] = time.monotonic_ns,
) -> Window:
    """Run the test with the garbage collector off; Ctrl-C stops it cleanly.

    LoadGen runs in a worker thread while the main thread waits in Python: a signal can only
    be handled there, so Ctrl-C aborts the SUT (remaining samples complete empty), LoadGen
    finishes and writes its logs, and KeyboardInterrupt is raised here afterwards.
    """
    count = performance_sample_count(settings, plan)
    handle_sut = lg.ConstructFastSUT(sut.issue, sut.flush)
    handle_qsl = lg.ConstructQSL(plan.total_sample_count, count, store.load, store.unload)
    log = lg.LogSettings()
    log.log_output.outdir = str(plan.out_dir)
    log.log_output.copy_summary_to_stdout = False
    # LoadGen's trace stays off (mlperf_log_trace.json is left empty): the SUT stamps each
    # query itself into preallocated arrays (harness.loadgen.querytimes), which the runner
    # writes as query_latencies.npz; the trace would be a JSON event per sample, in memory.
    log.enable_trace = False
    # LoadGen's default AsyncPoll log thread wakes during the test and, on a 2-core machine,
    # steals a core from onnxruntime's pool: +10 % SingleStream p50 on the tiny model
    # (benchmarks/overhead.py). Writing the log after the test costs memory, not time.
    log.log_mode = lg.LoggingMode.EndOfTestOnly
    failures: list[Exception] = []
    finished = threading.Event()

    def start_test() -> None:
        try:
            lg.StartTestWithLogSettings(handle_sut, handle_qsl, settings, log, _audit_path(plan))
        except Exception as exc:  # re-raised in the calling thread below
            failures.append(exc)
        finally:
            finished.set()

    worker = threading.Thread(target=start_test, name="loadgen", daemon=True)
    reporter = _Progress(sut, int(settings.min_duration_ms), progress, clock)
    gc.collect()
    gc.disable()
    switch_s = sys.getswitchinterval()
    if plan.scenario == "Server":  # the only SUT whose threads hand work to each other
        sys.setswitchinterval(SWITCH_INTERVAL_S)
    start = clock()
    sut.start()
    try:
        worker.start()
        _wait(finished, sut, reporter)
    finally:
        end = clock()
        sys.setswitchinterval(switch_s)
        gc.enable()
        if finished.is_set():  # never free what a running LoadGen still uses
            sut.stop()
            lg.DestroyQSL(handle_qsl)
            lg.DestroyFastSUT(handle_sut)
    if failures:
        raise RunError(f"{plan.out_dir}: LoadGen failed: {failures[0]}")
    return Window(start_ns=start, end_ns=end)


def _audit_path(plan: TestPlan) -> str:
    """The audit.config LoadGen applies: the plan's, or none.

    LoadGen applies the file it is given if it exists, and defaults to `audit.config` in the
    working directory, where MLPerf's instructions leave one behind. "" names no file.
    """
    return "" if plan.audit_config is None else str(plan.audit_config)


def _wait(finished: threading.Event, sut: AnySUT | GenerativeSUT, reporter: _Progress) -> None:
    # An Event, not Thread.join: a join interrupted by Ctrl-C can report a live thread as done.
    interrupted = False
    while True:
        try:
            while not finished.wait(reporter.interval_s):
                reporter.tick()
            break
        except KeyboardInterrupt:  # the SUT completes the rest at once; LoadGen then ends
            interrupted = True
            sut.request_stop(KeyboardInterrupt())
    reporter.done()
    if interrupted:
        raise KeyboardInterrupt


class _Progress:
    """A line showing elapsed time against the minimum duration and completed samples."""

    def __init__(
        self,
        sut: AnySUT | GenerativeSUT,
        min_duration_ms: int,
        stream: IO[str] | None,
        clock: Callable[[], int],
    ) -> None:
        self._sut, self._min_ms, self._stream, self._clock = sut, min_duration_ms, stream, clock
        self._tty = stream is not None and stream.isatty()
        self.interval_s = 1.0 if self._tty else 10.0
        self._t0 = clock()

    def tick(self) -> None:
        """Show the current state (in place on a terminal, one line per interval elsewhere)."""
        self._write(final=False)

    def done(self) -> None:
        """Show the final state."""
        self._write(final=True)

    def _write(self, *, final: bool) -> None:
        if self._stream is None:
            return
        elapsed_s = (self._clock() - self._t0) / 1e9
        line = (
            f"  LoadGen {elapsed_s:6.1f} s / min {self._min_ms / 1000:.0f} s, "
            f"{self._sut.completed} samples done"
        )
        end = "\n" if final or not self._tty else ""
        self._stream.write(("\r" if self._tty else "") + line + end)
        self._stream.flush()
