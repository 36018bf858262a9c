"""Cheating SUTs for tests only, in every harness process started with this on PYTHONPATH.

`BT_CHEAT=caching` answers each LoadGen sample index from a cache after its first inference,
in every mode (accuracy, performance, compliance): the cheat of issue #25, which LoadGen calls
VALID and MLPerf's TEST01 and TEST04 pass. `BT_CHEAT=answer-once` infers once and returns that
output for every query. `BT_CHEAT=slower` is a regression, not a cheat: each inference waits
`BT_SLOW_US` microseconds more (2000 unless set), what `compare --fail-if-slower` must catch.
Each wraps the executor, the timed path's boundary
(harness.runtime.executors.executor_for), before the runner imports it; the cache learns which
sample index sits in which row from the sample store's load, as a SUT that owns its QSL knows.
`BT_CHEAT=token-count` is a generative SUT that tells LoadGen twice the tokens it made (so
tokens/s doubles and TPOT halves); `BT_CHEAT=no-first-token` one that never reports a first
token (LoadGen then logs TTFT and TPOT as 0). LoadGen calls both VALID; the token checks
(harness.analysis.tokens) are what catch them. `BT_CHEAT=accuracy-tokens` is a generative SUT
that, in the AccuracyOnly pass only, returns other tokens than it generated (token 7, as many):
a regeneration would score the model, not what the SUT answered; the accuracy job must fail it.
`BT_CHEAT=truncate-row` / `drop-row` is a
Server scheduler (harness.runtime.kvbatch's rows) that ends rows early: the accuracy job's
check of served tokens against one-at-a-time generation (harness.execution.genexact) catches it.
Nothing here is imported by the harness; without BT_CHEAT this file does nothing.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping, Sequence
from typing import Any

CHEAT = os.environ.get("BT_CHEAT", "")


def _copy(address: int, size: int) -> Any:
    import numpy as np

    return np.frombuffer(ctypes.string_at(address, size), dtype=np.uint8).copy()


class _Rows:
    """Which LoadGen sample index the last load put in each row (the store's row_of, inverted)."""

    index_of: dict[int, int] = {}  # noqa: RUF012  # one process, one store at a time


class CachingExecutor:
    """Answers a sample index it has seen from a cache: never cleared, in every mode."""

    def __init__(self, inner: Any) -> None:
        self._inner, self.batch_size, self.data_path = inner, inner.batch_size, inner.data_path
        self._cache: dict[int, Any] = {}
        self._keep: Any = None

    def attach(self, arrays: Mapping[str, Any]) -> None:
        self._inner.attach(arrays)  # the cache stays: it is keyed by sample index

    def run_single(self, row: int) -> tuple[int, int]:
        index = _Rows.index_of.get(row)
        if index is None:  # warm-up: no LoadGen index yet
            return self._inner.run_single(row)  # type: ignore[no-any-return]
        if index not in self._cache:
            self._cache[index] = _copy(*self._inner.run_single(row))
        out = self._cache[index]
        return out.ctypes.data, out.nbytes

    def run_batch(self, rows: Sequence[int]) -> tuple[int, int]:
        import numpy as np

        indices = [_Rows.index_of.get(r) for r in rows]
        if None in indices or any(i not in self._cache for i in indices):
            base, per = self._inner.run_batch(rows)
            for k, index in enumerate(indices):
                if index is not None:
                    self._cache[index] = _copy(base + k * per, per)
            return base, per
        per = self._cache[indices[0]].nbytes
        self._keep = np.concatenate([self._cache[i] for i in indices])
        return self._keep.ctypes.data, per


class AnswerOnceExecutor:
    """Infers the first query, then returns that output for every query after it."""

    def __init__(self, inner: Any) -> None:
        self._inner, self.batch_size, self.data_path = inner, inner.batch_size, inner.data_path
        self._once: Any = None
        self._keep: Any = None

    def attach(self, arrays: Mapping[str, Any]) -> None:
        self._inner.attach(arrays)

    def run_single(self, row: int) -> tuple[int, int]:
        if self._once is None:
            self._once = _copy(*self._inner.run_single(row))
        return self._once.ctypes.data, self._once.nbytes

    def run_batch(self, rows: Sequence[int]) -> tuple[int, int]:
        import numpy as np

        if self._once is None:
            base, per = self._inner.run_batch(rows)
            self._once = _copy(base, per)
        self._keep = np.tile(self._once, self.batch_size)
        return self._keep.ctypes.data, self._once.nbytes


class SlowerExecutor:
    """Infers as the real one does, then waits: a genuine slowdown of every query."""

    def __init__(self, inner: Any) -> None:
        self._inner, self.batch_size, self.data_path = inner, inner.batch_size, inner.data_path
        self._wait_s = int(os.environ.get("BT_SLOW_US", "2000")) / 1e6

    def attach(self, arrays: Mapping[str, Any]) -> None:
        self._inner.attach(arrays)

    def run_single(self, row: int) -> tuple[int, int]:
        import time

        found = self._inner.run_single(row)
        time.sleep(self._wait_s)
        return found  # type: ignore[no-any-return]

    def run_batch(self, rows: Sequence[int]) -> tuple[int, int]:
        import time

        found = self._inner.run_batch(rows)
        time.sleep(self._wait_s)
        return found  # type: ignore[no-any-return]


CHEATS = {
    "caching": CachingExecutor,
    "answer-once": AnswerOnceExecutor,
    "slower": SlowerExecutor,
}


def _install(kind: str) -> None:
    import harness.loadgen.sut as sut
    import harness.runtime.executors as executors

    cheat = CHEATS[kind]
    real_for = executors.executor_for
    executors.executor_for = lambda *a, **k: cheat(real_for(*a, **k))  # type: ignore[assignment]
    real_load = sut.SampleStore.load

    def load(self: Any, indices: Sequence[int]) -> None:
        real_load(self, indices)
        _Rows.index_of = {row: index for index, row in self.row_of.items()}

    sut.SampleStore.load = load  # type: ignore[method-assign]


def _install_token_cheat(kind: str) -> None:
    """The cheat in the timed test only: LoadGen 6.0.17 crashes (SIGSEGV) in an AccuracyOnly
    pass whose SUT reports no first token, before the timed test the checks judge."""
    import harness.execution.genrunner as genrunner
    import harness.loadgen.gensut as gensut

    sut = gensut.GenerativeSUT
    real_run = genrunner.run_generative

    def run(*args: Any, **kwargs: Any) -> Any:
        if kind == "token-count":
            sut.reported_tokens = lambda self, n_tokens: 2 * n_tokens  # type: ignore[method-assign]
        else:
            sut._first_token = lambda self, response_id, token: None  # type: ignore[method-assign]
        return real_run(*args, **kwargs)

    genrunner.run_generative = run  # type: ignore[assignment]


def _install_accuracy_tokens_cheat() -> None:
    """In the accuracy pass only: every answer is token 7, as many tokens as were generated."""
    import harness.execution.genrunner as genrunner
    import harness.loadgen.gensut as gensut

    sut = gensut.GenerativeSUT
    real_report = sut._report
    real_accuracy = genrunner.run_generative_accuracy

    def report(self: Any, query: Any, tokens: list[int]) -> None:
        real_report(self, query, [7] * len(tokens))

    def run(*args: Any, **kwargs: Any) -> Any:
        sut._report = report  # type: ignore[method-assign]
        try:
            return real_accuracy(*args, **kwargs)
        finally:
            sut._report = real_report  # type: ignore[method-assign]

    genrunner.run_generative_accuracy = run  # type: ignore[assignment]


def _install_scheduler_cheat(kind: str) -> None:
    """A continuous batch that ends every row a token early (``truncate-row``) or answers
    every other admitted row as soon as it is prefilled (``drop-row``: one token)."""
    import harness.runtime.kvbatch as kvbatch

    row = kvbatch.Row
    real_done = row.done.fget
    admitted = {"n": 0}

    def done(self: Any) -> bool:
        if kind == "truncate-row":
            return bool(len(self.tokens) >= max(self.budget - 1, 1) or self.ended_by_eos)
        if not hasattr(self, "dropped"):  # first asked just after its prefill
            admitted["n"] += 1
            self.dropped = admitted["n"] % 2 == 0
        return bool(getattr(self, "dropped", False) or real_done(self))

    row.done = property(done)  # type: ignore[method-assign,assignment]


TOKEN_CHEATS = ("token-count", "no-first-token")
SCHEDULER_CHEATS = ("truncate-row", "drop-row")

if CHEAT == "accuracy-tokens":
    _install_accuracy_tokens_cheat()
elif CHEAT in TOKEN_CHEATS:
    _install_token_cheat(CHEAT)
elif CHEAT in SCHEDULER_CHEATS:
    _install_scheduler_cheat(CHEAT)
elif CHEAT:
    _install(CHEAT)
