"""Accuracy scoring: real LoadGen accuracy logs, exact agreement metrics, labels, errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

from harness.analysis.accuracy import (
    agreement,
    closed_division_check,
    decode_outputs,
    label_accuracy,
    load_accuracy,
    read_accuracy_log,
    render_accuracy,
    score_accuracy,
    scored_label_offset,
    verdict,
    write_accuracy_block,
    write_accuracy_txt,
)
from harness.analysis.labels import labels_by_index, load_labels
from harness.errors import ConfigError, ResultError
from harness.models.zoo import build_tiny
from harness.records.accuracy import ClosedDivision, Fp32Agreement
from tests.fixtures.accuracy.make_fixtures import (
    reference_outputs,
    run_accuracy_only,
    tiny_inputs,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "accuracy"
LOGITS = (np.dtype(np.float32), (10,))


def _log_outputs(name: str) -> dict[int, np.ndarray]:
    entries = read_accuracy_log(FIXTURES / name / "mlperf_log_accuracy.json")
    return decode_outputs(entries, dtype=LOGITS[0], shape=LOGITS[1])


@pytest.fixture(scope="module")
def reference() -> dict[int, np.ndarray]:
    return dict(enumerate(np.load(FIXTURES / "reference_fp32.npy")))


@pytest.fixture(scope="module")
def labels() -> dict[int, int]:
    return labels_by_index(load_labels(FIXTURES / "labels", count=32))


@pytest.fixture(scope="module")
def expected() -> dict[str, dict[str, float]]:
    data: dict[str, dict[str, float]] = json.loads((FIXTURES / "expected.json").read_text())
    return data


# --- real LoadGen accuracy logs ------------------------------------------------------------


def test_log_holds_every_sample_once() -> None:
    entries = read_accuracy_log(FIXTURES / "tiny-fp32" / "mlperf_log_accuracy.json")
    assert sorted(i for i, _ in entries) == list(range(32))
    assert {len(data) for _, data in entries} == {40}


def test_fp32_log_matches_the_reference_exactly(reference: dict[int, np.ndarray]) -> None:
    outputs = _log_outputs("tiny-fp32")
    for index, array in outputs.items():
        np.testing.assert_array_equal(array, reference[index])
    assert agreement(outputs, reference, kind="classifier") == Fp32Agreement(
        kind="classifier",
        count=32,
        top1_agreement=1.0,
        max_abs_error=0.0,
        mean_abs_error=0.0,
        cosine_similarity=1.0,
        min_cosine_similarity=1.0,
    )


@pytest.mark.parametrize("name", ["tiny-fp32", "tiny-int8"])
def test_scores_match_the_generator(
    name: str,
    reference: dict[int, np.ndarray],
    labels: dict[int, int],
    expected: dict[str, dict[str, float]],
) -> None:
    outputs = _log_outputs(name)
    want = expected[name]
    scores = agreement(outputs, reference, kind="classifier")
    assert scores.top1_agreement == want["top1_agreement"]
    for key in ("max_abs_error", "mean_abs_error", "cosine_similarity"):
        assert getattr(scores, key) == pytest.approx(want[key], rel=1e-12, abs=1e-15), key
    by_label = label_accuracy(outputs, labels)
    assert (by_label["top1"], by_label["top5"]) == (want["top1"], want["top5"])


def test_int8_log_block_and_text(
    reference: dict[int, np.ndarray], labels: dict[int, int], tmp_path: Path
) -> None:
    block = score_accuracy(
        _log_outputs("tiny-int8"), reference, kind="classifier", described_as="FP32", labels=labels
    )
    assert block.against_labels is not None
    check = block.against_labels.closed_division
    assert block.samples == 32
    assert (block.against_labels.fp32_top1, block.against_labels.fp32_top5) == (0.75, 0.875)
    # The input-dependent tiny model (generator 2): INT8 changes 3 of 32 answers, 1 of them
    # a labelled one, so it misses MLPerf's closed-division target.
    assert check == ClosedDivision(
        accuracy=0.71875, reference=0.75, fraction=0.99, target=0.99 * 0.75, passed=False
    )
    assert (block.passed, block.criterion, block.not_measurable) == (
        False,
        "top-1 >= 99 % of FP32 (MLPerf closed division)",
        None,
    )
    assert block.verdict == "FAILED"
    write_accuracy_txt(block, tmp_path / "accuracy.txt")
    text = (tmp_path / "accuracy.txt").read_text()
    assert "top-1 agreement       90.62 %" in text
    assert "top5                  87.50 %  (FP32 87.50 %)" in text
    assert "target 74.25 % (99 % of 75.00 %): FAIL" in text
    assert "NOT MEASURABLE" not in text


def test_render_without_labels(reference: dict[int, np.ndarray]) -> None:
    block = score_accuracy(_log_outputs("tiny-fp32"), reference, kind="tensor", described_as="FP32")
    assert render_accuracy(block) == (
        "accuracy over 32 samples (LoadGen AccuracyOnly)\n"
        "\n"
        "against the FP32 reference (same model, same inputs):\n"
        "  max abs error         0\n"
        "  mean abs error        0\n"
        "  cosine similarity     1\n"
        "  min cosine similarity 1\n"
        "\n"
        "against labels: no labelled dataset given\n"
    )


def test_live_accuracy_run_agrees_with_itself(tmp_path: Path) -> None:
    model = tmp_path / "tiny.onnx"
    onnx.save(build_tiny(0), str(model))
    inputs = tiny_inputs(16, seed=5)
    log = run_accuracy_only(model, inputs, tmp_path)
    outputs = decode_outputs(read_accuracy_log(log), dtype=LOGITS[0], shape=LOGITS[1])
    reference = dict(enumerate(reference_outputs(model, inputs)))
    scores = agreement(outputs, reference, kind="classifier")
    assert scores.count == 16
    assert scores.top1_agreement == 1.0
    assert scores.max_abs_error == 0.0 and scores.mean_abs_error == 0.0
    assert scores.cosine_similarity == 1.0 and scores.min_cosine_similarity == 1.0


# --- agreement on constructed outputs ------------------------------------------------------


def _as_map(rows: list[list[float]]) -> dict[int, np.ndarray]:
    return {i: np.array(row, np.float32) for i, row in enumerate(rows)}


def test_top1_agreement_two_of_four_disagree() -> None:
    outputs = _as_map([[0, 1, 0], [1, 0, 0], [0, 0, 1], [0, 1, 0]])
    reference = _as_map([[0, 1, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0]])
    scores = agreement(outputs, reference, kind="classifier")
    assert scores.top1_agreement == 0.5 and scores.count == 4


def test_tensor_metrics_exact() -> None:
    outputs = _as_map([[1, 0], [0, 1], [-1, 0], [3, 4]])
    reference = _as_map([[1, 0], [1, 0], [1, 0], [5, 0]])
    scores = agreement(outputs, reference, kind="tensor")
    # cosines 1, 0, -1, 15/25; |differences| sum to 0 + 2 + 2 + 6 = 10 over 8 elements.
    assert (scores.kind, scores.count, scores.top1_agreement) == ("tensor", 4, None)
    assert (scores.max_abs_error, scores.mean_abs_error) == (4.0, 1.25)
    assert scores.cosine_similarity == pytest.approx(0.15, abs=1e-15)
    assert scores.min_cosine_similarity == -1.0


def test_cosine_of_zero_vectors() -> None:
    scores = agreement(_as_map([[0, 0], [0, 0]]), _as_map([[0, 0], [1, 0]]), kind="tensor")
    assert scores.cosine_similarity == 0.5 and scores.min_cosine_similarity == 0.0


def test_class_index_outputs_get_top1_only() -> None:
    outputs = {i: np.array(v, np.int64) for i, v in enumerate([5, 7, 9])}
    reference = {i: np.array(v, np.int64) for i, v in enumerate([5, 7, 1])}
    assert agreement(outputs, reference, kind="classifier") == Fp32Agreement(
        kind="classifier",
        count=3,
        top1_agreement=2 / 3,
        max_abs_error=None,
        mean_abs_error=None,
        cosine_similarity=None,
        min_cosine_similarity=None,
    )
    got = label_accuracy(outputs, {0: 4, 1: 6, 2: 0}, label_offset=1)
    assert got == {"count": 3, "label_offset": 1, "top1": 2 / 3, "top5": None}


def test_missing_reference_or_outputs() -> None:
    with pytest.raises(ResultError, match="1 samples have no reference output"):
        agreement(_as_map([[1], [2]]), {0: np.ones(1)}, kind="tensor")
    with pytest.raises(ResultError, match="no outputs"):
        agreement({}, {}, kind="tensor")
    with pytest.raises(ConfigError, match="accuracy kind"):
        agreement(_as_map([[1]]), _as_map([[1]]), kind="detector")


# --- labels --------------------------------------------------------------------------------


def test_label_accuracy_with_offset_and_large_k() -> None:
    # 1001 scores per sample as MLPerf ResNet-50: class 0 is background.
    scores = np.zeros((2, 1001), np.float32)
    scores[0, 1] = 3.0  # predicts label 0
    scores[1, [10, 20, 30]] = [1.0, 3.0, 2.0]  # predicts 19, then 29, then 9
    outputs = dict(enumerate(scores))
    got = label_accuracy(outputs, {0: 0, 1: 9}, top_k=(1, 3, 5000), label_offset=1)
    assert got == {"count": 2, "label_offset": 1, "top1": 0.5, "top3": 1.0, "top5000": None}


def test_label_missing_for_a_sample() -> None:
    with pytest.raises(ConfigError, match="1 samples have no label"):
        label_accuracy(_as_map([[1, 0], [0, 1]]), {0: 0})


@pytest.mark.parametrize(("accuracy", "passed"), [(0.7425, True), (0.7424, False), (0.76, True)])
def test_closed_division_check(accuracy: float, passed: bool) -> None:
    check = closed_division_check(accuracy, 0.75)
    assert check.target == 0.99 * 0.75 and check.passed is passed


def test_the_verdict_without_labels_is_fp32_agreement_or_cosine() -> None:
    classifier = agreement(_as_map([[0, 1], [1, 0]]), _as_map([[0, 1], [0, 1]]), kind="classifier")
    assert verdict(classifier, None) == (False, "top-1 agreement with FP32 >= 99% (no labels)")
    tensor = agreement(_as_map([[1, 0]]), _as_map([[1, 0]]), kind="tensor")
    assert verdict(tensor, None) == (True, "mean cosine similarity with FP32 >= 0.99 (no labels)")


def test_the_score_written_reads_back_as_its_record(
    reference: dict[int, np.ndarray], labels: dict[int, int], tmp_path: Path
) -> None:
    scored = score_accuracy(
        _log_outputs("tiny-int8"), reference, kind="classifier", described_as="FP32", labels=labels
    )
    write_accuracy_block(scored, tmp_path)
    assert load_accuracy(tmp_path) == scored
    assert scored_label_offset(tmp_path) == 0
    data = json.loads((tmp_path / "accuracy.json").read_text())
    assert list(data) == [
        "samples",
        "against_fp32",
        "against_labels",
        "passed",
        "criterion",
        "reference",
        "not_measurable",
        "tokens",  # a generative model's scores against FP32 (schema 10); null here
    ]
    assert data["tokens"] is None
    assert (tmp_path / "accuracy.txt").read_text() == render_accuracy(scored)
    unlabelled = score_accuracy(
        _log_outputs("tiny-fp32"), reference, kind="tensor", described_as="FP32"
    )
    write_accuracy_block(unlabelled, tmp_path)
    assert scored_label_offset(tmp_path) is None
    assert (
        json.loads((tmp_path / "accuracy.json").read_text())["against_fp32"]["top1_agreement"]
        is None
    )


def test_imagenet_val_map_keeps_file_order() -> None:
    labels = load_labels(FIXTURES / "imagenet")
    assert list(labels.items())[:2] == [
        ("ILSVRC2012_val_00000001.JPEG", 65),
        ("ILSVRC2012_val_00000002.JPEG", 970),
    ]
    assert labels_by_index(labels) == {0: 65, 1: 970, 2: 230, 3: 809}


def test_labels_npy(tmp_path: Path) -> None:
    np.save(tmp_path / "labels.npy", np.array([3, 1, 2]))
    assert load_labels(tmp_path) == {"0": 3, "1": 1, "2": 2}


def test_directory_without_labels_names_the_files(tmp_path: Path) -> None:
    (tmp_path / "input.npy").write_bytes(b"")
    with pytest.raises(ConfigError, match=r"no labels; expected val_map\.txt .* labels\.txt"):
        load_labels(tmp_path)


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("val_map.txt", "a.JPEG 1\n\nb.JPEG x\n", r"val_map\.txt:3: expected '<file> <label>'"),
        ("labels.txt", "1\ntwo\n", r"labels\.txt:2: expected one integer label"),
        ("labels.npy", "not npy", r"labels\.npy: not a readable \.npy array"),
    ],
)
def test_malformed_labels(tmp_path: Path, name: str, text: str, message: str) -> None:
    (tmp_path / name).write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_labels(tmp_path)


def test_label_count_must_match_the_data() -> None:
    with pytest.raises(ConfigError, match="holds 4 labels, the data has 5"):
        load_labels(FIXTURES / "imagenet", count=5)


# --- malformed logs ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "cannot read the accuracy log"),
        ("[{", "not JSON"),
        ('{"qsl_idx": 0}', "expected a JSON list"),
        ('[{"qsl_idx": 0, "data": "zz"}]', "malformed entry"),
        ('[{"seq_id": 0}]', "malformed entry"),
    ],
)
def test_unreadable_logs(tmp_path: Path, text: str | None, message: str) -> None:
    path = tmp_path / "mlperf_log_accuracy.json"
    if text is not None:
        path.write_text(text)
    with pytest.raises(ResultError, match=message):
        read_accuracy_log(path)


def test_response_of_the_wrong_size() -> None:
    entries: list[tuple[int, bytes]] = [(0, b"\x00" * 40), (1, b"")]
    with pytest.raises(ResultError, match="sample 1 holds 0 bytes, expected 40"):
        decode_outputs(entries, dtype=np.dtype(np.float32), shape=(10,))


def test_duplicate_samples_keep_the_first() -> None:
    one, two = np.float32(1).tobytes(), np.float32(2).tobytes()
    got: dict[int, Any] = decode_outputs(
        [(0, one), (0, two)], dtype=np.dtype(np.float32), shape=(1,)
    )
    assert got[0].tolist() == [1.0]
