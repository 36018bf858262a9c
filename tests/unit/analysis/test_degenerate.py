"""The degenerate-reference gate: a reference that answers alike for every input judges nothing.

Real onnxruntime sessions on the zoo's tiny model: generator version 1 (one class for every
input) and version 2 (input-dependent), fed an honest SUT's outputs and a cheat's (the model
run once, that output returned for every sample).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from harness.analysis.accuracy import render_accuracy, score_accuracy
from harness.analysis.degenerate import MAX_CLASS_SHARE, degenerate_reference
from harness.datasets.samples import SyntheticSource
from harness.models.zoo import ZOO
from harness.report.summary import render_summary
from harness.results.runfile import load_result
from harness.runtime.session import TensorSpec

SAMPLES = 64
RESULT = Path(__file__).resolve().parents[2] / "fixtures" / "results" / "tiny-singlestream"


def _rows(*classes: int, width: int = 4) -> dict[int, np.ndarray]:
    """One-hot-ish scores whose top-1 is each given class."""
    out = {}
    for i, c in enumerate(classes):
        row = np.linspace(0.0, 0.1, width, dtype=np.float32) + i * 1e-3
        row[c] = 1.0
        out[i] = row
    return out


def test_one_class_over_half_the_answers_is_degenerate() -> None:
    reason = degenerate_reference(_rows(2, 2, 2, 1), kind="classifier")
    assert reason is not None
    assert reason.startswith(
        "the FP32 reference answers class 2 for 3 of 4 samples (more than 50%)"
    )


def test_exactly_half_is_still_measurable() -> None:
    assert MAX_CLASS_SHARE == 0.5
    assert degenerate_reference(_rows(2, 2, 1, 0), kind="classifier") is None


def test_class_index_outputs_are_counted_too() -> None:
    indices = {i: np.array([v], np.int64) for i, v in enumerate([593, 593, 7])}
    reason = degenerate_reference(indices, kind="classifier")
    assert reason is not None and "class 593 for 2 of 3 samples" in reason
    varied = {i: np.array([v], np.int64) for i, v in enumerate([593, 8, 7])}
    assert degenerate_reference(varied, kind="classifier") is None


def test_identical_tensor_outputs_are_degenerate_and_varied_ones_are_not() -> None:
    same = {i: np.arange(6, dtype=np.float32) for i in range(5)}
    reason = degenerate_reference(same, kind="tensor")
    assert reason is not None and "gives one output for all 5 samples" in reason
    varied = {i: np.arange(6, dtype=np.float32) * (i + 1) for i in range(5)}
    assert degenerate_reference(varied, kind="tensor") is None


def _tiny_outputs(generator: int) -> dict[int, np.ndarray]:
    """The tiny model's FP32 logits for the harness's seeded synthetic samples 0..63."""
    model = ZOO["tiny"].build(0, generator).SerializeToString()
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    spec = TensorSpec(name="input", dtype=np.dtype(np.float32), shape=(1, 3, 32, 32))
    source = SyntheticSource([spec], total_count=SAMPLES, seed=0)
    feed = {"input": np.empty(spec.shape, np.float32)}
    outputs = {}
    for index in range(SAMPLES):
        source.fill([index], feed)
        outputs[index] = session.run(None, feed)[0][0].copy()
    return outputs


def _answer_once(reference: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
    """The cheat: the model's output for the first sample, returned for every sample."""
    return dict.fromkeys(reference, reference[0])


@pytest.mark.parametrize("honest", [True, False], ids=["honest", "answer-once"])
def test_a_degenerate_reference_is_not_measurable_for_any_sut(honest: bool) -> None:
    reference = _tiny_outputs(generator=1)  # one class for every input
    outputs = reference if honest else _answer_once(reference)
    block = score_accuracy(outputs, reference, kind="classifier", described_as="FP32")
    assert block.against_fp32.top1_agreement == 1.0  # what used to pass
    assert not block.passed
    assert block.verdict == "NOT MEASURABLE"
    assert block.not_measurable is not None
    assert f"for {SAMPLES} of {SAMPLES} samples" in block.not_measurable
    assert render_accuracy(block).endswith(f"verdict: NOT MEASURABLE: {block.not_measurable}\n")


def test_an_input_dependent_reference_passes_the_honest_sut_and_fails_the_cheat() -> None:
    reference = _tiny_outputs(generator=2)
    honest = score_accuracy(reference, reference, kind="classifier", described_as="FP32")
    assert (honest.passed, honest.verdict, honest.not_measurable) == (True, "passed", None)
    cheat = score_accuracy(_answer_once(reference), reference, kind="classifier", described_as="")
    assert (cheat.passed, cheat.verdict, cheat.not_measurable) == (False, "FAILED", None)
    assert cheat.against_fp32.top1_agreement is not None
    assert cheat.against_fp32.top1_agreement < 0.5


def test_show_and_report_say_not_measurable_with_the_reason() -> None:
    result = load_result(RESULT)
    reason = "the FP32 reference answers class 593 for 1024 of 1024 samples (more than 50%)"
    block = dataclasses.replace(result.accuracy, passed=False, not_measurable=reason)
    line = next(
        text
        for text in render_summary(dataclasses.replace(result, accuracy=block)).splitlines()
        if text.strip().startswith("accuracy")
    )
    assert line.endswith(f"samples: NOT MEASURABLE ({reason})")
    assert "passed" not in line
