"""One step of the CNN Server search, judged from a real LoadGen detail log."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from harness.config import load_scenario
from harness.execution.searchstep import SearchSteps
from harness.loadgen.timed import TestPlan
from harness.records.job import Job
from harness.records.layout import DETAIL_LOG
from harness.records.request import RunRequest
from tests.conftest import REPO, write_scenario

# A real Server confirmation's log: 500 queries, one over the bound, p99 within it.
ONE_OVER = REPO / "tests" / "fixtures" / "loadgen" / "server-confirm-one-over" / DETAIL_LOG
TINY_SERVER = """
name: tiny-server-step
scenario: Server
model: {zoo: tiny}
data: {total_sample_count: 64}
quick: {min_duration_ms: 1000, min_query_count: 100, performance_sample_count: 32}
server: {latency_bound_ms: 100}
"""


def _steps(tmp_path: Path, overs: int, *, as_confirmed: bool) -> tuple[SearchSteps, io.StringIO]:
    scenario = load_scenario(write_scenario(tmp_path / "s.yaml", TINY_SERVER))
    request = RunRequest(scenario=scenario, scenario_path=None, profile="quick", hw="cpu")
    job = Job(request=request, test="find_peak", run_dir=tmp_path / "peak-search")
    job.run_dir.mkdir()

    def launch(step: Job, plan: TestPlan) -> None:  # LoadGen's log of that tail, as if it ran
        del plan
        text = ONE_OVER.read_text()
        old = '"key": "result_overlatency_query_count", "value": 1,'
        assert old in text
        new = f'"key": "result_overlatency_query_count", "value": {overs},'
        (step.run_dir / DETAIL_LOG).write_text(text.replace(old, new))

    progress = io.StringIO()
    steps = SearchSteps(
        job,
        launch,
        latency_ns=1e6,
        total_samples=64,
        judged="the bound",
        name="peak search",
        progress=progress,
        as_confirmed=as_confirmed,
    )
    return steps, progress


def test_the_fixture_is_within_the_bound_at_p99() -> None:
    text = ONE_OVER.read_text()
    assert '"result_perf_constraints_met", "value": true' in text
    assert '"result_query_count", "value": 500' in text


@pytest.mark.parametrize(("overs", "passes"), [(0, True), (2, True), (3, False), (5, False)])
def test_a_step_fails_with_more_over_the_bound_than_a_confirmation_may_have(
    tmp_path: Path, overs: int, passes: bool
) -> None:
    # 500 queries: p99 holds with up to 5 over, a confirmation's 0.41 % allows 2.
    steps, progress = _steps(tmp_path, overs, as_confirmed=True)
    assert steps(12.5) is passes
    assert (tmp_path / "peak-search" / "step-1" / DETAIL_LOG).is_file()
    line = steps.steps[-1]
    assert line.startswith("12.500 QPS: within the bound")
    assert (f"{overs} of 500 queries over it" in line) is (not passes)
    assert progress.getvalue() == f"  peak search: {line}\n"


def test_the_generative_search_keeps_loadgens_p99_verdict(tmp_path: Path) -> None:
    steps, _ = _steps(tmp_path, 5, as_confirmed=False)
    assert steps(3.0) is True
    assert steps.steps == ["3.000 QPS: within the bound"]
