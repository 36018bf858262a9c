"""Every file format the harness writes and its schema version, in one table.

Each version is defined once, beside the code that reads and writes its format; this table
only collects them, for `harness --version` and for the tests that keep the JSON Schema in
step. Bump a format's constant where it is defined, with its history there.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness import config
from harness.fingerprint.fingerprint import FINGERPRINT_VERSION
from harness.records import job
from harness.results import groupfile, migrate, runfile


@dataclass(frozen=True, kw_only=True)
class FileFormat:
    """A versioned format: its files, the version written and the oldest one still read."""

    files: str
    version: int
    oldest_readable: int
    home: str  # the module that defines the version, reads and writes the format


FORMATS: tuple[FileFormat, ...] = (
    FileFormat(
        files="scenario YAML",
        version=config.SCHEMA_VERSION,
        oldest_readable=config.SCHEMA_VERSION,
        home="harness.config",
    ),
    FileFormat(
        files="job.json",
        version=job.JOB_SCHEMA_VERSION,
        oldest_readable=job.JOB_OLDEST_READABLE,
        home="harness.records.job",
    ),
    FileFormat(
        files="result.json",
        version=runfile.SCHEMA_VERSION,
        oldest_readable=migrate.OLDEST_READABLE,
        home="harness.results.runfile",
    ),
    FileFormat(
        files="result.json fingerprint",
        version=FINGERPRINT_VERSION,
        oldest_readable=FINGERPRINT_VERSION,
        home="harness.fingerprint.fingerprint",
    ),
    FileFormat(
        files="trials.json, sweep.json",
        version=groupfile.GROUP_SCHEMA_VERSION,
        oldest_readable=groupfile.OLDEST_READABLE,
        home="harness.results.groupfile",
    ),
)


def format_lines() -> list[str]:
    """One line per format: files, version written and the versions read."""
    lines = []
    for fmt in FORMATS:
        reads = (
            f"reads {fmt.oldest_readable}-{fmt.version}"
            if fmt.oldest_readable < fmt.version
            else f"reads {fmt.version}"
        )
        lines.append(f"{fmt.files}: schema {fmt.version} ({reads}; {fmt.home})")
    return lines
