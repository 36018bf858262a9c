"""Generative accuracy against FP32: token agreement, first divergence, ROUGE-L, the verdict.

The gate's cheat here is a SUT that answers fixed tokens whatever the prompt: its agreement
with the FP32 model's greedy tokens falls far below the threshold and the verdict fails.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from harness.analysis.genaccuracy import (
    AGREEMENT_THRESHOLD,
    REFERENCE_ITSELF,
    first_divergence,
    generative_accuracy,
    lcs_length,
    logged_tokens,
    rouge_l,
    token_agreement,
)
from harness.errors import ResultError
from harness.records.accuracy import Accuracy
from harness.records.codec import from_data, to_object


def test_lcs_and_rouge_l_by_hand() -> None:
    assert lcs_length([1, 2, 3, 4], [2, 4]) == 2
    assert lcs_length([1, 2, 3], [3, 2, 1]) == 1
    assert lcs_length([], [1]) == 0
    # LCS 3 of candidate 4 and reference 5: P 0.75, R 0.6, F1 2PR/(P+R)
    assert rouge_l([1, 2, 3, 9], [1, 2, 7, 3, 8]) == pytest.approx(2 * 0.75 * 0.6 / 1.35)
    assert rouge_l([5, 6], [5, 6]) == 1.0
    assert rouge_l([1], [2]) == 0.0


def test_first_divergence_counts_up_to_the_shorter_output() -> None:
    assert first_divergence([1, 2, 3], [1, 2, 4]) == 2
    assert first_divergence([1, 2], [1, 2, 3]) == 2  # never diverged: the compared length
    assert first_divergence([9], [1]) == 0


def test_agreement_is_over_positions_up_to_the_shorter_output() -> None:
    result = token_agreement([[1, 2, 3, 4], [5, 6]], [[1, 2, 0, 4, 7], [5, 0, 0]])
    # 4 + 2 positions compared; equal at 0, 1, 3 and 0
    assert result.positions == 6
    assert result.agreement == pytest.approx(4 / 6, abs=1e-6)
    assert result.first_divergence == (2, 1)
    assert result.median_first_divergence == 1.5
    assert result.threshold == AGREEMENT_THRESHOLD


def test_identical_outputs_pass_and_fixed_tokens_fail() -> None:
    rng = np.random.default_rng(3)
    fp32 = [rng.integers(0, 512, size=24).tolist() for _ in range(12)]
    honest = generative_accuracy(token_agreement([list(t) for t in fp32], fp32))
    assert honest.passed and honest.verdict == "passed"
    assert honest.tokens is not None and honest.tokens.agreement == 1.0
    # the cheat: the same tokens whatever the prompt
    fixed = [[7] * 24 for _ in fp32]
    cheat = generative_accuracy(token_agreement(fixed, fp32))
    assert cheat.tokens is not None and cheat.tokens.agreement < 0.05
    assert not cheat.passed and cheat.verdict == "FAILED"
    assert cheat.tokens.rouge_l < 0.1


def test_a_late_divergence_passes_an_early_one_fails() -> None:
    fp32 = [list(range(100, 140)) for _ in range(8)]
    late = [[*t[:38], 0, 0] for t in fp32]  # the last two positions differ
    early = [t[:2] + [0] * 38 for t in fp32]
    assert generative_accuracy(token_agreement(late, fp32)).passed
    assert not generative_accuracy(token_agreement(early, fp32)).passed


def test_fp32_is_the_reference_itself_and_round_trips() -> None:
    block = generative_accuracy(None)
    assert block.not_measurable == REFERENCE_ITSELF and block.verdict == "NOT MEASURABLE"
    assert block.tokens is None
    scored = generative_accuracy(token_agreement([[1, 2]], [[1, 3]]))
    assert from_data(Accuracy, to_object(scored)) == scored
    assert from_data(Accuracy, to_object(block)) == block


def test_mismatched_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="1 outputs against 2"):
        token_agreement([[1]], [[1], [2]])


def test_a_schema_9_result_reads_with_no_token_scores() -> None:
    from harness.results.migrate import migrate_9_to_10, upgrade

    v9 = {"schema_version": 9, "accuracy": {"samples": 0, "passed": False}}
    v10 = upgrade(v9, 9, 10)
    assert v10["schema_version"] == 10 and v10["accuracy"] == {
        "samples": 0,
        "passed": False,
        "tokens": None,
    }
    assert "tokens" not in v9["accuracy"]  # the step copies; its input is untouched
    assert migrate_9_to_10({"schema_version": 9, "accuracy": None})["accuracy"] is None


def _log(tmp_path: Path, entries: object) -> Path:
    path = tmp_path / "mlperf_log_accuracy.json"
    path.write_text(json.dumps(entries))
    return path


def test_logged_tokens_are_the_int32_ids_loadgen_logged(tmp_path: Path) -> None:
    ids = np.asarray([5, 300, 49151], dtype="<i4")
    path = _log(
        tmp_path,
        [
            {"seq_id": 0, "qsl_idx": 1, "data": ids.tobytes().hex().upper(), "token_count": 3},
            {"seq_id": 1, "qsl_idx": 0, "data": "07000000"},
            {"seq_id": 2, "qsl_idx": 1, "data": "08000000"},  # logged again: the first stays
        ],
    )
    assert logged_tokens(path) == {1: [5, 300, 49151], 0: [7]}


@pytest.mark.parametrize(
    ("entries", "says"),
    [
        ({"qsl_idx": 0}, "JSON list"),
        ([{"qsl_idx": -1, "data": "07000000"}], "qsl_idx -1"),
        ([{"qsl_idx": True, "data": "07000000"}], "qsl_idx True"),
        ([{"data": "07000000"}], "qsl_idx None"),
        ([{"qsl_idx": 0, "data": "070000"}], "whole int32"),  # 3 bytes: no whole id
        ([{"qsl_idx": 0, "data": "zz000000"}], "whole int32"),
        ([{"qsl_idx": 0, "data": 7}], "whole int32"),
        (["07000000"], "qsl_idx None"),
    ],
)
def test_a_hostile_accuracy_log_is_refused_naming_the_entry(
    tmp_path: Path, entries: object, says: str
) -> None:
    with pytest.raises(ResultError, match=says):
        logged_tokens(_log(tmp_path, entries))


def test_an_oversized_or_non_json_accuracy_log_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "mlperf_log_accuracy.json"
    path.write_text('[{"qsl_idx": 0, "data": NaN}]')
    with pytest.raises(ResultError, match=r"mlperf_log_accuracy\.json"):
        logged_tokens(path)
    with path.open("wb") as handle:
        handle.truncate(65 * 1024 * 1024)  # sparse: larger than MAX_LOG_BYTES
    with pytest.raises(ResultError):
        logged_tokens(path)
