"""Server's continuous batching: queries join the running batch at the next step boundary.

The generative SUT's worker runs this loop when its model can batch row by row
(harness.runtime.kvbatch): before each decode step, every query that arrived meanwhile is
prefilled (alone, so its tokens are a lone run's) and joins the batch, up to ``max_active``
rows; one decode step then makes a token for every row, and a row that reached its budget or
end-of-text is answered and leaves. Nobody waits for a batch to finish (iteration-level
admission). A prompt the batch cannot take (it holds the pad id, which genai would mask) runs
as a lone sequence stepped alongside.

``BatchLog`` keeps what the batch looked like: the rows in each decode step (the concurrency
distribution) and, per admission, how many rows were already running (a query that joined a
running batch).
"""

from __future__ import annotations

import queue
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

import numpy as np

from harness.datasets.prompts import Prompts
from harness.records.generation import Concurrency

SWITCH_INTERVAL_S = 0.0002  # the GIL hand-over while serving (the interpreter's default: 5 ms)


class Query(Protocol):
    """A query the SUT took from LoadGen (gensut's _Active)."""

    response_id: int
    index: int
    first_ns: int
    started_ns: int


Q = TypeVar("Q", bound=Query)


class Row(Protocol):
    """A row of the batch (harness.runtime.kvbatch.Row)."""

    key: int
    tokens: list[int]

    @property
    def done(self) -> bool:
        """Whether the row ended."""


class RowBatch(Protocol):
    """Rows generated together (harness.runtime.kvbatch.ContinuousBatch)."""

    @property
    def rows(self) -> Sequence[Row]:
        """The rows being generated."""

    def admit(
        self, key: int, prompt: np.ndarray, *, max_new_tokens: int, min_new_tokens: int
    ) -> Row:
        """Prefills ``prompt`` and adds it as a row; its first token is made."""

    def step(self) -> Sequence[Row]:
        """A token for every row; returns the rows that ended (they left)."""

    def clear(self) -> None:
        """Drops every row."""


class Stepper(Protocol):
    """One sequence generated on its own (harness.runtime.genai.Sequence).

    The generative SUT's one-at-a-time path, and a continuous batch's prompts that cannot join it.
    """

    @property
    def tokens(self) -> list[int]:
        """Every token made so far (read from the runtime: read it only when needed)."""

    def step(self) -> object:
        """Makes the next token (what it returns is not used)."""

    @property
    def done(self) -> bool:
        """Whether the sequence ended."""


@dataclass(frozen=True)
class Hooks(Generic[Q]):
    """What the loop tells the SUT: a first token, an answer, an empty answer, a failure."""

    first_token: Callable[[int, int], None]  # response id, token
    report: Callable[[Q, list[int]], None]
    complete_empty: Callable[[Q], None]
    fail: Callable[[BaseException, Sequence[Q]], None]
    stopped: Callable[[], bool]  # request_stop was called: answer everything empty
    start_lone: Callable[[np.ndarray, int, int], Stepper]  # prompt, max, min new tokens
    batchable: Callable[[np.ndarray], bool]


@dataclass
class BatchLog:
    """The batch's shape over a run: rows per decode step, rows running at each admission."""

    step_rows: list[int] = field(default_factory=list)
    admitted_into: list[int] = field(default_factory=list)

    def histogram(self, max_active: int) -> list[int]:
        """Decode steps by how many rows they ran: index b counts the steps of b rows."""
        counts = np.bincount(np.asarray(self.step_rows, dtype=np.int64), minlength=max_active + 1)
        return [int(c) for c in counts]

    @property
    def joined_running(self) -> int:
        """Queries admitted while other rows were mid-generation."""
        return sum(1 for rows in self.admitted_into if rows > 0)

    def record(self, max_active: int) -> Concurrency | None:
        """The concurrency distribution; None when no decode step ran."""
        if not self.step_rows:
            return None
        ordered = np.sort(np.asarray(self.step_rows, dtype=np.int64))

        def rank(q: float) -> int:  # nearest rank
            return int(ordered[max(int(np.ceil(q * len(ordered))) - 1, 0)])

        return Concurrency(
            scheduler="continuous",
            steps=len(ordered),
            histogram=tuple(self.histogram(max_active)),
            mean=round(float(ordered.mean()), 3),
            p50=rank(0.5),
            p90=rank(0.9),
            p99=rank(0.99),
            max=int(ordered[-1]),
            admitted=len(self.admitted_into),
            joined_running=self.joined_running,
        )


def serve(
    batch: RowBatch,
    inbox: queue.SimpleQueue[Q | None],
    *,
    prompts: Prompts,
    hold_eos: bool,
    max_active: int,
    clock: Callable[[], int],
    hooks: Hooks[Q],
    log: BatchLog,
) -> None:
    """The worker loop: admit at step boundaries, step, answer; returns at the None.

    The loop is Python between onnxruntime calls, so LoadGen's issue thread would wait up to
    the interpreter's switch interval (5 ms) for the GIL, which LoadGen counts in TTFT: the
    interval is shortened while the loop runs, and restored after.
    """
    interval = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    try:
        _serve(
            batch,
            inbox,
            prompts=prompts,
            hold_eos=hold_eos,
            max_active=max_active,
            clock=clock,
            hooks=hooks,
            log=log,
        )
    finally:
        sys.setswitchinterval(interval)


def _serve(
    batch: RowBatch,
    inbox: queue.SimpleQueue[Q | None],
    *,
    prompts: Prompts,
    hold_eos: bool,
    max_active: int,
    clock: Callable[[], int],
    hooks: Hooks[Q],
    log: BatchLog,
) -> None:
    rows: dict[int, Q] = {}  # batch row key -> its query
    lone: list[tuple[Q, Stepper]] = []
    next_key = 0
    while True:
        while len(rows) + len(lone) < max_active:
            try:  # block only when nothing is being generated
                item = inbox.get(block=not (rows or lone))
            except queue.Empty:
                break
            if item is None:  # LoadGen has finished: nothing is pending
                return
            try:
                if hooks.stopped():
                    hooks.complete_empty(item)
                    continue
                item.started_ns = clock()
                budget = prompts.budgets[item.index]
                least = budget if hold_eos else 2
                prompt = prompts.ids[item.index]
                if not hooks.batchable(prompt):
                    lone.append((item, hooks.start_lone(prompt, budget, least)))
                    continue
                log.admitted_into.append(len(batch.rows))
                row = batch.admit(next_key, prompt, max_new_tokens=budget, min_new_tokens=least)
                item.first_ns = clock()
                hooks.first_token(item.response_id, row.tokens[0])
                if row.done:
                    hooks.report(item, list(row.tokens))
                else:
                    rows[next_key] = item
                next_key += 1
            except Exception as exc:
                hooks.fail(exc, [item, *rows.values(), *(q for q, _ in lone)])
                rows, lone = {}, []
                batch.clear()
        try:
            if hooks.stopped():
                for query in [*rows.values(), *(q for q, _ in lone)]:
                    hooks.complete_empty(query)
                rows, lone = {}, []
                batch.clear()
                continue
            if batch.rows:
                log.step_rows.append(len(batch.rows))
                for row in batch.step():
                    hooks.report(rows.pop(row.key), list(row.tokens))
            lone = [entry for entry in lone if not _advance(entry, clock, hooks)]
        except Exception as exc:
            hooks.fail(exc, [*rows.values(), *(q for q, _ in lone)])
            rows, lone = {}, []
            batch.clear()


def _advance(entry: tuple[Q, Stepper], clock: Callable[[], int], hooks: Hooks[Q]) -> bool:
    """One token of a lone sequence; True when it was answered."""
    query, sequence = entry
    sequence.step()
    if not query.first_ns:
        query.first_ns = clock()
        hooks.first_token(query.response_id, sequence.tokens[0])
    if not sequence.done:
        return False
    hooks.report(query, list(sequence.tokens))
    return True
