"""accuracy.txt in MLPerf's format, the hash of the whole log, and the truncated export copy."""

from __future__ import annotations

import hashlib
import importlib.util
import re
import shutil
from pathlib import Path
from types import ModuleType

import pytest

from harness.records.accuracy import Accuracy, ClosedDivision, Fp32Agreement, LabelAccuracy
from harness.submission.accuracy_txt import (
    ELISION,
    MAX_ACCURACY_LOG_BYTES,
    NO_ROUGE,
    VIEW_BYTES,
    compliance_accuracy_txt,
    file_sha256,
    mlperf_accuracy_line,
    render_accuracy_txt,
    truncated_log,
)

TOOLS = Path(__file__).resolve().parents[3] / "shared" / "mlperf-tools"
# The pattern the issue quotes; the checker's own copy is used where it is present.
ISSUE_PATTERN = r"^(?:\{\"accuracy|accuracy)[\": ]*=?\s*([\d\.]+).*"
HASH_PATTERN = r"^hash=([\w\d]+)$"  # the checker's and the truncation tool's


def _load(name: str, path: Path) -> ModuleType | None:
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _accuracy_pattern() -> str:
    constants = _load("mlperf_checker_constants", TOOLS / "submission_checker" / "constants.py")
    if constants is None:
        return ISSUE_PATTERN
    pattern: str = constants.ACC_PATTERN["acc"]
    resnet_target = constants.MODEL_CONFIG["v6.1"]["accuracy-target"]["resnet"]
    assert resnet_target[0] == "acc"  # ResNet-50 is judged by this one pattern
    return pattern


def _fp32(count: int) -> Fp32Agreement:
    return Fp32Agreement(
        kind="classifier",
        count=count,
        top1_agreement=1.0,
        max_abs_error=0.0,
        mean_abs_error=0.0,
        cosine_similarity=1.0,
        min_cosine_similarity=1.0,
    )


def _accuracy(top1: float | None, count: int) -> Accuracy:
    labels = LabelAccuracy(
        count=count,
        label_offset=1,
        top1=top1,
        top5=0.93,
        fp32_top1=0.7646,
        fp32_top5=0.93,
        closed_division=ClosedDivision(
            accuracy=top1 or 0.0, reference=0.7646, fraction=0.99, target=0.7570, passed=True
        ),
    )
    return Accuracy(
        samples=count,
        against_fp32=_fp32(count),
        against_labels=labels,
        passed=True,
        criterion="top-1 >= 99 % of FP32 (MLPerf closed division)",
        reference="FP32",
    )


def _checker_reads(text: str) -> tuple[list[str], str | None]:
    """(accuracy values, hash) as the checker reads accuracy.txt: readlines, re.match each."""
    pattern = _accuracy_pattern()
    values = [
        m.group(1) for line in text.splitlines(keepends=True) if (m := re.match(pattern, line))
    ]
    hashes = [
        m.group(1) for line in text.splitlines(keepends=True) if (m := re.match(HASH_PATTERN, line))
    ]
    assert len(hashes) <= 1
    return values, hashes[0] if hashes else None


def test_the_accuracy_line_is_mlperfs_and_the_checker_reads_its_value() -> None:
    line = mlperf_accuracy_line(_accuracy(0.76456, 50000).against_labels)  # type: ignore[arg-type]
    assert line == "accuracy=76.456%, good=38228, total=50000"
    text = render_accuracy_txt(_accuracy(0.76456, 50000), "ab" * 32)
    values, digest = _checker_reads(text)
    assert values == ["76.456"]  # one line matches: the harness's own scoring never does
    assert digest == "ab" * 32
    assert text.splitlines()[:2] == [line, "hash=" + "ab" * 32]
    assert "top-1 agreement" in text  # the harness's own scoring stays beside it


def test_a_synthetic_weights_statement_comes_first_and_the_checker_still_reads_its_lines() -> None:
    statement = "Synthetic weights: accuracy not measurable (seeded, not trained)"
    text = render_accuracy_txt(_accuracy(0.76456, 50000), "ab" * 32, statement)
    assert text.splitlines()[:3] == [
        statement,
        "accuracy=76.456%, good=38228, total=50000",
        "hash=" + "ab" * 32,
    ]
    assert _checker_reads(text) == (["76.456"], "ab" * 32)  # the statement matches neither


# llama3.1-8b's accuracy patterns, as the issue's v6.1 checker has them (ACC_PATTERN).
LLM_PATTERNS = {
    "ROUGE1": r".*'rouge1':\s+'?([\d.]+)'?.*",
    "ROUGE2": r".*'rouge2':\s+'?([\d.]+)'?.*",
    "ROUGEL": r".*'rougeL':\s+'?([\d.]+)'?.*",
    "ROUGELSUM": r".*'rougeLsum':\s+'?([\d.]+)'?.*",
    "GEN_LEN": r".*'gen_len':\s([\d.]+).*",
    "TOKENS_PER_SAMPLE": r".*'tokens_per_sample':\s([\d.]+).*",
}


def _llm_patterns() -> dict[str, str]:
    constants = _load("mlperf_checker_constants", TOOLS / "submission_checker" / "constants.py")
    if constants is None:
        return LLM_PATTERNS
    targets = constants.MODEL_CONFIG["v6.1"]["accuracy-target"]["llama3.1-8b"]
    names = targets[::2]
    assert set(names) <= set(LLM_PATTERNS)  # the checker reads ROUGE-1/2/L/Lsum and GEN_LEN
    return {name: constants.ACC_PATTERN[name] for name in names}


def test_a_generative_benchmark_states_no_rouge_and_claims_no_score() -> None:
    statement = "Synthetic weights: accuracy not measurable (zoo model 'llm-tiny')"
    text = render_accuracy_txt(_accuracy(0.76456, 50000), "ef" * 32, statement, generative=True)
    lines = text.splitlines()
    assert lines[:3] == [statement, NO_ROUGE, "hash=" + "ef" * 32]
    for name, pattern in _llm_patterns().items():
        assert not any(re.match(pattern, line) for line in lines), name
    assert _checker_reads(text)[0] == []  # no MLPerf accuracy= line either, labels or not
    # The patterns do read a line a cheat would write: the test above can fail.
    assert re.match(_llm_patterns()["ROUGE1"], "{'rouge1': 38.5, 'gen_len': 8000000}")


def test_good_is_counted_from_top1_and_rounded() -> None:
    line = mlperf_accuracy_line(_accuracy(2 / 3, 3).against_labels)  # type: ignore[arg-type]
    assert line == "accuracy=66.667%, good=2, total=3"


def test_without_labels_there_is_no_accuracy_line_but_there_is_a_hash() -> None:
    accuracy = _accuracy(0.5, 8)
    unlabelled = Accuracy(
        samples=8,
        against_fp32=_fp32(8),
        against_labels=None,
        passed=True,
        criterion="top-1 agreement with FP32 >= 99% (no labels)",
        reference="FP32",
    )
    values, digest = _checker_reads(render_accuracy_txt(unlabelled, "cd" * 32))
    assert values == [] and digest == "cd" * 32
    assert _checker_reads(render_accuracy_txt(accuracy, "cd" * 32))[0] == ["50.000"]


def test_no_top1_gives_no_line() -> None:
    assert mlperf_accuracy_line(_accuracy(None, 8).against_labels) is None  # type: ignore[arg-type]


def _log(path: Path, entries: int) -> Path:
    rows = [
        f'{{ "seq_id" : {i}, "qsl_idx" : {i % 97}, "data" : "{i:08X}" }}' for i in range(entries)
    ]
    path.write_text("[\n" + ",\n".join(rows) + "\n]\n", encoding="ascii")
    return path


def test_a_long_log_keeps_both_ends_within_10_kib(tmp_path: Path) -> None:
    log = _log(tmp_path / "mlperf_log_accuracy.json", 5000)
    data = log.read_bytes()
    assert len(data) > 100 * 1024
    cut = truncated_log(log)
    assert len(cut) <= MAX_ACCURACY_LOG_BYTES == 10 * 1024
    assert cut == data[:VIEW_BYTES] + ELISION + data[-VIEW_BYTES:]


def test_the_hash_is_over_the_whole_log_not_the_copy(tmp_path: Path) -> None:
    log = _log(tmp_path / "mlperf_log_accuracy.json", 5000)
    digest = file_sha256(log)
    assert digest == hashlib.sha256(log.read_bytes()).hexdigest()
    assert digest != hashlib.sha256(truncated_log(log)).hexdigest()
    assert compliance_accuracy_txt(digest) == f"hash={digest}\n"


@pytest.mark.parametrize("size", [0, 4096, MAX_ACCURACY_LOG_BYTES])
def test_a_log_within_the_limit_is_kept_whole(tmp_path: Path, size: int) -> None:
    log = tmp_path / "log.json"
    log.write_bytes(b"x" * size)
    assert truncated_log(log) == b"x" * size


def test_one_byte_over_the_limit_is_cut(tmp_path: Path) -> None:
    log = tmp_path / "log.json"
    log.write_bytes(
        b"a" * VIEW_BYTES + b"m" * (MAX_ACCURACY_LOG_BYTES + 1 - 2 * VIEW_BYTES) + b"z" * VIEW_BYTES
    )
    assert truncated_log(log) == b"a" * VIEW_BYTES + ELISION + b"z" * VIEW_BYTES


def test_a_long_log_is_cut_as_mlperfs_own_tool_cuts_it(tmp_path: Path) -> None:
    tool = _load("mlperf_truncate_accuracy_log", TOOLS / "truncate_accuracy_log.py")
    if tool is None:
        pytest.skip(f"{TOOLS}/truncate_accuracy_log.py is absent (a user's clone)")
    log = _log(tmp_path / "mlperf_log_accuracy.json", 3000)
    theirs = tmp_path / "theirs.json"
    shutil.copyfile(log, theirs)
    tool.truncate_file(str(theirs))
    assert truncated_log(log) == theirs.read_bytes()
    assert tool.get_hash(str(log)) == file_sha256(log)
