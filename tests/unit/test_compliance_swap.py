"""The SWAP audit's judgement: answers of the data now behind each index, or of its old data."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.compliance.swap import (
    MIN_INFORMATIVE,
    SwappedSource,
    check_swap,
    read_swap_verdict,
    render_swap,
    write_swap_verdict,
)
from harness.datasets.samples import SyntheticSource
from harness.errors import ResultError

COUNT = 32


@dataclass(frozen=True)
class _Spec:
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype[Any]


def _reference(classes: int = 10) -> dict[int, np.ndarray]:
    """One score vector per sample whose top class is index % classes."""
    return {i: np.eye(classes, dtype=np.float32)[i % classes] for i in range(COUNT)}


def _shown() -> dict[int, int]:
    order = list(range(COUNT))
    return dict(zip(order, order[1:] + order[:1], strict=True))


def test_the_source_rotates_each_load_so_every_index_gets_other_data() -> None:
    spec = _Spec(name="x", shape=(1, 4), dtype=np.dtype(np.float32))
    inner = SyntheticSource([spec], total_count=8, seed=3)
    plain = {"x": np.empty((3, 4), dtype=np.float32)}
    inner.fill([5, 1, 7], plain)
    swapped_source = SwappedSource(inner)
    swapped = {"x": np.empty((3, 4), dtype=np.float32)}
    swapped_source.fill([5, 1, 7], swapped)
    assert swapped_source.shown == {5: 1, 1: 7, 7: 5}
    np.testing.assert_array_equal(swapped["x"], plain["x"][[1, 2, 0]])


def test_an_honest_sut_answers_the_current_data() -> None:
    reference, shown = _reference(), _shown()
    responses = {i: reference[shown[i]] for i in range(COUNT)}
    check = check_swap(responses, reference, shown, kind="classifier")
    assert check.passed is True and check.current == check.informative == COUNT
    assert check.lines[-1] == "TEST PASS"


def test_a_cache_answers_the_old_data_and_fails() -> None:
    reference, shown = _reference(), _shown()
    check = check_swap(dict(reference), reference, shown, kind="classifier")
    assert check.passed is False and check.stale == COUNT and check.current == 0
    assert "a cache keyed by sample index" in check.summary and check.lines[-1] == "TEST FAIL"


def test_one_answer_for_every_query_fails() -> None:
    reference, shown = _reference(), _shown()
    responses = dict.fromkeys(range(COUNT), reference[0])
    check = check_swap(responses, reference, shown, kind="classifier")
    assert check.passed is False and "do not follow its input" in check.summary


def test_class_index_outputs_and_tensors_are_judged_too() -> None:
    shown = _shown()
    indices = {i: np.array([i % 7], dtype=np.int64) for i in range(COUNT)}
    stale = check_swap(dict(indices), indices, shown, kind="classifier")
    assert stale.passed is False and stale.stale == COUNT
    rng = np.random.default_rng(0)
    tensors = {i: rng.standard_normal(16).astype(np.float32) for i in range(COUNT)}
    honest = {i: tensors[shown[i]] + 1e-4 for i in range(COUNT)}
    assert check_swap(honest, tensors, shown, kind="tensor").passed is True
    assert check_swap(dict(tensors), tensors, shown, kind="tensor").passed is False


def test_a_model_answering_one_class_for_every_input_is_not_measurable(tmp_path: Path) -> None:
    # today's synthetic zoo models: the swap changes no answer, so nothing can be judged
    reference = {i: np.array([0.1, 0.9, 0.0], dtype=np.float32) for i in range(COUNT)}
    check = check_swap(dict(reference), reference, _shown(), kind="classifier")
    assert check.passed is None and check.informative == 0 < MIN_INFORMATIVE
    assert check.summary.startswith("NOT MEASURABLE: only 0 of 32 swapped samples change")
    assert check.lines[-1] == "TEST FAIL"  # never a pass it did not earn
    write_swap_verdict(check, tmp_path)
    verdict = read_swap_verdict(tmp_path)
    assert verdict.passed is None
    assert json.loads((tmp_path / "verdict.json").read_text())["passed"] is False
    assert render_swap(verdict).startswith("compliance SWAP: NOT MEASURABLE\n  NOT MEASURABLE")


def test_a_verdict_of_another_test_is_refused(tmp_path: Path) -> None:
    (tmp_path / "verdict.json").write_text(json.dumps({"schema_version": 1, "test": "TEST01"}))
    with pytest.raises(ResultError, match="not a SWAP audit's verdict"):
        read_swap_verdict(tmp_path)


def test_a_swap_job_reads_back_and_an_older_job_file_still_reads(tmp_path: Path) -> None:
    from harness.config import load_scenario
    from harness.records.job import JOB_SCHEMA_VERSION, Job, job_to_dict, read_job, write_job
    from harness.records.request import RunRequest
    from tests.conftest import TINY_SS, write_scenario

    scenario = load_scenario(write_scenario(tmp_path / "s.yaml", TINY_SS))
    request = RunRequest(scenario=scenario, scenario_path=None, profile="quick", hw="cpu")
    job = Job(request=request, test="SWAP", run_dir=tmp_path / "run")
    assert read_job(write_job(job, tmp_path / "job.json")) == job
    assert JOB_SCHEMA_VERSION == 4
    older = {**job_to_dict(job), "test": "TEST04", "schema_version": 2}
    (tmp_path / "old.json").write_text(json.dumps(older))
    assert read_job(tmp_path / "old.json").test == "TEST04"
