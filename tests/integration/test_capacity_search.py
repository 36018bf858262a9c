"""The capacity search against a SUT of known capacity, under real LoadGen runs.

The SUT is a deterministic single server at the adapter boundary: each query waits in FIFO
order for the one before it, then takes exactly SERVICE_MS (timed from the schedule, so a late
wake-up never accumulates): MLPerf's M/D/1 queue. The bound is 20 service times, so near it
the queue runs at rho ~0.9: a steep latency curve.

Its capacity is known exactly, not estimated: LoadGen's Server schedule is the same seeded
exponential gaps at every rate, scaled by 1/rate (checked below on the confirmations' traces,
which hold each sample's scheduled time), so Lindley's recursion over that schedule gives
every query's latency at any rate, and LoadGen's own rules (p99 within the bound; early
stopping's allowance) give the highest rate a confirming run passes. That is the capacity a
finite run sees: at rho ~0.9 a queue that starts empty takes seconds to reach its stationary
tail, so it lies above the stationary M/D/1 ceiling (harness.analysis.queueing.ceiling_qps:
299 QPS here; 333 QPS for this schedule, measured once).

Each rate is one real LoadGen performance run (its own StartTest, its verdict from its
detail log); the search and the confirmations are the harness's own (harness.analysis.capsearch),
judged as the pipeline judges them: the search's short runs by capsearch.step_passes (p99
within the bound, and no larger a share over it than a confirmation may have), the
confirmations by LoadGen's VALID at early stopping's length (capsearch.confirm_queries()).
"""

from __future__ import annotations

import queue
import re
import sys
import threading
import time
from collections import deque
from pathlib import Path

import mlperf_loadgen as lg
import numpy as np
import pytest

from harness.analysis import capsearch
from harness.analysis.earlystop import allowed_overs, confirm_step
from harness.analysis.queueing import ceiling_qps
from harness.loadgen.timed import SWITCH_INTERVAL_S
from harness.records.loadgen_log import logged_int, parse_detail_log

SERVICE_MS = 3.0
BOUND_MS = 60.0  # 20 service times: rho ~0.9 at the p99 bound
SEARCH_QUERIES = 800  # a search run: ~3 s near capacity, p99 from 8 tail queries
SAMPLES = 64


class FifoServer:
    """One server, FIFO, a fixed service time; slower by `slow_factor` above `cliff_qps`.

    The cliff: a SUT that serves well at the rates a search tries first and collapses above
    a rate it only meets later (its arrival rate over the last second decides).
    """

    def __init__(self, service_ms: float, *, cliff_qps: float | None = None) -> None:
        self.service_s = service_ms / 1000
        self.cliff_qps = cliff_qps
        self._queue: queue.SimpleQueue[tuple[int, float] | None] = queue.SimpleQueue()
        self._arrivals: deque[float] = deque()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def issue(self, samples: list[lg.QuerySample]) -> None:
        now = time.monotonic()
        for sample in samples:
            self._queue.put((sample.id, now))

    def flush(self) -> None:
        pass

    def stop(self) -> None:
        self._queue.put(None)
        self._thread.join()

    def _service_s(self, arrived: float) -> float:
        if self.cliff_qps is None:
            return self.service_s
        self._arrivals.append(arrived)
        while self._arrivals[0] < arrived - 1.0:
            self._arrivals.popleft()
        return self.service_s * (4 if len(self._arrivals) > self.cliff_qps else 1)

    def _serve(self) -> None:
        free_at = 0.0
        while (item := self._queue.get()) is not None:
            response_id, arrived = item
            free_at = max(arrived, free_at) + self._service_s(arrived)
            delay = free_at - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            lg.QuerySamplesComplete([lg.QuerySampleResponse(response_id, 0, 0)])


class LoadGenRuns:
    """Real LoadGen Server runs over one SUT, counted; each in a directory of its own."""

    def __init__(self, sut: FifoServer, root: Path) -> None:
        self.root = root
        self.runs = 0
        self.schedules: dict[float, np.ndarray] = {}  # a confirming run's arrivals (s), by rate
        self._sut = lg.ConstructSUT(sut.issue, sut.flush)
        self._qsl = lg.ConstructQSL(SAMPLES, SAMPLES, lambda _: None, lambda _: None)

    def close(self) -> None:
        lg.DestroyQSL(self._qsl)
        lg.DestroySUT(self._sut)

    def run(self, rate_qps: float, queries: int) -> tuple[bool, bool, int, int]:
        """(p99 within the bound, LoadGen's VALID, queries over the bound, queries answered)."""
        self.runs += 1
        out = self.root / f"run-{self.runs}"
        out.mkdir()
        settings = lg.TestSettings()
        settings.scenario = lg.TestScenario.Server
        settings.mode = lg.TestMode.PerformanceOnly
        settings.server_target_qps = rate_qps
        settings.server_target_latency_ns = int(BOUND_MS * 1e6)
        settings.server_target_latency_percentile = 0.99
        settings.min_duration_ms = 1000
        settings.min_query_count = queries
        log = lg.LogSettings()
        log.log_output.outdir = str(out)
        log.log_output.copy_summary_to_stdout = False
        log.enable_trace = queries > SEARCH_QUERIES  # a confirmation's: its scheduled arrivals
        lg.StartTestWithLogSettings(self._sut, self._qsl, settings, log)
        if log.enable_trace:
            self.schedules[rate_qps] = scheduled_s(out / "mlperf_log_trace.json")
        detail = parse_detail_log(out / "mlperf_log_detail.txt")
        within = detail.get("result_perf_constraints_met") is True
        valid = detail.get("result_validity") == "VALID"
        overs = logged_int(detail, "result_overlatency_query_count") or 0
        answered = logged_int(detail, "generated_query_count") or queries
        return within, valid, overs, answered

    def passes(self, rate_qps: float) -> bool:
        """A search run: the scenario's short length, judged as the harness judges a step."""
        within, _, overs, answered = self.run(rate_qps, SEARCH_QUERIES)
        return capsearch.step_passes(within, overs, answered)

    def confirms(self, rate_qps: float) -> capsearch.Verdict:
        """A confirming run: early stopping's length, judged by LoadGen's verdict."""
        _, valid, overs, answered = self.run(rate_qps, capsearch.confirm_queries())
        return capsearch.Verdict(valid=valid, lower_qps=rate_qps * confirm_step(overs, answered))


def _capacity_search(sut: FifoServer, root: Path) -> tuple[float | None, int, LoadGenRuns]:
    """The harness's search and confirmations over `sut`: the peak, the runs it took, the runs."""
    runs = LoadGenRuns(sut, root)
    switch_s = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL_S)  # as the harness's Server runs: prompt hand-overs
    try:
        start = capsearch.start_qps(ceiling_qps(SERVICE_MS, BOUND_MS))
        found = capsearch.search(start, runs.passes)
        assert found.found_qps is not None, found
        confirmed = capsearch.confirm(
            found.found_qps, found.failed_qps, len(found.tried), runs.confirms
        )
        assert runs.runs == len(found.tried) + len(confirmed.tried)
        return confirmed.peak_qps, runs.runs, runs
    finally:
        sys.setswitchinterval(switch_s)
        runs.close()
        sut.stop()


def scheduled_s(trace: Path) -> np.ndarray:
    """When LoadGen scheduled each sample (s from its start), from its trace's Sample events."""
    starts = [
        float(match.group(1)) / 1e6
        for line in trace.read_text().splitlines()
        if '"name":"Sample"' in line and '"ph":"b"' in line
        if (match := re.search(r'"ts":([0-9.]+)', line)) is not None
    ]
    return np.sort(np.asarray(starts))


def unit_schedule(schedules: dict[float, np.ndarray]) -> np.ndarray:
    """The confirming runs' gaps times their rate: one schedule, whatever the rate (checked)."""
    units = [np.diff(times) * rate for rate, times in schedules.items()]
    assert units, "no confirming run recorded its schedule"
    for other in units[1:]:  # the same seeded gaps, scaled exactly
        assert len(other) == len(units[0])
        assert np.allclose(other, units[0], rtol=1e-4, atol=1e-4)
    return units[0]


def passes_exactly(schedule: np.ndarray, rate_qps: float, service_ms: float) -> bool:
    """Would an ideal FIFO server at `service_ms` pass a confirming run at `rate_qps`?"""
    waits_ms, wait = [0.0], 0.0
    for gap_ms in (schedule / rate_qps * 1000).tolist():
        wait = max(0.0, wait + service_ms - gap_ms)
        waits_ms.append(wait)
    latencies = np.sort(np.asarray(waits_ms) + service_ms)
    p99 = latencies[int(len(latencies) * 0.99)]  # LoadGen's percentile: an index, no interpolation
    overs = int(np.count_nonzero(latencies > BOUND_MS))
    return bool(p99 <= BOUND_MS) and overs <= allowed_overs(len(latencies))


def exact_capacity(schedule: np.ndarray, service_ms: float) -> float:
    """The highest rate an ideal server passes a confirming run at, to 0.01 %."""
    low, high = 1.0, 1000 / service_ms
    while high > low * 1.0001:
        middle = (low + high) / 2
        low, high = (
            (middle, high) if passes_exactly(schedule, middle, service_ms) else (low, middle)
        )
    return low


@pytest.mark.timeout(180)
def test_the_search_finds_a_known_capacity_within_5_percent_in_8_runs(tmp_path: Path) -> None:
    peak, count, runs = _capacity_search(FifoServer(SERVICE_MS), tmp_path)
    assert count <= capsearch.RUN_BUDGET == 8
    assert peak is not None, "no confirmation was VALID"
    capacity = exact_capacity(unit_schedule(runs.schedules), SERVICE_MS)
    # Never above what an ideal server passes (the real one wakes up late, never early); the
    # 1 % slack covers the trace's microsecond stamps. At most 5 % below it.
    assert 0.95 * capacity <= peak <= 1.01 * capacity, (peak, capacity)


@pytest.mark.timeout(180)
def test_a_cliff_above_the_first_rates_never_yields_a_peak_above_it(tmp_path: Path) -> None:
    # Fine up to 0.8x the ceiling, four times slower above: the search starts at 0.7x and
    # sees a benign curve until it steps past the cliff; the peak must stay under it, VALID.
    cliff = 0.8 * ceiling_qps(SERVICE_MS, BOUND_MS)
    peak, count, _ = _capacity_search(FifoServer(SERVICE_MS, cliff_qps=cliff), tmp_path)
    assert count <= capsearch.RUN_BUDGET
    assert peak is not None, "no confirmation was VALID"
    assert peak <= cliff
