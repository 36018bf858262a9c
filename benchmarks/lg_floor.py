"""LoadGen's floor for a generative model: the bare genai loop inside a minimal LoadGen SUT.

The smallest SUT that can be measured: LoadGen's issue callback runs the bare loop of
benchmarks/llm.py inline (generator made, prompt appended, a step, the first token read and
handed to FirstTokenComplete, the rest generated, the output read and handed to
QuerySamplesComplete), from the main thread, with the logging the harness uses (end of test,
no trace). No queue, no record, no telemetry, no worker process. What it reports against the
bare loop is what LoadGen itself costs a Python SUT on this machine; the harness against it is
what the harness adds on top.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import mlperf_loadgen as lg
import numpy as np
import onnxruntime_genai as og
from minimal_lg import run_minimal

from harness.datasets.prompts import Prompts
from harness.records.loadgen_log import logged_token_figures


@dataclass(frozen=True)
class FloorFigures:
    tokens_per_second: float
    ttft_ms: float
    tpot_ms: float
    answered_tokens: int = 0  # what the SUT handed back, by its own count
    span_s: float = 0.0  # the SUT's first issue to its last answer


class _MinimalSut:
    """Answers each query inline in LoadGen's issue callback."""

    def __init__(self, model: og.Model, prompts: Prompts) -> None:
        self._model, self._prompts = model, prompts
        self._first = np.zeros(1, dtype=np.int32)
        self._first_at = self._first.ctypes.data
        self._out = np.zeros(0, dtype=np.int32)
        self.tokens, self.first_ns, self.last_ns = 0, 0, 0

    def issue(self, ids: list[int], indices: list[int]) -> None:
        self.first_ns = self.first_ns or time.monotonic_ns()
        for response_id, index in zip(ids, indices, strict=True):
            prompt, budget = self._prompts.ids[index], self._prompts.budgets[index]
            params = og.GeneratorParams(self._model)
            total = len(prompt) + budget
            params.set_search_options(max_length=total, min_length=total)
            generator = og.Generator(self._model, params)
            generator.append_tokens(prompt)
            generator.generate_next_token()
            self._first[0] = generator.get_next_tokens()[0]
            lg.FirstTokenComplete([lg.QuerySampleResponse(response_id, self._first_at, 4, 1)])
            while not generator.is_done():
                generator.generate_next_token()
            out = np.ascontiguousarray(generator.get_sequence(0)[len(prompt) :], dtype=np.int32)
            self._out = out  # alive until LoadGen has read it
            response = lg.QuerySampleResponse(response_id, out.ctypes.data, out.nbytes, len(out))
            lg.QuerySamplesComplete([response])
            self.tokens += len(out)
        self.last_ns = time.monotonic_ns()

    def flush(self) -> None:
        """Nothing is held back."""


def floor_run(
    model: og.Model, prompts: Prompts, kind: str, seconds: float, query_s: float
) -> FloorFigures:
    """One LoadGen test of ``kind`` ("SingleStream" or "Offline") on the minimal SUT.

    ``query_s``: a query's time from a warm-up, which LoadGen's expected latency and
    Offline's expected rate are set from (as the harness sets them from its own warm-up).
    """
    sut = _MinimalSut(model, prompts)
    settings = lg.TestSettings()
    settings.mode = lg.TestMode.PerformanceOnly
    settings.use_token_latencies = True
    settings.min_duration_ms = int(seconds * 1000)
    settings.min_query_count = 4
    if kind == "SingleStream":
        settings.scenario = lg.TestScenario.SingleStream
        settings.single_stream_expected_latency_ns = int(query_s * 1e9)
    else:
        settings.scenario = lg.TestScenario.Offline
        settings.offline_expected_qps = 1.0 / query_s
    detail = run_minimal(sut.issue, sut.flush, prompts.count, settings)
    figures = logged_token_figures(detail)
    ttft = (figures.ttft_ns or {}).get("p50")
    tpot = (figures.tpot_ns or {}).get("p50")
    return FloorFigures(
        tokens_per_second=figures.tokens_per_second or float("nan"),
        ttft_ms=float("nan") if ttft is None else ttft / 1e6,
        tpot_ms=float("nan") if tpot is None else tpot / 1e6,
        answered_tokens=sut.tokens,
        span_s=(sut.last_ns - sut.first_ns) / 1e9,
    )


def query_seconds(model: og.Model, prompts: Prompts) -> float:
    """A pass over the prompts through the minimal SUT's loop, outside LoadGen: s per query."""
    start = time.perf_counter()
    for index in range(prompts.count):
        prompt, budget = prompts.ids[index], prompts.budgets[index]
        params = og.GeneratorParams(model)
        params.set_search_options(max_length=len(prompt) + budget, min_length=len(prompt) + budget)
        generator = og.Generator(model, params)
        generator.append_tokens(prompt)
        while not generator.is_done():
            generator.generate_next_token()
    return (time.perf_counter() - start) / prompts.count
