"""Warm-up: untimed inferences on the timed path, until a query count and a duration are met."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from harness.errors import RunError
from harness.runtime.session import TensorSpec


class WarmableExecutor(Protocol):
    """The executor interface warm-up drives (the timed path's own)."""

    batch_size: int

    def attach(self, arrays: Mapping[str, np.ndarray]) -> None:
        """Take (or, with {}, drop) the samples to run."""

    def run_single(self, row: int) -> object:
        """One sample."""

    def run_batch(self, rows: Sequence[int]) -> object:
        """One batch."""


class SampleFiller(Protocol):
    """Where warm-up samples come from: the run's own data source."""

    total_count: int

    def fill(self, indices: Sequence[int], arrays: Mapping[str, np.ndarray]) -> None:
        """Write the samples at `indices` into `arrays` row by row."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WarmUpStats:
    """What warm-up measured; LoadGen is told to expect the fastest query."""

    queries: int
    duration_ms: float
    median_latency_ns: float
    min_latency_ns: int
    samples_per_second: float


def warm_up(
    executor: WarmableExecutor,
    specs: Sequence[TensorSpec],
    source: SampleFiller,
    *,
    min_queries: int,
    min_duration_ms: int,
    clock: Callable[[], int] = time.perf_counter_ns,
) -> WarmUpStats:
    """Run batches of real samples until both minimums are met; the executor ends detached."""
    batch = executor.batch_size
    rows = list(range(batch))
    arrays = {s.name: np.empty(s.shape, dtype=s.dtype) for s in specs}
    source.fill([i % source.total_count for i in rows], arrays)
    executor.attach(arrays)
    latencies: list[int] = []
    start = clock()
    while len(latencies) < min_queries or clock() - start < min_duration_ms * 1_000_000:
        t0 = clock()
        try:
            executor.run_single(0) if batch == 1 else executor.run_batch(rows)
        except Exception as exc:  # onnxruntime's errors are untyped; report the cause once
            raise RunError(f"inference failed during warm-up: {describe(exc)}") from None
        latencies.append(clock() - t0)
    executor.attach({})
    median_ns = statistics.median(latencies)
    return WarmUpStats(
        queries=len(latencies),
        duration_ms=round((clock() - start) / 1e6, 3),
        median_latency_ns=median_ns,
        min_latency_ns=min(latencies),
        samples_per_second=batch * 1e9 / median_ns,
    )


def describe(error: BaseException) -> str:
    """An inference error in one line: its type and the first line of its text."""
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0]}" if text else type(error).__name__
