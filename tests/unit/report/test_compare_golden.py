"""The compare Markdown and 80-column text, against golden files.

Regenerate after an intended change of output with
`BEYOND_TOPS_REGEN_GOLDEN=1 .venv/bin/python -m pytest tests/unit/report/test_compare_golden.py`,
then review the diff of tests/fixtures/golden/compare/ before committing it.
"""

from __future__ import annotations

import pytest
from golden import REPO, REPORTS, check_golden

from harness.analysis.compare import Comparison, compare
from harness.report.compare_render import render_compare_markdown, render_compare_text
from harness.results.groups import load_group

GOLDEN = REPO / "tests" / "fixtures" / "golden" / "compare"


def _check(name: str, text: str) -> None:
    check_golden(name, text, GOLDEN)


def _pair(a: str, b: str) -> Comparison:
    return compare([load_group(REPORTS / a), load_group(REPORTS / b)])


@pytest.mark.parametrize(
    ("name", "pair"),
    [
        ("singlestream.md", ("trials-epyc", "trials-xeon")),
        ("mismatch.md", ("trials-epyc", "sweep-h100")),
    ],
)
def test_compare_markdown_matches_its_golden_file(name: str, pair: tuple[str, str]) -> None:
    _check(name, render_compare_markdown(_pair(*pair)))


def test_compare_text_at_80_columns_matches_its_golden_file() -> None:
    _check("singlestream-80.txt", render_compare_text(_pair("trials-epyc", "trials-xeon"), 80))
