"""The QSL's preloaded sample store and the SingleStream and Offline systems under test."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import mlperf_loadgen as lg
import numpy as np

from harness.config import ScenarioName
from harness.data import SampleSource, SampleSpec


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
    ) -> None:
        self._source = source
        self._specs = tuple(specs)
        self._executor = executor
        self._open, self._close = on_window_open, on_window_close
        self.arrays: dict[str, np.ndarray] = {}
        self.row_of: dict[int, int] = {}
        self.hook_errors: list[Exception] = []

    def load(self, indices: Sequence[int]) -> None:
        """LoadGen's load callback: allocate once, fill, hand to the executor (untimed)."""
        unique = list(dict.fromkeys(int(i) for i in indices))
        self.arrays = {
            s.name: np.empty((len(unique), *s.shape[1:]), dtype=s.dtype) for s in self._specs
        }
        self._source.fill(unique, self.arrays)
        self.row_of = {index: row for row, index in enumerate(unique)}
        self._executor.attach(self.arrays)
        self._call(self._open)

    def unload(self, indices: Sequence[int]) -> None:
        """LoadGen's unload callback: close the window, drop everything."""
        del indices
        self._call(self._close)
        self.arrays, self.row_of = {}, {}
        self._executor.attach({})

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
    (response ids and sample indices) instead of one QuerySample object per sample.
    """

    def __init__(self, executor: Executor, store: SampleStore) -> None:
        self._executor = executor
        self._store = store
        self.completed = 0
        self.error: BaseException | None = None

    def request_stop(self, reason: BaseException) -> None:
        """Stop inferring: every sample from now on completes at once, with no data."""
        if self.error is None:
            self.error = reason

    def flush(self) -> None:
        """LoadGen's flush callback; nothing is buffered."""

    def _abort(self, exc: BaseException, pending: Sequence[int]) -> None:
        if self.error is None:
            self.error = exc
        lg.QuerySamplesComplete([lg.QuerySampleResponse(i, 0, 0) for i in pending])


class SingleStreamSUT(_SUT):
    """Runs each one-sample query inline in LoadGen's issue thread: no hand-off, no queue."""

    def issue(self, ids: Sequence[int], indices: Sequence[int]) -> None:
        """LoadGen's (fast) issue callback."""
        if self.error is not None:
            self._abort(self.error, ids)
            return
        done = 0
        try:
            for response_id, index in zip(ids, indices, strict=True):
                address, size = self._executor.run_single(self._store.row_of[index])
                lg.QuerySamplesComplete([lg.QuerySampleResponse(response_id, address, size)])
                done += 1
                self.completed += 1
        except Exception as exc:  # must not unwind into LoadGen's C++ thread
            self._abort(exc, ids[done:])


class OfflineSUT(_SUT):
    """Runs Offline's one big query in fixed-size batches."""

    def issue(self, ids: Sequence[int], indices: Sequence[int]) -> None:
        """LoadGen's (fast) issue callback: the whole query, answered batch by batch."""
        if self.error is not None:
            self._abort(self.error, ids)
            return
        done = 0
        batch = self._executor.batch_size
        try:
            for start in range(0, len(ids), batch):
                if self.error is not None:
                    break
                self._run_batch(ids[start : start + batch], indices[start : start + batch])
                done = min(start + batch, len(ids))
                self.completed = done
            if done < len(ids):
                self._abort(self.error or RuntimeError("stopped"), ids[done:])
        except Exception as exc:  # must not unwind into LoadGen's C++ thread
            self._abort(exc, ids[done:])

    def _run_batch(self, ids: Sequence[int], indices: Sequence[int]) -> None:
        rows = [self._store.row_of[i] for i in indices]
        base, stride = self._executor.run_batch(rows)
        lg.QuerySamplesComplete(
            [
                lg.QuerySampleResponse(response_id, base + n * stride if base else 0, stride)
                for n, response_id in enumerate(ids)
            ]
        )


def make_sut(
    scenario: ScenarioName, executor: Executor, store: SampleStore
) -> SingleStreamSUT | OfflineSUT:
    """The SUT for a LoadGen scenario."""
    if scenario == "SingleStream":
        return SingleStreamSUT(executor, store)
    return OfflineSUT(executor, store)
