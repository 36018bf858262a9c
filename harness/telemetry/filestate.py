"""Whether a run's telemetry file is absent, present but empty (and why), or holds samples.

Both telemetry.csv and cpu_telemetry.csv carry '# unavailable: {"source", "reason"}' and
'# error: {"source", "error"}' header lines: an empty file's reason comes from them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from harness.errors import ResultError
from harness.telemetry.cpufile import header_entries

FileStateName = Literal["absent", "empty", "present"]
NOT_WRITTEN = (
    "not written: the run predates it, or LoadGen's window never opened (a failed or "
    "interrupted run)"
)
NO_SOURCE = "no source could be sampled (the file names none)"


@dataclass(frozen=True, kw_only=True)
class FileState:
    """A telemetry file's state, its sample rows and why it has none ("" when it has)."""

    path: Path
    state: FileStateName
    rows: int
    reason: str

    def describe(self) -> str:
        """One line for a report: 'X has no samples: why', 'X: not written: ...' or 'X: N rows'."""
        name = self.path.name
        if self.state == "absent":
            return f"{name}: {self.reason}"
        if self.state == "empty":
            return f"{name} has no samples: {self.reason}"
        return f"{name}: {self.rows} sample rows"


def telemetry_file_state(path: Path) -> FileState:
    """The state of telemetry.csv or cpu_telemetry.csv at ``path``; never raises for absence.

    Raises:
        ResultError: the file exists but cannot be read, or its header is not JSON.
    """
    if not path.is_file():
        return FileState(path=path, state="absent", rows=0, reason=NOT_WRITTEN)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ResultError(f"{path}: cannot read ({exc.strerror})") from None
    body = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    rows = max(len(body) - 1, 0)  # the first line that is not a comment is the column header
    if rows:
        return FileState(path=path, state="present", rows=rows, reason="")
    try:
        meta = header_entries(text)
    except ValueError as exc:
        raise ResultError(f"{path}: a header line is not JSON ({exc})") from None
    reasons = [f"{e['source']}: {e['reason']}" for e in meta.get("unavailable", [])]
    reasons += [f"{e['source']}: {e['error']}" for e in meta.get("error", [])]
    return FileState(path=path, state="empty", rows=0, reason="; ".join(reasons) or NO_SOURCE)
