"""TEST01's accuracy check: responses logged in performance mode against the accuracy run's.

Every response LoadGen logged during TEST01 must equal, byte for byte, the accuracy run's
response for the same sample (qsl_idx). When some differ (a non-deterministic SUT), MLPerf
falls back to accuracy: that of the differing run's responses within 1 % (relative) of that
of the accuracy run's responses on the same samples. verify_accuracy.txt says TEST PASS only
for identical responses, as MLPerf's script does; the fallback's figures go to
baseline_accuracy.txt and compliance_accuracy.txt, which a submission puts in TEST01/accuracy/
for MLPerf's checker.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.analysis.accuracy import (
    agreement,
    decode_outputs,
    label_accuracy,
    read_accuracy_log,
    scored_label_offset,
)
from harness.analysis.degenerate import degenerate_reference
from harness.analysis.labels import Label, scenario_labels
from harness.compliance.check import Check, make_check
from harness.compliance.outcome import ComplianceRun
from harness.compliance.rules import ACCURACY_DELTA
from harness.config import DataConfig
from harness.errors import ResultError
from harness.files import atomic_write_text
from harness.records.layout import (
    ACCURACY_DIR,
    ACCURACY_LOG,
    BASELINE_ACCURACY,
    COMPLIANCE_ACCURACY,
)

TITLE = "TEST01 accuracy: responses logged in performance mode against the accuracy run's"
Entries = Sequence[tuple[int, bytes]]


@dataclass(frozen=True, kw_only=True)
class Counts:
    """How the logged responses compare with the accuracy run's (MLPerf's script's counters)."""

    acc_log_entries: int
    acc_log_duplicate_keys: int
    acc_log_data_mismatch: int
    perf_log_entries: int
    perf_log_qsl_idx_match: int
    perf_log_data_mismatch: int
    missing_qsl_idxs: int
    perf_log_empty: int  # responses without data: the SUT returned none

    def lines(self) -> list[str]:
        """`num_<counter> = N`, as MLPerf's verify_accuracy.py prints them."""
        return [f"num_{name} = {value}" for name, value in vars(self).items()]


@dataclass(frozen=True, kw_only=True)
class Fallback:
    """MLPerf's non-deterministic check: one accuracy figure for each side, on the same samples."""

    metric: str
    baseline: float
    compliance: float
    samples: int

    @property
    def delta(self) -> float:
        """|1 - baseline / compliance|, as the submission checker computes it."""
        return abs(1 - self.baseline / self.compliance) if self.compliance > 0 else float("inf")

    @property
    def passed(self) -> bool:
        """Within ACCURACY_DELTA, and both sides measured something."""
        return self.baseline > 0 and self.compliance > 0 and self.delta <= ACCURACY_DELTA


def check_accuracy(
    run_dir: Path, directory: Path, outcome: ComplianceRun, data: DataConfig
) -> Check:
    """Compare TEST01's logged responses (in `directory`) with the accuracy run of `run_dir`."""
    reference = run_dir / ACCURACY_DIR / ACCURACY_LOG
    logged = directory / ACCURACY_LOG
    ref_entries, got_entries = read_accuracy_log(reference), read_accuracy_log(logged)
    counts = compare(ref_entries, got_entries)
    lines = [TITLE, f"reference: {reference}", f"test:      {logged}", *counts.lines()]
    matched = counts.perf_log_qsl_idx_match
    if matched == 0:
        cause = (
            "no response logged in performance mode has an accuracy-run counterpart"
            if counts.perf_log_entries
            else "LoadGen logged no response in performance mode"
        )
        return make_check(False, f"accuracy: {cause}", [*lines, f"problem: {cause}"])
    if counts.perf_log_data_mismatch == 0:
        constant = constant_responses(ref_entries, outcome)
        if constant is not None:  # equal responses then show nothing
            summary = f"accuracy: not measurable: {constant}"
            return make_check(False, summary, [*lines, f"problem: not measurable: {constant}"])
        summary = f"accuracy: all {matched} logged responses equal the accuracy run's"
        return make_check(True, summary, [*lines, summary.removeprefix("accuracy: ")])
    differ = f"{counts.perf_log_data_mismatch} of {matched}"
    lines.append(f"{differ} logged responses differ from the accuracy run's")
    if counts.perf_log_empty:
        cause = (
            f"{counts.perf_log_empty} logged responses carry no data (a device path that "
            "copies no outputs back: set runtime.include_host_copies: true)"
        )
        return make_check(False, f"accuracy: {cause}", [*lines, f"problem: {cause}"])
    fallback = fallback_accuracy(run_dir, ref_entries, got_entries, outcome, data)
    write_fallback_files(directory, fallback)
    verdict = "pass" if fallback.passed else "fail"
    lines.append(
        f"non-deterministic check: {fallback.metric} over {fallback.samples} samples: accuracy "
        f"run {_pct(fallback.baseline)}, TEST01 {_pct(fallback.compliance)}, |1 - baseline / "
        f"TEST01| = {_pct(fallback.delta)} (allowed {ACCURACY_DELTA * 100:.0f} %): {verdict} "
        "(see baseline_accuracy.txt and compliance_accuracy.txt)"
    )
    summary = f"accuracy: {differ} responses differ; {fallback.metric} within 1 %: {verdict}"
    return make_check(fallback.passed, summary, lines, verdict=False)


def constant_responses(reference: Entries, outcome: ComplianceRun) -> str | None:
    """Why the accuracy run's responses cannot tell a computing SUT from a constant one.

    They answer alike for every sample (harness.analysis.degenerate): a SUT that returns one
    output for every query then logs responses equal to the accuracy run's.
    """
    first = dict(reversed(list(reference)))  # the first response of each sample
    sizes = {len(data) for data in first.values()}
    dtype = np.dtype(outcome.response_dtype)
    if len(sizes) != 1 or not (size := sizes.pop()) or size % dtype.itemsize:
        return None  # no comparable responses: the counts already say so
    decoded = decode_outputs(list(first.items()), dtype=dtype, shape=(size // dtype.itemsize,))
    what = "the accuracy run"
    return degenerate_reference(decoded, kind=outcome.output_kind, what=what)


def compare(reference: Entries, logged: Entries) -> Counts:
    """Count matches and mismatches by qsl_idx; each logged response against the accuracy run's."""
    first: dict[int, bytes] = {}
    duplicates = acc_mismatch = 0
    for index, data in reference:
        if index in first:
            duplicates += 1
            acc_mismatch += first[index] != data
        else:
            first[index] = data
    matched = [(data, first[index]) for index, data in logged if index in first]
    return Counts(
        acc_log_entries=len(reference),
        acc_log_duplicate_keys=duplicates,
        acc_log_data_mismatch=acc_mismatch,
        perf_log_entries=len(logged),
        perf_log_qsl_idx_match=len(matched),
        perf_log_data_mismatch=sum(got != ref for got, ref in matched),
        missing_qsl_idxs=len(logged) - len(matched),
        perf_log_empty=sum(not data for _, data in logged),
    )


def fallback_accuracy(
    run_dir: Path, reference: Entries, logged: Entries, outcome: ComplianceRun, data: DataConfig
) -> Fallback:
    """Both sides' accuracy on the samples TEST01 logged.

    Against the labels where the accuracy run was scored against labels; else agreement with
    the accuracy run's own responses (top-1, or cosine similarity for tensors).
    """
    ref, got = _decoded(reference, logged, np.dtype(outcome.response_dtype))
    offset = scored_label_offset(run_dir / ACCURACY_DIR)
    if offset is not None and data.has_labels:
        labels = scenario_labels(data)
        return Fallback(
            metric="top-1 accuracy against the labels",
            baseline=_top1(ref, labels, offset),
            compliance=_top1(got, labels, offset),
            samples=len(got),
        )
    scores = agreement(got, ref, kind=outcome.output_kind)
    if scores.top1_agreement is not None:
        metric, value = "top-1 agreement with the accuracy run's responses", scores.top1_agreement
    else:
        metric = "mean cosine similarity with the accuracy run's responses"
        value = scores.cosine_similarity or 0.0
    return Fallback(metric=metric, baseline=1.0, compliance=value, samples=len(got))


def _decoded(
    reference: Entries, logged: Entries, dtype: np.dtype[np.generic]
) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray]]:
    """Both sides' responses as arrays, for the samples TEST01 logged (its first of each)."""
    ref_bytes = dict(reversed(list(reference)))  # the first response of each sample wins
    shared = [(i, d) for i, d in logged if i in ref_bytes]
    size = len(shared[0][1])
    if size % dtype.itemsize:
        raise ResultError(f"TEST01: responses of {size} bytes are not {dtype.name} values")
    shape = (size // dtype.itemsize,)
    got = decode_outputs(shared, dtype=dtype, shape=shape)
    ref = decode_outputs([(i, ref_bytes[i]) for i in got], dtype=dtype, shape=shape)
    return ref, got


def _pct(value: float) -> str:
    return f"{value * 100:.3f} %" if np.isfinite(value) else "unbounded"


def _top1(outputs: Mapping[int, np.ndarray], labels: Mapping[int, Label], offset: int) -> float:
    return float(label_accuracy(outputs, labels, top_k=(1,), label_offset=offset)["top1"] or 0.0)


def write_fallback_files(directory: Path, fallback: Fallback) -> None:
    """baseline_accuracy.txt and compliance_accuracy.txt, as MLPerf's checker reads them.

    Each starts with `accuracy=XX.XXX%`, the pattern the submission checker parses.
    """
    for name, value, side in (
        (BASELINE_ACCURACY, fallback.baseline, "the accuracy run's"),
        (COMPLIANCE_ACCURACY, fallback.compliance, "TEST01's"),
    ):
        text = (
            f"accuracy={value * 100:.3f}%, total={fallback.samples}\n"
            f"{fallback.metric}: {side} responses for the samples TEST01 logged\n"
        )
        atomic_write_text(directory / name, text)
