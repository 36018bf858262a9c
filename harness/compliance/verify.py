"""Verify a compliance test against its run: verify_*.txt for MLPerf, verdict.json for us.

The parent calls `verify` once the compliance worker has left its logs and outcome.json in
RUN/compliance/TEST0x/; it reads files only (LoadGen's logs, the accuracy run's log) and
writes, atomically, verify_performance.txt, verify_accuracy.txt (TEST01) and verdict.json.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from harness.compliance.accuracy import check_accuracy
from harness.compliance.check import Check
from harness.compliance.outcome import read_outcome
from harness.compliance.performance import check_performance
from harness.config import DataConfig
from harness.errors import ResultError
from harness.files import atomic_write_text
from harness.records.job import AUDIT_TESTS, COMPLIANCE_TESTS, ComplianceTest
from harness.records.layout import (
    COMPLIANCE_DIR,
    DETAIL_LOG,
    VERDICT_FILE,
    VERIFY_ACCURACY,
    VERIFY_PERFORMANCE,
)
from harness.strictjson import Format, JsonObject, read_versioned

VERDICT_SCHEMA_VERSION = 1
VERDICT = Format(
    what="a beyond-tops compliance verdict",
    newest=VERDICT_SCHEMA_VERSION,
    oldest=1,
    older_fix="verify the compliance test again with this beyond-tops",
)


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """A compliance test's checks: performance always, accuracy for TEST01."""

    test: ComplianceTest
    directory: Path
    performance: Check
    accuracy: Check | None = None

    @property
    def passed(self) -> bool:
        """Whether every check passed."""
        return self.performance.passed and (self.accuracy is None or self.accuracy.passed)


def verify(test: ComplianceTest, run_dir: Path, directory: Path, data: DataConfig) -> Verdict:
    """Check the compliance test in `directory` against the run in `run_dir`; write its files."""
    outcome = read_outcome(directory)
    if outcome.test != test:
        raise ResultError(f"{directory}: holds {outcome.test}, not {test}")
    performance = check_performance(test, run_dir / DETAIL_LOG, directory / DETAIL_LOG)
    accuracy = check_accuracy(run_dir, directory, outcome, data) if test == "TEST01" else None
    verdict = Verdict(test=test, directory=directory, performance=performance, accuracy=accuracy)
    write_verdict(verdict)
    return verdict


def write_verdict(verdict: Verdict) -> None:
    """verify_performance.txt, verify_accuracy.txt (TEST01) and verdict.json, atomically."""
    directory = verdict.directory
    atomic_write_text(directory / VERIFY_PERFORMANCE, verdict.performance.text)
    if verdict.accuracy is not None:
        atomic_write_text(directory / VERIFY_ACCURACY, verdict.accuracy.text)
    atomic_write_text(directory / VERDICT_FILE, json.dumps(verdict_dict(verdict), indent=2) + "\n")


def verdict_dict(verdict: Verdict) -> JsonObject:
    """verdict.json: the test, whether it passed, and each check's file and summary."""
    checks = {"performance": (verdict.performance, VERIFY_PERFORMANCE)}
    if verdict.accuracy is not None:
        checks["accuracy"] = (verdict.accuracy, VERIFY_ACCURACY)
    return {
        "schema_version": VERDICT_SCHEMA_VERSION,
        "test": verdict.test,
        "passed": verdict.passed,
        **{
            name: {"passed": check.passed, "summary": check.summary, "file": file}
            for name, (check, file) in checks.items()
        },
    }


def read_passed(directory: Path) -> bool:
    """Whether the compliance test in `directory` passed, from its verdict.json."""
    path = directory / VERDICT_FILE
    missing = "missing; the compliance test was not verified"
    return read_versioned(path, VERDICT, ResultError, missing=missing).data.get("passed") is True


def compliance_passed(run_dir: Path) -> bool:
    """Whether every compliance test and SWAP audit of `run_dir` (its latest) passed; none: True.

    A test without a verdict (its worker failed, or it is still running) has not passed.
    """
    return all(
        (directory / VERDICT_FILE).is_file() and read_passed(directory)
        for test in (*COMPLIANCE_TESTS, *AUDIT_TESTS)
        if (directory := run_dir / COMPLIANCE_DIR / test).is_dir()
    )


def render_verdict(verdict: Verdict) -> str:
    """Lines for people: the test's verdict, each check's summary, where its files are."""
    word = "TEST PASS" if verdict.passed else "TEST FAIL"
    lines = [f"compliance {verdict.test}: {word}"]
    lines += [f"  {c.summary}" for c in (verdict.accuracy, verdict.performance) if c is not None]
    lines.append(f"  files: {verdict.directory}")
    return "\n".join(lines)
