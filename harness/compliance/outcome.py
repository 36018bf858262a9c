"""What a compliance worker leaves beside LoadGen's logs: outcome.json, read by its parent."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from harness.errors import ResultError
from harness.files import atomic_write_text
from harness.records.job import COMPLIANCE_TESTS, ComplianceTest, as_compliance_test
from harness.records.layout import OUTCOME_FILE
from harness.strictjson import Format, read_versioned, want

OUTCOME_SCHEMA_VERSION = 1
OUTCOME = Format(
    what="a beyond-tops compliance outcome",
    newest=OUTCOME_SCHEMA_VERSION,
    oldest=1,
    older_fix="run the compliance test again with this beyond-tops",
)


@dataclass(frozen=True, kw_only=True)
class ComplianceRun:
    """A finished compliance test: where it ran and how to decode the responses it logged."""

    test: ComplianceTest
    cwd: str  # the worker's working directory while LoadGen ran: the test's own directory
    audit_config_sha256: str
    response_dtype: str  # numpy's name for the dtype of each logged response's data
    output_kind: str  # classifier or tensor (harness.analysis.accuracy.agreement)
    completed_samples: int


def write_outcome(run: ComplianceRun, directory: Path) -> Path:
    """Write outcome.json atomically into the compliance test's directory."""
    path = directory / OUTCOME_FILE
    data = {"schema_version": OUTCOME_SCHEMA_VERSION, **asdict(run)}
    atomic_write_text(path, json.dumps(data, indent=2) + "\n")
    return path


def read_outcome(directory: Path) -> ComplianceRun:
    """Read outcome.json; a missing or malformed file is a one-line ResultError."""
    path = directory / OUTCOME_FILE
    missing = "missing; the compliance test did not finish"
    data = read_versioned(path, OUTCOME, ResultError, missing=missing).data
    where = str(path)
    test = data.get("test")
    if test not in COMPLIANCE_TESTS:
        raise ResultError(f"{path}: test {test!r} is not one of {COMPLIANCE_TESTS}")
    return ComplianceRun(
        test=as_compliance_test(str(test)),
        cwd=want(data, "cwd", str, where, ResultError),
        audit_config_sha256=want(data, "audit_config_sha256", str, where, ResultError),
        response_dtype=want(data, "response_dtype", str, where, ResultError),
        output_kind=want(data, "output_kind", str, where, ResultError),
        completed_samples=want(data, "completed_samples", int, where, ResultError),
    )
