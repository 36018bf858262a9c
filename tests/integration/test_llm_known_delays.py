"""The generative SUT under real LoadGen with a generator of known delays: TTFT and TPOT read back.

The generator spins 20 ms before its first token and 5 ms before each next one, 11 tokens a
query. On a machine shared with other work the thread is preempted now and then, so a step
can take longer than asked: LoadGen's TTFT p50 and TPOT p50, read back from its detail log by
the harness's parser, must be within 2 % (+0.1 ms) of the delays the SUT's own clock saw
(TPOT = (latency - TTFT) / 10), and at least the delays asked for. SingleStream: queries
never overlap.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from harness.datasets.prompts import Prompts
from harness.loadgen.conf import official_mlperf_conf
from harness.loadgen.gensut import GenerativeSUT, PromptStore
from harness.loadgen.timed import TestPlan, load_settings, run_timed_test
from harness.records.layout import DETAIL_LOG
from harness.records.loadgen_log import parse_detail_log, samples_per_second, token_figures

pytestmark = pytest.mark.slow

PREFILL_S, PER_TOKEN_S, TOKENS = 0.020, 0.005, 11


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


class _Delayed:
    def __init__(self, count: int) -> None:
        self.count, self.tokens = count, []  # type: list[int]

    def step(self) -> int:
        _spin(PER_TOKEN_S if self.tokens else PREFILL_S)
        self.tokens.append(7)
        return 7

    @property
    def done(self) -> bool:
        return len(self.tokens) >= self.count

    def first(self) -> int:
        return self.step()

    def finish(self, stopped: Callable[[], bool]) -> bool:
        while not self.done:
            if stopped():
                return False
            self.step()
        return True

    def output(self) -> np.ndarray:
        return np.asarray(self.tokens, dtype=np.int32)


class _Generator:
    def start(self, prompt: np.ndarray, *, max_new_tokens: int, min_new_tokens: int) -> _Delayed:
        del prompt, min_new_tokens
        return _Delayed(max_new_tokens)


def test_loadgen_reads_back_the_known_ttft_and_tpot(tmp_path: Path) -> None:
    prompts = Prompts(
        ids=tuple(np.arange(4, dtype=np.int32) for _ in range(16)),
        budgets=(TOKENS,) * 16,
        description="fixed",
    )
    (tmp_path / "mlperf.conf").write_text(official_mlperf_conf())
    (tmp_path / "user.conf").write_text(
        "delays.SingleStream.use_token_latencies = 1\n"
        "delays.SingleStream.target_latency = 70\n"
        "delays.SingleStream.min_duration = 2000\n"
        "delays.SingleStream.min_query_count = 20\n"
        "delays.SingleStream.performance_sample_count_override = 16\n"
    )
    plan = TestPlan(
        scenario="SingleStream",
        mode="performance",
        model_key="delays",
        mlperf_conf=tmp_path / "mlperf.conf",
        user_conf=tmp_path / "user.conf",
        out_dir=tmp_path,
        total_sample_count=16,
    )
    store = PromptStore(prompts)
    sut = GenerativeSUT(_Generator(), store, scenario="SingleStream", hold_eos=True)
    run_timed_test(plan, load_settings(plan), sut, store)
    assert sut.error is None and sut.completed >= 20
    log = parse_detail_log(tmp_path / DETAIL_LOG)
    figures = token_figures(log)
    assert figures is not None and figures.ttft_ns is not None and figures.tpot_ns is not None
    times = sut.tokens
    ttft = np.asarray(times.first_ns) - np.asarray(times.issue_ns)
    tpot = (np.asarray(times.end_ns) - np.asarray(times.first_ns)) / (TOKENS - 1)
    assert figures.ttft_ns["p50"] == pytest.approx(np.median(ttft), rel=0.02, abs=1e5)
    assert figures.tpot_ns["p50"] == pytest.approx(np.median(tpot), rel=0.02, abs=1e5)
    assert figures.ttft_ns["p50"] >= PREFILL_S * 1e9 and figures.tpot_ns["p50"] >= PER_TOKEN_S * 1e9
    query_s = np.mean(np.asarray(times.end_ns) - np.asarray(times.issue_ns)) / 1e9
    assert figures.tokens_per_second == pytest.approx(TOKENS / query_s, rel=0.05)
    rate = samples_per_second(log)
    assert rate is not None and figures.tokens_per_second / rate == pytest.approx(TOKENS, rel=0.02)
    assert sut.tokens.tokens == [TOKENS] * sut.completed
