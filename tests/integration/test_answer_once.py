"""An "answer once" SUT through the real accuracy test: LoadGen AccuracyOnly, onnxruntime, scoring.

The SUT runs the model for its first query and returns that output for every later one. The
accuracy test (harness.execution.runner.run_accuracy_test, in this process, with the executor
injected) must fail it on the zoo's input-dependent tiny model (generator 2), and must call
generator 1's reference, which answers one class for every input, not measurable: it would have
passed either SUT (#25).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

import harness.execution.runner as runner
from harness.analysis.accuracy import load_accuracy
from harness.config import load_scenario
from harness.records.accuracy import Accuracy
from harness.records.job import Job
from harness.records.layout import ACCURACY_DIR
from harness.records.request import RunRequest
from harness.runtime.executors import HostExecutor
from harness.runtime.session import Session
from harness.stopping import Phases
from tests.conftest import TINY_SS, write_scenario

pytestmark = pytest.mark.slow


class AnswerOnce(HostExecutor):
    """The cheat: the first query's output, returned for every query after it."""

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self._first: tuple[int, int] | None = None

    def run_single(self, row: int) -> tuple[int, int]:
        if self._first is None:
            self._first = super().run_single(row)  # the output array stays alive in _keep
        return self._first

    def run_batch(self, rows: Sequence[int]) -> tuple[int, int]:
        if self._first is None:
            self._first = super().run_batch(rows)
        return self._first


def _accuracy(
    tmp_path: Path, generator: int, cheat: bool, monkeypatch: pytest.MonkeyPatch
) -> Accuracy:
    if cheat:
        monkeypatch.setattr(runner, "executor_for", lambda session, **_: AnswerOnce(session))
    text = TINY_SS.replace("model: {zoo: tiny}", f"model: {{zoo: tiny, generator: {generator}}}")
    scenario = load_scenario(write_scenario(tmp_path / "s.yaml", text))
    request = RunRequest(scenario=scenario, scenario_path=None, profile="quick", hw="cpu")
    run_dir = tmp_path / "run" / ACCURACY_DIR
    run_dir.mkdir(parents=True)
    job = Job(request=request, test="accuracy", run_dir=run_dir)
    runner.run_accuracy_test(job, phases=Phases("accuracy", "start"))
    return load_accuracy(run_dir)


def test_the_answer_once_sut_fails_the_accuracy_test(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    block = _accuracy(tmp_path, generator=2, cheat=True, monkeypatch=monkeypatch)
    assert block.samples == 64
    assert (block.passed, block.verdict, block.not_measurable) == (False, "FAILED", None)
    assert block.against_fp32.top1_agreement is not None
    assert block.against_fp32.top1_agreement < 0.5


def test_the_honest_sut_passes_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    block = _accuracy(tmp_path, generator=2, cheat=False, monkeypatch=monkeypatch)
    assert (block.passed, block.verdict, block.against_fp32.top1_agreement) == (True, "passed", 1.0)


def test_generator_1_cannot_judge_the_cheat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    block = _accuracy(tmp_path, generator=1, cheat=True, monkeypatch=monkeypatch)
    assert block.against_fp32.top1_agreement == 1.0  # what passed before #25
    assert (block.passed, block.verdict) == (False, "NOT MEASURABLE")
    assert block.not_measurable is not None and "for 64 of 64 samples" in block.not_measurable
