"""Every file format the harness writes and its schema version, in one table.

Each version is defined once, beside the code that reads and writes its format; this table
only names where, for `harness --version` and for the tests that keep every versioned writer
listed and the JSON Schemas in step. Bump a format's constant where it is defined, with its
history there.

It lives in the CLI, the top layer, because the homes span every layer (config, records,
results, telemetry, compliance, bundle, fleet, site): `format_lines` imports each home when
`harness --version` asks, and the CLI may import any of them.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from harness.strictjson import Format


@dataclass(frozen=True, kw_only=True)
class FileFormat:
    """A file format: its files, the module that reads and writes it and its version's name.

    `version` names, in `home`, a strictjson.Format (which holds both versions) or an int
    constant; `oldest` names the oldest readable version's constant, or is that version (an
    int), or None when it is the version written. `version` None: a format MLPerf defines,
    written to its specification, with no version of ours.
    """

    files: str
    home: str
    version: str | None
    oldest: str | int | None = None
    oldest_home: str | None = None  # where `oldest` is defined, when not in `home`

    def versions(self) -> tuple[int, int] | None:
        """(version written, oldest version read), imported from the home; None: MLPerf's."""
        if self.version is None:
            return None
        value = getattr(importlib.import_module(self.home), self.version)
        if isinstance(value, Format):
            return value.newest, value.oldest
        newest = _int(value, self.home, self.version)
        if self.oldest is None or isinstance(self.oldest, int):
            return newest, newest if self.oldest is None else self.oldest
        where = self.oldest_home or self.home
        oldest = getattr(importlib.import_module(where), self.oldest)
        return newest, _int(oldest, where, self.oldest)


def _int(value: object, home: str, name: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{home}.{name} is not a version number: {value!r}")
    return value


FORMATS: tuple[FileFormat, ...] = (
    FileFormat(files="scenario YAML", home="harness.config", version="SCHEMA_VERSION"),
    FileFormat(files="job.json", home="harness.records.job", version="JOB_FORMAT"),
    FileFormat(files="result.json", home="harness.results.runfile", version="RESULT"),
    FileFormat(
        files="result.json fingerprint",
        home="harness.records.fingerprint",
        version="FINGERPRINT_VERSION",
    ),
    FileFormat(
        files="trials.json, sweep.json",
        home="harness.results.groupfile",
        version="GROUP_SCHEMA_VERSION",
        oldest="OLDEST_READABLE",
    ),
    FileFormat(files="load.json", home="harness.results.loadfile", version="LOAD_FORMAT"),
    FileFormat(
        files="retry.json, peak.json", home="harness.handoff", version="SCHEMA_VERSION", oldest=0
    ),
    FileFormat(files="telemetry.csv", home="harness.telemetry.csvfile", version="FORMAT"),
    FileFormat(files="cpu_telemetry.csv", home="harness.telemetry.cpufile", version="FORMAT"),
    FileFormat(files="query_latencies.npz", home="harness.telemetry.latencies", version="FORMAT"),
    FileFormat(
        files="token_times.npz", home="harness.records.generation", version="TOKEN_TIMES_FORMAT"
    ),
    FileFormat(files="outcome.json", home="harness.compliance.outcome", version="OUTCOME"),
    FileFormat(files="verdict.json", home="harness.compliance.verify", version="VERDICT"),
    FileFormat(files="reproduction.json", home="harness.reproduce.record", version="REPRODUCTION"),
    FileFormat(files="published.json", home="harness.published.record", version="PUBLISHED"),
    FileFormat(files="MANIFEST.json (bundle)", home="harness.bundle.manifest", version="MANIFEST"),
    FileFormat(files="MANIFEST.sig (bundle)", home="harness.bundle.signature", version="SIGNATURE"),
    FileFormat(files="fleet.json", home="harness.fleet.plan", version="FLEET_FORMAT"),
    FileFormat(files="task.json", home="harness.fleet.plan", version="TASK_FORMAT"),
    FileFormat(files="task-result.json", home="harness.fleet.records", version="TASK_RESULT"),
    FileFormat(files="site.json", home="harness.site.build", version="SITE_FORMAT"),
    FileFormat(
        files="fleet-merged.json", home="harness.fleet.collect", version="MERGED_SCHEMA_VERSION"
    ),
    FileFormat(files="show --json, --csv", home="harness.report.scripted", version="SHOW_FORMAT"),
    FileFormat(
        files="compare --json, --csv",
        home="harness.report.scripted_compare",
        version="COMPARE_FORMAT",
    ),
    FileFormat(files="measurements.json", home="harness.submission.documents", version=None),
)


def format_lines() -> list[str]:
    """One line per format: files, version written and the versions read."""
    lines = []
    for fmt in FORMATS:
        found = fmt.versions()
        if found is None:
            lines.append(f"{fmt.files}: MLPerf's format, no schema of ours ({fmt.home})")
            continue
        version, oldest = found
        reads = f"reads {oldest}-{version}" if oldest < version else f"reads {version}"
        lines.append(f"{fmt.files}: schema {version} ({reads}; {fmt.home})")
    return lines
