"""What a compliance worker leaves beside LoadGen's logs: outcome.json, read by its parent."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.errors import ResultError
from harness.files import atomic_write_text
from harness.records.job import COMPLIANCE_TESTS, ComplianceTest

OUTCOME_FILE = "outcome.json"
OUTCOME_SCHEMA_VERSION = 1


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
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultError(f"{path}: missing; the compliance test did not finish") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ResultError(f"{path}: unreadable ({exc})") from None
    if not isinstance(data, dict) or data.get("schema_version") != OUTCOME_SCHEMA_VERSION:
        raise ResultError(
            f"{path}: not a version {OUTCOME_SCHEMA_VERSION} compliance outcome; "
            "run the compliance test again with this beyond-tops"
        )
    if data.get("test") not in COMPLIANCE_TESTS:
        raise ResultError(f"{path}: test {data.get('test')!r} is not one of {COMPLIANCE_TESTS}")
    try:
        return ComplianceRun(
            test=data["test"],
            cwd=str(data["cwd"]),
            audit_config_sha256=str(data["audit_config_sha256"]),
            response_dtype=str(data["response_dtype"]),
            output_kind=str(data["output_kind"]),
            completed_samples=int(data["completed_samples"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ResultError(f"{path}: malformed ({type(exc).__name__}: {exc})") from None
