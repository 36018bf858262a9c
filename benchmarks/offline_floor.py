"""LoadGen's floor for a CNN in Offline: the plain batched loop inside a minimal LoadGen SUT.

The smallest Offline SUT there is: LoadGen's issue callback runs benchmarks/overhead.py's plain
loop inline (session.run on one preallocated batch, again and again) and hands each batch's
output to QuerySamplesComplete; the logging the harness uses (end of test, no trace). No
sample store, no gather, no stamps, no telemetry, no worker process. Against the plain loop
it is what LoadGen itself costs (its IO thread polls every 10 ms, a compile-time constant, and
wakes a core the onnxruntime pool is spinning on); the harness against it is what the
harness adds on top.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import mlperf_loadgen as lg
import numpy as np
from minimal_lg import run_minimal

from harness.loadgen.conf import OFFLINE_SLACK, whole_batches_qps
from harness.records.loadgen_log import logged_float
from harness.runtime.session import Session

SAMPLES = 64  # the QSL's performance set, as overhead.py's harness side loads


@dataclass(frozen=True)
class OfflineFloor:
    samples_per_second: float  # LoadGen's
    answered: int  # samples the SUT completed, by its own count
    window_s: float  # the SUT's first issue to its last completion


class _MinimalOfflineSut:
    """Answers Offline's query inline, batch by batch, on one fixed batch of inputs."""

    def __init__(self, session: Session, feeds: dict[str, np.ndarray]) -> None:
        self._session, self._feeds = session, feeds
        self._batch = session.inputs[0].shape[0]
        self._keep: list[np.ndarray] = []
        self.answered, self.first_ns, self.last_ns = 0, 0, 0

    def issue(self, ids: list[int], indices: list[int]) -> None:
        del indices  # the same batch every time, as the plain loop
        self.first_ns = self.first_ns or time.monotonic_ns()
        for start in range(0, len(ids), self._batch):
            out = self._session.run(self._feeds)[0]
            self._keep = [out]  # alive until LoadGen has read it
            stride = out.nbytes // self._batch
            chunk = ids[start : start + self._batch]
            base = out.ctypes.data
            responses = [
                lg.QuerySampleResponse(i, base + n * stride, stride) for n, i in enumerate(chunk)
            ]
            lg.QuerySamplesComplete(responses)
            self.answered += len(chunk)
        self.last_ns = time.monotonic_ns()

    def flush(self) -> None:
        """Nothing is held back."""


def offline_floor(session: Session, feeds: dict[str, np.ndarray], seconds: float) -> OfflineFloor:
    """One LoadGen Offline test of about ``seconds`` on the minimal SUT (warmed up here).

    LoadGen sizes its one query as OFFLINE_SLACK x min_duration x expected rate; the rate
    comes from a warm batch and the duration is set so the query takes about ``seconds``,
    in whole batches, as the harness sizes its own.
    """
    times = []
    for _ in range(8):  # the median of the last five: one slow batch does not size the query
        start = time.perf_counter()
        session.run(feeds)
        times.append(time.perf_counter() - start)
    batch = session.inputs[0].shape[0]
    rate = batch / statistics.median(times[3:])
    duration_ms = max(int(seconds / OFFLINE_SLACK * 1000), 1)
    sut = _MinimalOfflineSut(session, feeds)
    settings = lg.TestSettings()
    settings.scenario = lg.TestScenario.Offline
    settings.mode = lg.TestMode.PerformanceOnly
    settings.min_duration_ms = duration_ms
    settings.min_query_count = batch
    settings.offline_expected_qps = whole_batches_qps(rate, batch, duration_ms)
    detail = run_minimal(sut.issue, sut.flush, SAMPLES, settings)
    logged = logged_float(detail, "result_samples_per_second")
    return OfflineFloor(
        samples_per_second=float("nan") if logged is None else logged,
        answered=sut.answered,
        window_s=(sut.last_ns - sut.first_ns) / 1e9,
    )
