"""Golden-file check shared by the report tests.

Regenerate every expected file after an intended change of output with
`BEYOND_TOPS_REGEN_GOLDEN=1 .venv/bin/python -m pytest tests/unit/report`, then review the
diff of tests/fixtures/reports/expected_* before committing it.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
REPORTS = REPO / "tests" / "fixtures" / "reports"
REGEN = "BEYOND_TOPS_REGEN_GOLDEN"


def check_golden(name: str, text: str, directory: Path = REPORTS) -> None:
    """Compare text with <directory>/<name>, or rewrite it when regenerating."""
    path = directory / name
    if os.environ.get(REGEN) == "1":
        path.write_text(text, encoding="utf-8")
        return
    expected = path.read_text(encoding="utf-8")
    assert text == expected, f"{path} differs; if intended, rerun with {REGEN}=1 and review"
