"""The QSL's preloaded sample store and the SingleStream and Offline systems under test."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import mlperf_loadgen as lg
import numpy as np

from harness.data import SampleSource, SampleSpec

Infer = Callable[[Mapping[str, np.ndarray]], list[np.ndarray]]


class SampleStore:
    """Samples LoadGen asked for, preloaded into one contiguous array per input."""

    def __init__(self, source: SampleSource, specs: Sequence[SampleSpec]) -> None:
        self._source = source
        self._specs = tuple(specs)
        self.arrays: dict[str, np.ndarray] = {}
        self.row_of: dict[int, int] = {}
        self.single_feeds: list[dict[str, np.ndarray]] = []

    def load(self, indices: Sequence[int]) -> None:
        """LoadGen's load callback: allocate once, fill, and prepare batch-1 views."""
        unique = list(dict.fromkeys(int(i) for i in indices))
        self.arrays = {
            s.name: np.empty((len(unique), *s.shape[1:]), dtype=s.dtype) for s in self._specs
        }
        self._source.fill(unique, self.arrays)
        self.row_of = {index: row for row, index in enumerate(unique)}
        self.single_feeds = [
            {name: array[row : row + 1] for name, array in self.arrays.items()}
            for row in range(len(unique))
        ]

    def unload(self, indices: Sequence[int]) -> None:
        """LoadGen's unload callback: drop everything."""
        del indices
        self.arrays, self.row_of, self.single_feeds = {}, {}, []


class _SUT:
    """Shared failure handling: a failing inference completes what is left and stops work."""

    def __init__(self, infer: Infer, store: SampleStore) -> None:
        self._infer = infer
        self._store = store
        self.completed = 0
        self.error: BaseException | None = None

    def request_stop(self, reason: BaseException) -> None:
        """Stop inferring: every sample from now on completes at once, with no data."""
        if self.error is None:
            self.error = reason

    def flush(self) -> None:
        """LoadGen's flush callback; nothing is buffered."""

    def _abort(self, exc: BaseException, pending: Sequence[Any]) -> None:
        if self.error is None:
            self.error = exc
        lg.QuerySamplesComplete([lg.QuerySampleResponse(s.id, 0, 0) for s in pending])


class SingleStreamSUT(_SUT):
    """Runs each one-sample query inline in LoadGen's issue thread: no hand-off, no queue."""

    def issue(self, samples: Sequence[Any]) -> None:
        """LoadGen's issue callback."""
        if self.error is not None:
            self._abort(self.error, samples)
            return
        done = 0
        try:
            for sample in samples:
                out = self._infer(self._store.single_feeds[self._store.row_of[sample.index]])[0]
                lg.QuerySamplesComplete(
                    [lg.QuerySampleResponse(sample.id, out.ctypes.data, out.nbytes)]
                )
                done += 1
                self.completed += 1
        except Exception as exc:  # must not unwind into LoadGen's C++ thread
            self._abort(exc, samples[done:])


class OfflineSUT(_SUT):
    """Runs Offline's one big query in fixed-size batches gathered into preallocated buffers."""

    def __init__(self, infer: Infer, store: SampleStore, specs: Sequence[SampleSpec]) -> None:
        super().__init__(infer, store)
        self._batch = {s.name: np.empty(s.shape, dtype=s.dtype) for s in specs}
        self.batch_size = next(iter(specs)).shape[0]

    def issue(self, samples: Sequence[Any]) -> None:
        """LoadGen's issue callback: the whole query, answered batch by batch."""
        if self.error is not None:
            self._abort(self.error, samples)
            return
        done = 0
        try:
            for start in range(0, len(samples), self.batch_size):
                if self.error is not None:
                    break
                chunk = samples[start : start + self.batch_size]
                self._run_batch(chunk)
                done = start + len(chunk)
                self.completed = done
            if done < len(samples):
                self._abort(self.error or RuntimeError("stopped"), samples[done:])
        except Exception as exc:  # must not unwind into LoadGen's C++ thread
            self._abort(exc, samples[done:])

    def _run_batch(self, chunk: Sequence[Any]) -> None:
        rows = [self._store.row_of[s.index] for s in chunk]
        for name, buffer in self._batch.items():
            # A short last batch leaves stale rows as padding: the model's batch is fixed.
            np.take(self._store.arrays[name], rows, axis=0, out=buffer[: len(rows)])
        out = self._infer(self._batch)[0]
        stride = out.nbytes // self.batch_size
        base = out.ctypes.data
        lg.QuerySamplesComplete(
            [lg.QuerySampleResponse(s.id, base + i * stride, stride) for i, s in enumerate(chunk)]
        )
