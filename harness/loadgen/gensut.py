"""The generative SUT: greedy generation per query, with LoadGen's token latencies.

Each query is one prompt; its tokens are generated greedily up to the sample's budget or
end-of-text. The first token is reported with ``lg.FirstTokenComplete`` (not in Offline,
where LoadGen measures no first token), the whole output with ``lg.QuerySamplesComplete``
carrying its token count: LoadGen derives TTFT and TPOT = (latency - TTFT) / (n - 1).

SingleStream generates inline in LoadGen's issue thread. Offline and Server hand queries to
one worker thread. Offline generates up to ``max_active`` queries of like budgets as one genai
batch (harness.runtime.genai.Batch), each answered at its own end. Server, given a row batch
(harness.runtime.kvbatch), batches continuously: new queries join the running batch at the next
step boundary (harness.loadgen.genbatcher; genai's Engine needs a PagedAttention model);
without one it steps up to ``max_active`` genai sequences a token each in turn. The SUT records,
per query, what it generated and when (``TokenTimes``), apart from what it reports, so the
result can check LoadGen's figures.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import mlperf_loadgen as lg
import numpy as np

from harness.config import ScenarioName
from harness.datasets.prompts import Prompts
from harness.loadgen.genbatcher import BatchLog, Hooks, RowBatch, Stepper, serve


class BatchStepper(Protocol):
    """Sequences generated together (harness.runtime.genai.Batch)."""

    tokens: list[list[int]]  # per row, its tokens (complete once the row ended)

    def step(self) -> list[int]:
        """A token for every row still going; returns the rows that ended."""

    @property
    def done(self) -> bool:
        """Whether every row ended."""


class Sequential(Stepper, Protocol):
    """A sequence run whole, one at a time (harness.runtime.genai.Sequence).

    A first token after the prefill, then the rest in one tight loop: a Python call per token
    costs a few per cent of a small model's token.
    """

    def first(self) -> int:
        """Prefills and makes the first token; returns it."""

    def finish(self, stopped: Callable[[], bool]) -> bool:
        """Makes the rest of the tokens; False if ``stopped()`` said so first."""

    def output(self) -> np.ndarray:
        """The tokens made (int32)."""


class Generator(Protocol):
    """Starts sequences (harness.runtime.genai.GenaiModel)."""

    def start(self, prompt: np.ndarray, *, max_new_tokens: int, min_new_tokens: int) -> Sequential:
        """A sequence after ``prompt``."""

    def start_batch(
        self, prompts: list[np.ndarray], *, budgets: list[int], hold_eos: bool
    ) -> BatchStepper:
        """Sequences after ``prompts``, generated as one batch."""

    def batchable(self, prompt: np.ndarray) -> bool:
        """Whether ``prompt`` can share a batch (else it runs alone)."""


class PromptStore:
    """LoadGen's QSL over prompts held in memory; load and unload bound the telemetry window."""

    def __init__(
        self,
        prompts: Prompts,
        *,
        on_window_open: Callable[[], None] | None = None,
        on_window_close: Callable[[], None] | None = None,
    ) -> None:
        self.prompts = prompts
        self._open, self._close = on_window_open, on_window_close
        self.hook_errors: list[Exception] = []

    def load(self, indices: Sequence[int]) -> None:
        """LoadGen's load callback: the prompts are in memory; the window opens."""
        del indices
        self._call(self._open)

    def unload(self, indices: Sequence[int]) -> None:
        """LoadGen's unload callback: the window closes."""
        del indices
        self._call(self._close)

    def _call(self, hook: Callable[[], None] | None) -> None:
        if hook is None:
            return
        try:
            hook()
        except Exception as exc:  # runs in LoadGen's thread: kept for the caller to raise
            self.hook_errors.append(exc)


@dataclass
class TokenTimes:
    """Per completed query: when it was issued, its first token and its end (ns), its tokens."""

    issue_ns: list[int] = field(default_factory=list)
    first_ns: list[int] = field(default_factory=list)
    end_ns: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    start_ns: list[int] = field(default_factory=list)  # generation began (queueing delay)


@dataclass
class _Active:
    response_id: int
    index: int
    issued_ns: int
    sequence: Stepper | None = None
    first_ns: int = 0
    answered: bool = False  # a batched query (its tokens live in the batch) was answered
    started_ns: int = 0


class GenerativeSUT:
    """LoadGen's SUT for a generative model in SingleStream, Offline or Server."""

    def __init__(
        self,
        generator: Generator,
        store: PromptStore,
        *,
        scenario: ScenarioName,
        hold_eos: bool,
        max_active: int = 1,
        clock: Callable[[], int] = time.monotonic_ns,
        batch: RowBatch | None = None,
    ) -> None:
        self._generator, self._store, self._scenario = generator, store, scenario
        self._batch = batch  # Server: continuous batching (harness.loadgen.genbatcher)
        self._hold_eos, self._max_active, self._clock = hold_eos, max_active, clock
        self._queue: queue.SimpleQueue[_Active | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self.completed = 0
        self.error: BaseException | None = None
        self.tokens = TokenTimes()
        self.batching: BatchLog | None = None  # Server's continuous batch, once started
        # the first token's buffer, made once (LoadGen reads it during the call)
        self._first = np.zeros(1, dtype=np.int32)
        self._first_at: int = self._first.ctypes.data

    def start(self) -> None:
        """Starts the worker thread (Offline and Server)."""
        if self._scenario != "SingleStream":
            work = self._work_batches if self._scenario == "Offline" else self._work
            if self._scenario == "Server" and self._batch is not None:
                self.batching = BatchLog()
            self._thread = threading.Thread(target=work, name="generate", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Ends the worker thread once LoadGen has finished."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None

    def request_stop(self, reason: BaseException) -> None:
        """Stop generating: every query from now on completes at once, with no tokens."""
        if self.error is None:
            self.error = reason

    def flush(self) -> None:
        """LoadGen's flush: nothing is held back."""

    def issue(self, ids: Sequence[int], indices: Sequence[int]) -> None:
        """LoadGen's issue callback (the fast one: response ids and sample indices)."""
        now = self._clock()
        for response_id, index in zip(ids, indices, strict=True):
            query = _Active(response_id=int(response_id), index=int(index), issued_ns=now)
            if self._scenario == "SingleStream":
                self._run_whole(query, report_first=True)
            else:
                self._queue.put(query)

    def _stopped(self) -> bool:
        return self.error is not None

    def _start_lone(self, prompt: np.ndarray, most: int, least: int) -> Sequential:
        return self._generator.start(prompt, max_new_tokens=most, min_new_tokens=least)

    def _run_whole(self, query: _Active, *, report_first: bool) -> None:
        """One query generated start to end (SingleStream, and Offline one at a time)."""
        try:
            if self.error is not None:
                self._complete_empty(query)
                return
            sequence = self._begin(query)
            token = sequence.first()
            query.first_ns = self._clock()
            if report_first:
                self._first_token(query.response_id, token)
            if sequence.finish(self._stopped):
                self._report(query, sequence.output())
            else:
                self._complete_empty(query)
        except Exception as exc:
            self._fail(exc, [query])

    def _work(self) -> None:
        if self._batch is not None and self.batching is not None:
            serve(
                self._batch,
                self._queue,
                prompts=self._store.prompts,
                hold_eos=self._hold_eos,
                max_active=self._max_active,
                clock=self._clock,
                hooks=Hooks(
                    first_token=self._first_token,
                    report=self._report,
                    complete_empty=self._complete_empty,
                    fail=self._fail,
                    stopped=self._stopped,
                    start_lone=self._start_lone,
                    batchable=self._generator.batchable,
                ),
                log=self.batching,
            )
            return
        active: list[_Active] = []
        while True:
            while len(active) < self._max_active:
                try:  # block only when nothing is being generated
                    item = self._queue.get(block=not active)
                except queue.Empty:
                    break
                if item is None:  # LoadGen has finished: nothing is pending
                    return
                active.append(item)
            try:
                for query in [q for q in active if q.sequence is None]:
                    self._begin(query)
                active = [q for q in active if not self._advance(q)]
            except Exception as exc:
                self._fail(exc, active)
                active = []

    def _work_batches(self) -> None:
        """Offline: up to ``max_active`` queries of like budgets at a time, as one batch.

        Queries wait in two queues sorted by budget, those that must run alone first; they
        are sorted when queries arrive, not per batch (LoadGen's one Offline query holds
        thousands of samples on a small model).
        """
        alone: deque[_Active] = deque()  # prompts that cannot share a batch
        shared: deque[_Active] = deque()
        finished = False  # the None: LoadGen has finished, so nothing more is issued
        while True:
            arrived: list[_Active] = []
            # block only when nothing waits; else take what arrived (no queue.Empty raised)
            while not finished and not ((alone or shared or arrived) and self._queue.empty()):
                item = self._queue.get()
                if item is None:
                    finished = True
                else:
                    arrived.append(item)
            if arrived:
                alone, shared = self._sorted(alone, shared, arrived)
            if not alone and not shared:
                return
            if alone:
                group = [alone.popleft()]
            else:
                group = [shared.popleft() for _ in range(min(self._max_active, len(shared)))]
            if len(group) == 1:  # a batch of one is a lone sequence, without a batch's steps
                self._run_whole(group[0], report_first=False)
                continue
            try:
                self._run_batch(group)
            except Exception as exc:
                self._fail(exc, [q for q in group if not q.answered])

    def _sorted(
        self, alone: deque[_Active], shared: deque[_Active], arrived: list[_Active]
    ) -> tuple[deque[_Active], deque[_Active]]:
        """The waiting queues with ``arrived`` added, each sorted by budget (stable)."""
        prompts = self._store.prompts
        lone, batchable = list(alone), list(shared)
        for query in arrived:
            ids = prompts.ids[query.index]
            (batchable if self._generator.batchable(ids) else lone).append(query)
        lone.sort(key=lambda q: prompts.budgets[q.index])
        batchable.sort(key=lambda q: prompts.budgets[q.index])
        return deque(lone), deque(batchable)

    def _run_batch(self, group: list[_Active]) -> None:
        prompts = self._store.prompts
        started = self._clock()
        for query in group:
            query.started_ns = started
        batch = self._generator.start_batch(
            [prompts.ids[q.index] for q in group],
            budgets=[prompts.budgets[q.index] for q in group],
            hold_eos=self._hold_eos,
        )
        first = True
        while not batch.done:
            if self.error is not None:
                break
            ended = batch.step()
            if first:  # the batch's first token (every row's)
                first, now = False, self._clock()
                for query in group:
                    query.first_ns = now
            for row in ended:
                group[row].answered = True
                self._report(group[row], batch.tokens[row])
        for query in group:
            if not query.answered:  # stopped (request_stop) before its end
                query.answered = True
                self._complete_empty(query)

    def _begin(self, query: _Active) -> Sequential:
        prompts = self._store.prompts
        budget = prompts.budgets[query.index]
        query.started_ns = self._clock()
        sequence = self._generator.start(
            prompts.ids[query.index],
            max_new_tokens=budget,
            min_new_tokens=budget if self._hold_eos else 2,
        )
        query.sequence = sequence
        return sequence

    def _advance(self, query: _Active) -> bool:
        """One token of ``query``; True when it completed."""
        if self.error is not None:
            self._complete_empty(query)
            return True
        sequence = query.sequence
        assert sequence is not None  # begun before it advances
        sequence.step()
        if not query.first_ns:
            query.first_ns = self._clock()
            if self._scenario != "Offline":
                self._first_token(query.response_id, sequence.tokens[0])
        if not sequence.done:
            return False
        self._complete(query, sequence)
        return True

    def _first_token(self, response_id: int, token: int) -> None:
        self._first[0] = token  # one thread answers first tokens: the worker, or LoadGen's
        lg.FirstTokenComplete([lg.QuerySampleResponse(response_id, self._first_at, 4, 1)])

    def _complete(self, query: _Active, sequence: Stepper) -> None:
        self._report(query, sequence.tokens)

    def _report(self, query: _Active, tokens: list[int] | np.ndarray) -> None:
        out = np.asarray(tokens, dtype=np.int32)
        n_tokens = len(out)
        end = self._clock()
        response = lg.QuerySampleResponse(
            query.response_id, out.ctypes.data, out.nbytes, self.reported_tokens(n_tokens)
        )
        lg.QuerySamplesComplete([response])
        times = self.tokens
        times.issue_ns.append(query.issued_ns)
        times.first_ns.append(query.first_ns)
        times.end_ns.append(end)
        times.tokens.append(n_tokens)
        times.start_ns.append(query.started_ns)
        self.completed += 1

    def reported_tokens(self, n_tokens: int) -> int:
        """The token count LoadGen is told: the tokens generated (a test's cheat changes it)."""
        return n_tokens

    def _complete_empty(self, query: _Active) -> None:
        lg.QuerySamplesComplete([lg.QuerySampleResponse(query.response_id, 0, 0, 0)])
        self.completed += 1

    def _fail(self, exc: BaseException, pending: Sequence[_Active]) -> None:
        if self.error is None:
            self.error = exc
        for query in pending:
            self._complete_empty(query)
