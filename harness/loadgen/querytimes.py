"""Per-query timestamps the SUTs take in the timed path, and how many rows to allocate."""

from __future__ import annotations

import array
import math

import mlperf_loadgen as lg
import numpy as np

from harness.config import ScenarioName

COLUMNS = ("query", "issue_ns", "complete_ns", "samples")
# Rows allocated before the test: what LoadGen's settings lead to expect, with a margin (a
# run faster than expected makes more queries), at most MAX_ROWS (32 bytes each) up front.
MARGIN = 1.5
MIN_ROWS = 1024
MAX_ROWS = 1 << 22


class QueryTimes:
    """Each query's issue and completion times (monotonic ns), in arrays allocated up front.

    `record` is all the timed path does: four stores into preallocated int64 arrays (no
    object kept per query; slotted, for the cheapest attribute access). A run longer than
    sized grows them by the reserved size, one memory copy. Server's workers call it under
    their lock.
    """

    __slots__ = (
        "_step",
        "capacity",
        "complete_ns",
        "count",
        "grown",
        "issue_ns",
        "query",
        "samples",
    )

    def __init__(self, capacity: int = MIN_ROWS) -> None:
        self._step = self.capacity = max(int(capacity), 1)
        self.query, self.issue_ns, self.complete_ns, self.samples = (
            array.array("q", bytes(8 * self._step)) for _ in range(4)
        )
        self.count = 0
        self.grown = 0

    def reserve(self, rows: int) -> None:
        """Allocate at least `rows` rows now (before the test), and grow by that many after."""
        self._step = max(self._step, int(rows))
        if int(rows) > self.capacity:
            self._add(int(rows) - self.capacity)

    def record(self, query: int, issue_ns: int, complete_ns: int, samples: int) -> None:
        """One completion: its query's number, issue and completion times, samples done."""
        n = self.count
        if n == self.capacity:  # a longer run than sized: copy once, keep going
            self._add(self._step)
            self.grown += 1
        self.query[n] = query
        self.issue_ns[n] = issue_ns
        self.complete_ns[n] = complete_ns
        self.samples[n] = samples
        self.count = n + 1

    def columns(self) -> dict[str, np.ndarray]:
        """The recorded rows as int64 arrays: query, issue_ns, complete_ns, samples."""
        arrays = (self.query, self.issue_ns, self.complete_ns, self.samples)
        return {
            name: np.frombuffer(a, dtype=np.int64, count=self.count).copy()
            for name, a in zip(COLUMNS, arrays, strict=True)
        }

    def _add(self, rows: int) -> None:
        for column in (self.query, self.issue_ns, self.complete_ns, self.samples):
            column.frombytes(bytes(8 * rows))
        self.capacity += rows


def expected_rows(settings: lg.TestSettings, scenario: ScenarioName, batch_size: int) -> int:
    """Rows to allocate for a test: its expected queries (Offline, MultiStream: batches)."""
    duration_s = int(settings.min_duration_ms) / 1e3
    queries = int(settings.min_query_count)
    if scenario == "SingleStream":
        latency_ns = max(int(settings.single_stream_expected_latency_ns), 1)
        rows = max(queries, duration_s * 1e9 / latency_ns)
    elif scenario == "MultiStream":
        per_query = math.ceil(int(settings.multi_stream_samples_per_query) / max(batch_size, 1))
        latency_ns = max(int(settings.multi_stream_expected_latency_ns), 1)
        rows = max(queries, duration_s * 1e9 / latency_ns) * per_query
    elif scenario == "Server":
        rows = max(queries, duration_s * float(settings.server_target_qps))
    else:
        rows = max(queries, duration_s * float(settings.offline_expected_qps)) / max(batch_size, 1)
    return int(min(max(rows * MARGIN, MIN_ROWS), MAX_ROWS))
