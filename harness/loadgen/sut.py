"""The QSL's preloaded sample store and the systems under test of LoadGen's four scenarios."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import mlperf_loadgen as lg
import numpy as np

from harness.config import Scenario
from harness.datasets.samples import SampleSource, SampleSpec
from harness.loadgen.querytimes import QueryTimes


class Executor(Protocol):
    """Runs loaded samples (see harness.runtime.executors); returns LoadGen response memory."""

    batch_size: int

    def attach(self, arrays: Mapping[str, np.ndarray]) -> None:
        """Receive the loaded samples, one contiguous array per input."""

    def run_single(self, row: int) -> tuple[int, int]:
        """Infer one sample; (address, bytes) of its output."""

    def run_batch(self, rows: Sequence[int]) -> tuple[int, int]:
        """Infer a batch; (base address, bytes per sample) of its output."""


class SampleStore:
    """Samples LoadGen asked for, preloaded into one contiguous array per input.

    LoadGen loads samples right before its timed test and unloads them right after, so the
    end of `load` and the start of `unload` bound the measured window: `on_window_open` and
    `on_window_close` (telemetry) run there, outside the timed path.
    """

    def __init__(
        self,
        source: SampleSource,
        specs: Sequence[SampleSpec],
        executor: Executor,
        *,
        on_window_open: Callable[[], None] | None = None,
        on_window_close: Callable[[], None] | None = None,
        also_attach: Sequence[Executor] = (),
    ) -> None:
        self._source = source
        self._specs = tuple(specs)
        self._executors = (executor, *also_attach)  # Server's workers each have their own
        self._open, self._close = on_window_open, on_window_close
        self.arrays: dict[str, np.ndarray] = {}
        self.row_of: dict[int, int] = {}
        self.hook_errors: list[Exception] = []

    @property
    def executors(self) -> tuple[Executor, ...]:
        """Every executor the loaded samples are handed to (Server: one per worker)."""
        return self._executors

    def load(self, indices: Sequence[int]) -> None:
        """LoadGen's load callback: allocate once, fill, hand to the executor (untimed)."""
        unique = list(dict.fromkeys(int(i) for i in indices))
        self.arrays = {
            s.name: np.empty((len(unique), *s.shape[1:]), dtype=s.dtype) for s in self._specs
        }
        self._source.fill(unique, self.arrays)
        self.row_of = {index: row for row, index in enumerate(unique)}
        for executor in self._executors:
            executor.attach(self.arrays)
        self._call(self._open)

    def unload(self, indices: Sequence[int]) -> None:
        """LoadGen's unload callback: close the window, drop everything."""
        del indices
        self._call(self._close)
        self.arrays, self.row_of = {}, {}
        for executor in self._executors:
            executor.attach({})

    def _call(self, hook: Callable[[], None] | None) -> None:
        if hook is None:
            return
        try:
            hook()
        except Exception as exc:  # runs in LoadGen's thread: keep it for the caller to raise
            self.hook_errors.append(exc)


class _SUT:
    """Shared failure handling: a failing inference completes what is left and stops work.

    Both SUTs use LoadGen's "fast" issue callback, which hands over two lists of ints
    (response ids and sample indices) instead of one QuerySample object per sample. Each
    stamps its queries into `times` with `clock` (query_latencies.npz).
    """

    def __init__(
        self,
        executor: Executor,
        store: SampleStore,
        *,
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self._executor = executor
        self._store = store
        self.completed = 0
        self.error: BaseException | None = None
        self.times = QueryTimes()  # the runner reserves its rows before the test
        self._clock = clock
        self._queries = 0  # queries LoadGen issued so far: the next one's number

    def request_stop(self, reason: BaseException) -> None:
        """Stop inferring: every sample from now on completes at once, with no data."""
        if self.error is None:
            self.error = reason

    def flush(self) -> None:
        """LoadGen's flush callback; nothing is buffered."""

    def start(self) -> None:
        """Called before LoadGen's test starts (Server starts its workers here)."""

    def stop(self) -> None:
        """Called after LoadGen's test ends, whatever happened."""

    def _abort(self, exc: BaseException, pending: Sequence[int]) -> None:
        if self.error is None:
            self.error = exc
        lg.QuerySamplesComplete([lg.QuerySampleResponse(i, 0, 0) for i in pending])


class SingleStreamSUT(_SUT):
    """Runs each one-sample query inline in LoadGen's issue thread: no hand-off, no queue."""

    def issue(self, ids: Sequence[int], indices: Sequence[int]) -> None:
        """LoadGen's (fast) issue callback."""
        if self.error is not None:  # stopping: not stamped, LoadGen may issue many more
            self._abort(self.error, ids)
            return
        issued_ns = self._clock()
        query, self._queries = self._queries, self._queries + 1
        done = 0
        try:
            for response_id, index in zip(ids, indices, strict=True):
                address, size = self._executor.run_single(self._store.row_of[index])
                done_ns = self._clock()
                lg.QuerySamplesComplete([lg.QuerySampleResponse(response_id, address, size)])
                self.times.record(query, issued_ns, done_ns, 1)
                done += 1
                self.completed += 1
        except Exception as exc:  # must not unwind into LoadGen's C++ thread
            self._abort(exc, ids[done:])


class OfflineSUT(_SUT):
    """Runs Offline's one big query in fixed-size batches."""

    def issue(self, ids: Sequence[int], indices: Sequence[int]) -> None:
        """LoadGen's (fast) issue callback: the whole query, answered batch by batch."""
        if self.error is not None:  # stopping: not stamped
            self._abort(self.error, ids)
            return
        issued_ns = self._clock()
        query, self._queries = self._queries, self._queries + 1
        done = 0
        batch = self._executor.batch_size
        before = self.completed  # MultiStream: one query after another, counted together
        try:
            for start in range(0, len(ids), batch):
                if self.error is not None:
                    break
                end = start + batch
                self._run_batch(ids[start:end], indices[start:end], query, issued_ns)
                done = min(start + batch, len(ids))
                self.completed = before + done
            if done < len(ids):
                self._abort(self.error or RuntimeError("stopped"), ids[done:])
        except Exception as exc:  # must not unwind into LoadGen's C++ thread
            self._abort(exc, ids[done:])

    def _run_batch(
        self, ids: Sequence[int], indices: Sequence[int], query: int, issued_ns: int
    ) -> None:
        rows = [self._store.row_of[i] for i in indices]
        base, stride = self._executor.run_batch(rows)
        responses = [
            lg.QuerySampleResponse(response_id, base + n * stride if base else 0, stride)
            for n, response_id in enumerate(ids)
        ]
        done_ns = self._clock()
        lg.QuerySamplesComplete(responses)
        self.times.record(query, issued_ns, done_ns, len(ids))


class MultiStreamSUT(OfflineSUT):
    """MultiStream: each query is one batch (MLPerf's 8 samples), run inline like Offline's."""


@dataclass(frozen=True, kw_only=True)
class BatcherStats:
    """What Server's dynamic batcher did, from the queries it answered.

    ``batch_sizes`` counts batches by the number of queries in them (before padding);
    ``queue_delay_ns`` is each query's wait from LoadGen's issue to its batch's start;
    ``hold_ns`` each batch's time held open for more queries (max wait, plus the thread's
    wake-up when the wait ran out).
    """

    batches: int
    samples: int
    batch_sizes: dict[int, int]
    queue_delay_ns: list[int]
    hold_ns: list[int]

    @property
    def mean_batch(self) -> float | None:
        """Average queries per batch (None before the first)."""
        return self.samples / self.batches if self.batches else None


class ServerSUT(_SUT):
    """Server: LoadGen's Poisson queries into a bounded queue, batched dynamically by workers.

    Each worker takes the first waiting query, then gathers what else is queued, waiting for
    more at most ``max_wait_s`` after taking the first, up to ``max_batch``. It runs the batch on
    its smallest executor that holds it (executors are keyed by their compiled batch: a batch
    of 3 runs on the batch-4 one, padded) and completes the queries from its own thread.
    LoadGen's issue thread only enqueues; it blocks when ``queue_depth`` queries wait, which
    shows as latency, never as a lost query.
    """

    def __init__(
        self,
        workers: Sequence[Mapping[int, Executor]],
        store: SampleStore,
        *,
        max_batch: int,
        max_wait_s: float,
        queue_depth: int,
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        first = workers[0]
        super().__init__(first[max(first)], store, clock=clock)
        self._workers = [dict(sorted(executors.items())) for executors in workers]
        self._max_batch = min(max_batch, max(first))
        self._max_wait_ns = round(max_wait_s * 1e9)
        self._queue: queue.Queue[tuple[int, int, int] | None] = queue.Queue(maxsize=queue_depth)
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._sizes: dict[int, int] = {}
        self._delays: list[int] = []
        self._holds: list[int] = []

    @property
    def stats(self) -> BatcherStats:
        """Batches, their sizes, each query's queueing delay and each batch's hold, so far."""
        with self._lock:
            return BatcherStats(
                batches=sum(self._sizes.values()),
                samples=self.completed,
                batch_sizes=dict(sorted(self._sizes.items())),
                queue_delay_ns=list(self._delays),
                hold_ns=list(self._holds),
            )

    def start(self) -> None:
        """Start one thread per worker."""
        self._threads = [
            threading.Thread(target=self._work, args=(e,), name=f"server-{n}", daemon=True)
            for n, e in enumerate(self._workers)
        ]
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        """Let the workers drain the queue and end."""
        for _ in self._threads:
            self._queue.put(None)
        for thread in self._threads:
            thread.join()
        self._threads = []

    def issue(self, ids: Sequence[int], indices: Sequence[int]) -> None:
        """LoadGen's (fast) issue callback: enqueue with the issue time, nothing more."""
        now = self._clock()
        for response_id, index in zip(ids, indices, strict=True):
            self._queue.put((response_id, index, now))

    def _work(self, executors: Mapping[int, Executor]) -> None:
        while (first := self._queue.get()) is not None:
            taken = self._clock()
            batch, stopping = self._gather(first, taken)
            self._answer(executors, batch, held_ns=self._clock() - taken)
            if stopping:
                return

    def _gather(
        self, first: tuple[int, int, int], taken_ns: int
    ) -> tuple[list[tuple[int, int, int]], bool]:
        """The first query, what is queued, and what arrives within max_wait; True: stop."""
        batch = [first]
        deadline_ns = taken_ns + self._max_wait_ns
        while len(batch) < self._max_batch:
            try:
                left_s = (deadline_ns - self._clock()) / 1e9
                item = self._queue.get(timeout=left_s) if left_s > 0 else self._queue.get_nowait()
            except queue.Empty:
                break
            if item is None:
                return batch, True
            batch.append(item)
        return batch, False

    def _answer(
        self, executors: Mapping[int, Executor], batch: list[tuple[int, int, int]], held_ns: int
    ) -> None:
        ids = [response_id for response_id, _, _ in batch]
        if self.error is not None:
            self._abort(self.error, ids)
            return
        started = self._clock()
        try:
            executor = executors[next(size for size in executors if size >= len(batch))]
            rows = [self._store.row_of[index] for _, index, _ in batch]
            base, stride = executor.run_batch(rows)
            responses = [
                lg.QuerySampleResponse(response_id, base + n * stride if base else 0, stride)
                for n, response_id in enumerate(ids)
            ]
            done_ns = self._clock()
            lg.QuerySamplesComplete(responses)
        except Exception as exc:  # a worker must never die with queries unanswered
            self._abort(exc, ids)
            return
        with self._lock:
            self._sizes[len(batch)] = self._sizes.get(len(batch), 0) + 1
            self._delays.extend(started - issued for _, _, issued in batch)
            self._holds.append(held_ns)
            self.completed += len(ids)
            for _, _, issued in batch:  # each Server query is one sample
                self.times.record(self.times.count, issued, done_ns, 1)


AnySUT = SingleStreamSUT | MultiStreamSUT | OfflineSUT | ServerSUT


@dataclass(frozen=True, kw_only=True)
class ServerPlan:
    """How Server's batcher runs: executors per worker keyed by compiled batch, its limits."""

    workers: Sequence[Mapping[int, Executor]]
    max_batch: int
    max_wait_s: float
    queue_depth: int


def make_sut(
    scenario: Scenario, executor: Executor, store: SampleStore, server: ServerPlan | None = None
) -> AnySUT:
    """The SUT for a scenario; Server's needs its plan (the runner measures and derives it)."""
    if scenario.scenario == "SingleStream":
        return SingleStreamSUT(executor, store)
    if scenario.scenario == "MultiStream":
        return MultiStreamSUT(executor, store)
    if scenario.scenario == "Server":
        if server is None:
            raise ValueError("a Server SUT needs its ServerPlan")
        return ServerSUT(
            server.workers,
            store,
            max_batch=server.max_batch,
            max_wait_s=server.max_wait_s,
            queue_depth=server.queue_depth,
        )
    return OfflineSUT(executor, store)
