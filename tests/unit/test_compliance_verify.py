"""Compliance verification over written LoadGen logs: exact figures, MLPerf's words and files."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.compliance.accuracy import check_accuracy, compare
from harness.compliance.outcome import ComplianceRun, read_outcome, write_outcome
from harness.compliance.performance import check_performance
from harness.compliance.rules import AUDIT_SETTINGS
from harness.compliance.verify import compliance_passed, read_passed, render_verdict, verify
from harness.config import DataConfig
from harness.errors import ResultError
from harness.records.job import ComplianceTest
from harness.records.layout import VERDICT_FILE

# MLPerf's submission checker: verify_accuracy.txt passes on a line that is exactly TEST PASS,
# verify_performance.txt on any line containing it; accuracy files match this pattern.
CHECKER_ACC_PATTERN = r"^(?:\{\"accuracy|accuracy)[\": ]*=?\s*([\d\.]+).*"
AUDIT_WARNING = (
    "Found Audit Config file (audit.config). Overriding TestSettings from audit.config file."
)


def mllog(key: str, value: Any, *, warning: bool = False) -> str:
    meta = {"is_error": False, "is_warning": warning}
    return ":::MLLOG " + json.dumps({"key": key, "value": value, "metadata": meta})


def effective(test: ComplianceTest | None) -> dict[str, Any]:
    """The effective settings LoadGen logs, under `test`'s audit.config or none."""
    values: dict[str, Any] = {
        "effective_test_mode": "PerformanceOnly",
        "effective_accuracy_log_rng_seed": 0,
        "effective_accuracy_log_sampling_target": 0,
        "effective_performance_issue_unique": False,
        "effective_performance_issue_same": False,
        "effective_performance_issue_same_index": 0,
    }
    if test is not None:
        for key, value in AUDIT_SETTINGS[test].items():
            if key != "mode":
                values[f"effective_{key}"] = value
    return values


def detail_log(
    path: Path,
    *,
    scenario: str = "SingleStream",
    score: float,
    test: ComplianceTest | None = None,
    valid: bool = True,
    **extra: Any,
) -> Path:
    key = {
        "SingleStream": "early_stopping_latency_ss",
        "MultiStream": "early_stopping_latency_ms",
        "Offline": "result_samples_per_second",
        "Server": "result_completed_samples_per_sec",
    }[scenario]
    values = {"effective_scenario": scenario, **effective(test), key: score, **extra}
    values["result_validity"] = "VALID" if valid else "INVALID"
    lines = [mllog("warning_generic_message", AUDIT_WARNING, warning=True)] if test else []
    lines += [mllog(k, v) for k, v in values.items()]
    if not valid:
        lines.append(mllog("result_invalid_reason", "Reduce target QPS to improve latency. "))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def perf_check(tmp_path: Path, test: ComplianceTest, ref: float, got: float, **kw: Any) -> Any:
    scenario = kw.pop("scenario", "SingleStream")
    reference = detail_log(tmp_path / "run.txt", scenario=scenario, score=ref, **kw)
    compliance = detail_log(tmp_path / "t.txt", scenario=scenario, score=got, test=test)
    return check_performance(test, reference, compliance)


def verdict_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().startswith("TEST ")]


# ---- performance: TEST01 within 10 %, TEST04 at most 10 % faster ----


@pytest.mark.parametrize(
    ("got", "passed"),
    [(1_000_000, True), (1_099_000, True), (901_000, True), (1_101_000, False), (899_000, False)],
)
def test_test01_performance_must_be_within_ten_percent_either_way(
    tmp_path: Path, got: float, passed: bool
) -> None:
    check = perf_check(tmp_path, "TEST01", 1_000_000, got)
    assert check.passed is passed
    assert verdict_lines(check.text) == ["TEST PASS" if passed else "TEST FAIL"]
    assert "reference score = 1000000" in check.text
    assert f"test score = {got}" in check.text
    assert f"test / reference = {got / 1e6:.4f}; allowed 0.9000 to 1.1000" in check.text


@pytest.mark.parametrize(
    ("ref_qps", "got_qps", "passed"),
    [(1000.0, 1099.0, True), (1000.0, 500.0, True), (1000.0, 1100.0, False), (1000.0, 5e4, False)],
)
def test_test04_fails_only_a_run_more_than_ten_percent_faster(
    tmp_path: Path, ref_qps: float, got_qps: float, passed: bool
) -> None:
    check = perf_check(tmp_path, "TEST04", ref_qps, got_qps, scenario="Offline")
    assert check.passed is passed
    assert verdict_lines(check.text) == ["TEST PASS" if passed else "TEST FAIL"]
    assert f"test / reference = {got_qps / ref_qps:.4f}; allowed below 1.1000" in check.text


def test_test04_compares_singlestream_speed_as_the_inverse_latency(tmp_path: Path) -> None:
    check = perf_check(tmp_path, "TEST04", 1_000_000, 800_000)  # 25 % faster
    assert not check.passed
    assert "reference score = 1000" in check.text and "test score = 1250" in check.text
    assert "1e9 / early-stopping latency estimate (ns)" in check.text
    assert "fail: faster than the performance run allows" in check.summary


def test_latencies_under_0_2_ms_get_twenty_percent(tmp_path: Path) -> None:
    assert perf_check(tmp_path, "TEST01", 150_000, 170_000).passed  # +13 %
    assert not perf_check(tmp_path, "TEST01", 150_000, 185_000).passed  # +23 %
    assert not perf_check(tmp_path, "TEST01", 250_000, 283_000).passed  # +13 %, not relaxed


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [
        ({"valid": False}, "the performance run is INVALID per LoadGen: Reduce target QPS"),
        ({"effective_accuracy_log_sampling_target": 4096}, "ran under an audit.config"),
        ({"scenario": "Offline"}, "scenarios differ or are unknown: Offline vs SingleStream"),
    ],
)
def test_a_comparison_without_meaning_fails_and_says_why(
    tmp_path: Path, kwargs: dict[str, Any], problem: str
) -> None:
    scenario = kwargs.pop("scenario", "SingleStream")
    reference = detail_log(tmp_path / "run.txt", scenario=scenario, score=1e6, **kwargs)
    compliance = detail_log(tmp_path / "t.txt", score=1e6, test="TEST04")
    check = check_performance("TEST04", reference, compliance)
    assert not check.passed and problem in check.summary
    assert f"problem: {check.summary.removeprefix('performance: ')}" in check.text
    assert verdict_lines(check.text) == ["TEST FAIL"]


def test_a_compliance_run_without_its_audit_settings_fails(tmp_path: Path) -> None:
    reference = detail_log(tmp_path / "run.txt", score=1e6)
    plain = detail_log(tmp_path / "t.txt", score=1e6)  # LoadGen read no audit.config
    check = check_performance("TEST01", reference, plain)
    assert not check.passed
    assert check.summary == (
        "performance: LoadGen did not apply TEST01's audit.config: accuracy_log_rng_seed is 0, not "
        "720381539243781796; accuracy_log_sampling_target is 0, not 4096"
    )
    # TEST04's settings are not TEST01's
    other = detail_log(tmp_path / "t4.txt", score=1e6, test="TEST04")
    assert "did not apply TEST01's" in check_performance("TEST01", reference, other).summary


# ---- accuracy: TEST01's logged responses against the accuracy run's ----


def accuracy_log(path: Path, entries: list[tuple[int, bytes]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [
        {"seq_id": n, "qsl_idx": i, "data": d.hex().upper(), "size": len(d)}
        for n, (i, d) in enumerate(entries)
    ]
    path.write_text(json.dumps(rows))
    return path


def scores(*rows: list[float]) -> list[bytes]:
    return [np.asarray(r, dtype=np.float32).tobytes() for r in rows]


A, B, C = scores([0.1, 0.9, 0.0], [0.8, 0.1, 0.1], [0.2, 0.3, 0.5])
A2 = scores([0.1, 0.9000001, 0.0])[0]  # another rounding, the same class


def test_counts_follow_mlperfs_script() -> None:
    reference = [(0, A), (1, B), (1, B), (2, C), (2, A)]
    logged = [(0, A), (1, C), (7, A), (0, A), (2, b"")]
    counts = compare(reference, logged)
    assert counts.lines() == [
        "num_acc_log_entries = 5",
        "num_acc_log_duplicate_keys = 2",
        "num_acc_log_data_mismatch = 1",
        "num_perf_log_entries = 5",
        "num_perf_log_qsl_idx_match = 4",
        "num_perf_log_data_mismatch = 2",
        "num_missing_qsl_idxs = 1",
        "num_perf_log_empty = 1",
    ]


def outcome(kind: str = "classifier", dtype: str = "float32") -> ComplianceRun:
    return ComplianceRun(
        test="TEST01",
        cwd="/x",
        audit_config_sha256="0" * 64,
        response_dtype=dtype,
        output_kind=kind,
        completed_samples=10,
    )


def accuracy_dirs(
    tmp_path: Path, reference: list[tuple[int, bytes]], logged: list[tuple[int, bytes]]
) -> tuple[Path, Path]:
    run_dir, directory = tmp_path / "run", tmp_path / "run" / "compliance" / "TEST01"
    accuracy_log(run_dir / "accuracy" / "mlperf_log_accuracy.json", reference)
    (run_dir / "accuracy" / "accuracy.json").write_text(json.dumps({"against_labels": None}))
    accuracy_log(directory / "mlperf_log_accuracy.json", logged)
    return run_dir, directory


def test_identical_responses_pass(tmp_path: Path) -> None:
    run_dir, directory = accuracy_dirs(tmp_path, [(0, A), (1, B), (2, C)], [(1, B), (0, A), (1, B)])
    check = check_accuracy(run_dir, directory, outcome(), DataConfig())
    assert (
        check.passed
        and check.summary == "accuracy: all 3 logged responses equal the accuracy run's"
    )
    assert verdict_lines(check.text) == ["TEST PASS"]
    assert not (directory / "baseline_accuracy.txt").exists()  # no fallback needed


def test_equal_responses_of_an_accuracy_run_that_answers_one_class_are_not_measurable(
    tmp_path: Path,
) -> None:
    """The cheat: a SUT that runs once and answers alike logs responses equal to its own."""
    constant = [(i, A) for i in range(8)]
    run_dir, directory = accuracy_dirs(tmp_path, constant, constant)
    check = check_accuracy(run_dir, directory, outcome(), DataConfig())
    assert not check.passed and verdict_lines(check.text) == ["TEST FAIL"]
    assert check.summary.startswith(
        "accuracy: not measurable: the accuracy run answers class 1 for 8 of 8 samples"
    )
    tensors = [(i, A) for i in range(3)]
    run_dir, directory = accuracy_dirs(tmp_path / "t", tensors, tensors)
    check = check_accuracy(run_dir, directory, outcome(kind="tensor"), DataConfig())
    assert not check.passed
    assert "the accuracy run gives one output for all 3 samples" in check.summary


def test_responses_that_differ_fail_even_when_the_fallback_passes(tmp_path: Path) -> None:
    reference = [(i, A) for i in range(200)]
    logged = [(i, A2 if i == 5 else A) for i in range(200)]  # one differs, same top-1
    run_dir, directory = accuracy_dirs(tmp_path, reference, logged)
    check = check_accuracy(run_dir, directory, outcome(), DataConfig())
    assert check.passed  # MLPerf accepts it through accuracy/ ...
    assert verdict_lines(check.text) == ["TEST FAIL"]  # ... while its script says FAIL
    assert "1 of 200 logged responses differ" in check.text
    assert "top-1 agreement with the accuracy run's responses over 200 samples" in check.text
    baseline = (directory / "baseline_accuracy.txt").read_text()
    match = re.match(CHECKER_ACC_PATTERN, baseline)
    assert match is not None and float(match.group(1)) == 100.0


def test_outputs_that_disagree_fail_both_checks(tmp_path: Path) -> None:
    reference = [(0, A), (1, B), (2, C), (3, A)]
    logged = [(0, B), (1, B), (2, A), (3, A)]  # two of four classes change
    run_dir, directory = accuracy_dirs(tmp_path, reference, logged)
    check = check_accuracy(run_dir, directory, outcome(), DataConfig())
    assert not check.passed and verdict_lines(check.text) == ["TEST FAIL"]
    assert "accuracy run 100.000 %, TEST01 50.000 %" in check.text
    assert "|1 - baseline / TEST01| = 100.000 % (allowed 1 %): fail" in check.text
    text = (directory / "compliance_accuracy.txt").read_text()
    assert text.startswith("accuracy=50.000%, total=4\n")


def test_labels_score_the_fallback_where_the_accuracy_run_used_them(tmp_path: Path) -> None:
    reference = [(0, A), (1, B), (2, C), (3, A)]  # classes 1, 0, 2, 1
    logged = [(0, A), (1, B), (2, C), (3, B)]  # sample 3 becomes class 0
    run_dir, directory = accuracy_dirs(tmp_path, reference, logged)
    (run_dir / "accuracy" / "accuracy.json").write_text(
        json.dumps({"against_labels": {"label_offset": 0, "top1": 1.0}})
    )
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "labels.txt").write_text("1\n0\n2\n0\n")  # sample 3 is class 0
    data = DataConfig(source="npy", dir=str(data_dir), labels=True)
    check = check_accuracy(run_dir, directory, outcome(), data)
    assert (
        "top-1 accuracy against the labels over 4 samples: accuracy run 75.000 %, TEST01 100.000 %"
        in check.text
    )
    assert not check.passed  # |1 - 75 / 100| = 25 %


def test_responses_without_data_are_named_as_the_cause(tmp_path: Path) -> None:
    run_dir, directory = accuracy_dirs(tmp_path, [(0, A), (1, B)], [(0, b""), (1, b"")])
    check = check_accuracy(run_dir, directory, outcome(), DataConfig())
    assert not check.passed and "2 logged responses carry no data" in check.summary
    assert "include_host_copies: true" in check.summary


def test_no_shared_sample_is_a_failure_not_a_pass(tmp_path: Path) -> None:
    run_dir, directory = accuracy_dirs(tmp_path, [(0, A)], [(5, A), (6, B)])
    check = check_accuracy(run_dir, directory, outcome(), DataConfig())
    assert not check.passed
    assert (
        check.summary
        == "accuracy: no response logged in performance mode has an accuracy-run counterpart"
    )


# ---- verify: the files MLPerf's checker reads, and our verdict ----


def compliance_run(
    tmp_path: Path, test: ComplianceTest, *, ref: float, got: float
) -> tuple[Path, Path]:
    run_dir = tmp_path / "run"
    directory = run_dir / "compliance" / test
    detail_log(run_dir / "mlperf_log_detail.txt", score=ref)
    detail_log(directory / "mlperf_log_detail.txt", score=got, test=test)
    write_outcome(outcome(), directory) if test == "TEST01" else write_outcome(
        ComplianceRun(**{**vars(outcome()), "test": "TEST04"}), directory
    )
    return run_dir, directory


def test_verify_writes_mlperfs_files_and_our_verdict(tmp_path: Path) -> None:
    run_dir, directory = compliance_run(tmp_path, "TEST01", ref=1e6, got=1.05e6)
    accuracy_log(run_dir / "accuracy" / "mlperf_log_accuracy.json", [(0, A), (1, B)])
    accuracy_log(directory / "mlperf_log_accuracy.json", [(1, B)])
    verdict = verify("TEST01", run_dir, directory, DataConfig())
    assert verdict.passed
    accuracy = (directory / "verify_accuracy.txt").read_text().splitlines()
    assert "TEST PASS" in [line.strip() for line in accuracy]
    assert any(
        "TEST PASS" in line
        for line in (directory / "verify_performance.txt").read_text().splitlines()
    )
    data = json.loads((directory / VERDICT_FILE).read_text())
    assert data["passed"] is True and data["test"] == "TEST01"
    assert data["accuracy"]["file"] == "verify_accuracy.txt"
    assert read_passed(directory) is True and compliance_passed(run_dir) is True
    assert render_verdict(verdict).splitlines()[0] == "compliance TEST01: TEST PASS"


def test_a_failed_test_fails_the_run_it_belongs_to(tmp_path: Path) -> None:
    run_dir, directory = compliance_run(tmp_path, "TEST04", ref=1e6, got=5e5)  # twice as fast
    verdict = verify("TEST04", run_dir, directory, DataConfig())
    assert not verdict.passed and verdict.accuracy is None
    assert not (directory / "verify_accuracy.txt").exists()
    text = (directory / "verify_performance.txt").read_text()
    assert "TEST PASS" not in text and text.endswith("TEST FAIL\n")
    assert compliance_passed(run_dir) is False
    assert compliance_passed(tmp_path / "elsewhere") is True  # a run without compliance tests


def test_an_outcome_of_another_test_is_refused(tmp_path: Path) -> None:
    run_dir, directory = compliance_run(tmp_path, "TEST04", ref=1e6, got=1e6)
    with pytest.raises(ResultError, match="holds TEST04, not TEST01"):
        verify("TEST01", run_dir, directory, DataConfig())


def test_a_missing_or_foreign_outcome_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(
        ResultError, match=r"outcome\.json: missing; the compliance test did not finish"
    ):
        read_outcome(tmp_path)
    (tmp_path / "outcome.json").write_text('{"schema_version": 9}')
    with pytest.raises(ResultError, match=r"schema_version 9 was written by a newer beyond-tops"):
        read_outcome(tmp_path)
    (tmp_path / "outcome.json").write_text('{"schema_version": 0}')
    with pytest.raises(ResultError, match=r"older than .*; run the compliance test again"):
        read_outcome(tmp_path)
    (tmp_path / "outcome.json").write_text('{"schema_version": 1, "test": "TEST01"}')
    with pytest.raises(ResultError, match=r"outcome\.json: missing key 'cwd'"):
        read_outcome(tmp_path)
    write_outcome(outcome(), tmp_path)
    assert read_outcome(tmp_path) == outcome()
