"""A query run whole (harness.runtime.genai.Sequence's first, finish, output) on llm-tiny.

The SUT's one-at-a-time path makes the first token, then the rest in one tight genai loop,
and reads the output once: the tokens must be those of the step-by-step path, the first
token the output's first, a stop asked for mid-query must end the loop at once, and the loop
cannot run before the prefill.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.datasets.prompts import Prompts
from harness.errors import RunError
from harness.loadgen.conf import official_mlperf_conf
from harness.loadgen.gensut import GenerativeSUT, PromptStore
from harness.loadgen.timed import TestPlan, load_settings, run_timed_test
from harness.models.llm.store import generative_model_dir

pytest.importorskip("onnxruntime_genai", reason="onnxruntime-genai is not installed (llm extra)")

from harness.runtime.genai import GenaiModel

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tiny(model_cache: Path) -> GenaiModel:
    return GenaiModel(generative_model_dir("llm-tiny", root=model_cache))


def _prompts() -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    return [rng.integers(3, 512, size=n).astype(np.int32) for n in (1, 9, 33)]


@pytest.mark.parametrize("hold_eos", [True, False])
def test_whole_runs_make_the_step_by_step_tokens(tiny: GenaiModel, hold_eos: bool) -> None:
    for prompt, budget in zip(_prompts(), (4, 17, 30), strict=True):
        least = budget if hold_eos else 2
        stepped = tiny.start(prompt, max_new_tokens=budget, min_new_tokens=least)
        while not stepped.done:
            stepped.step()
        whole = tiny.start(prompt, max_new_tokens=budget, min_new_tokens=least)
        first = whole.first()
        assert whole.finish(lambda: False) and whole.done
        out = whole.output()
        assert out.dtype == np.int32 and out.tolist() == stepped.tokens == whole.tokens
        assert first == out[0]
        if hold_eos:
            assert len(out) == budget


def test_a_stop_ends_the_loop_at_once(tiny: GenaiModel) -> None:
    sequence = tiny.start(_prompts()[1], max_new_tokens=20, min_new_tokens=20)
    sequence.first()
    asked = []

    def stopped() -> bool:
        asked.append(1)
        return len(asked) > 3  # three more tokens, then stop

    assert sequence.finish(stopped) is False
    assert not sequence.done and len(sequence.output()) == 1 + 3


def test_finish_before_first_is_a_run_error(tiny: GenaiModel) -> None:
    sequence = tiny.start(_prompts()[0], max_new_tokens=3, min_new_tokens=3)
    with pytest.raises(RunError, match=r"finish\(\) before first\(\)"):
        sequence.finish(lambda: False)
    assert sequence.output().tolist() == []


class _StopsAfter(GenerativeSUT):
    """Asks to stop (as Ctrl-C does) during the ``after``-th query, after its first token."""

    def __init__(self, *args: Any, after: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.after, self.firsts = after, 0

    def _first_token(self, response_id: int, token: int) -> None:
        super()._first_token(response_id, token)
        self.firsts += 1
        if self.firsts == self.after:
            self.request_stop(KeyboardInterrupt())


def _plan(tmp_path: Path, scenario: str) -> TestPlan:
    (tmp_path / "mlperf.conf").write_text(official_mlperf_conf())
    (tmp_path / "user.conf").write_text(
        f"stop.{scenario}.use_token_latencies = 1\n"
        f"stop.{scenario}.target_latency = 5\n"
        f"stop.{scenario}.target_qps = 500\n"
        f"stop.{scenario}.min_duration = 200\n"
        f"stop.{scenario}.min_query_count = 40\n"
        f"stop.{scenario}.performance_sample_count_override = 8\n"
    )
    return TestPlan(
        scenario="SingleStream" if scenario == "SingleStream" else "Offline",
        mode="performance",
        model_key="stop",
        mlperf_conf=tmp_path / "mlperf.conf",
        user_conf=tmp_path / "user.conf",
        out_dir=tmp_path,
        total_sample_count=8,
    )


def test_a_stop_mid_query_answers_it_and_the_rest_empty(tmp_path: Path, tiny: GenaiModel) -> None:
    """SingleStream under real LoadGen: the query stopped mid-way and all later ones complete
    with no tokens; the queries before it hold their whole budget."""
    prompts = Prompts(ids=tuple(_prompts()[1] for _ in range(8)), budgets=(12,) * 8, description="")
    store = PromptStore(prompts)
    sut = _StopsAfter(tiny, store, scenario="SingleStream", hold_eos=True, after=5)
    plan = _plan(tmp_path, "SingleStream")
    run_timed_test(plan, load_settings(plan), sut, store)
    assert isinstance(sut.error, KeyboardInterrupt)
    assert sut.tokens.tokens == [12] * 4  # the fifth stopped after its first token
    assert sut.completed >= 40 and sut.firsts == 5


def test_offline_one_at_a_time_stops_too(tmp_path: Path, tiny: GenaiModel) -> None:
    """Offline one at a time: after a stop, every query left completes with no tokens."""
    prompts = Prompts(ids=tuple(_prompts()[1] for _ in range(8)), budgets=(12,) * 8, description="")
    store = PromptStore(prompts)
    sut = GenerativeSUT(tiny, store, scenario="Offline", hold_eos=True)
    real = sut._report

    def report(query: Any, tokens: Any) -> None:
        real(query, tokens)
        if sut.completed == 3:
            sut.request_stop(KeyboardInterrupt())

    sut._report = report  # type: ignore[method-assign]
    plan = _plan(tmp_path, "Offline")
    run_timed_test(plan, load_settings(plan), sut, store)
    assert sut.tokens.tokens == [12] * 3 and sut.completed > 3
