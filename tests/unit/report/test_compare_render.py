"""The compare table for the terminal and in Markdown, against golden files."""

from __future__ import annotations

import re

from golden import REPORTS, check_golden

from harness.analysis.compare import Comparison, compare
from harness.analysis.groups import load_group
from harness.report.compare_render import (
    NO_PROBLEMS,
    render_compare_markdown,
    render_compare_text,
)


def _epyc_vs_xeon() -> Comparison:
    return compare([load_group(REPORTS / "trials-epyc"), load_group(REPORTS / "trials-xeon")])


def test_terminal_table_matches_the_golden_file() -> None:
    check_golden("expected_compare.txt", render_compare_text(_epyc_vs_xeon()))


def test_markdown_table_matches_the_golden_file() -> None:
    check_golden("expected_compare.md", render_compare_markdown(_epyc_vs_xeon()))


def test_throughput_row_shows_value_ratio_and_significance() -> None:
    lines = render_compare_text(_epyc_vs_xeon()).splitlines()
    row = next(line for line in lines if line.startswith("throughput"))
    assert re.split(r"\s{2,}", row) == [
        "throughput (samples/s)",
        "higher",
        "951.6",
        "1,199.7",
        "1.26x",
        "yes (p=0.016)",
    ]


def test_one_trial_cannot_tell_and_nothing_is_unfair() -> None:
    sweep = REPORTS / "sweep-h100"
    text = render_compare_text(compare([load_group(sweep / "bs-1"), load_group(sweep)]))
    row = next(line for line in text.splitlines() if line.startswith("throughput"))
    assert re.split(r"\s{2,}", row)[-3:] == ["7,150.0", "3.57x", "n/a (1 trial)"]
    assert f"Not comparable because:\n  - {NO_PROBLEMS}\n" in text
    assert (
        "Hardware differences (the point of the comparison):\n  - none: the same hardware\n" in text
    )
    assert "Other environment differences" not in text


def test_three_groups_each_get_value_ratio_and_significance_columns() -> None:
    groups = [load_group(REPORTS / name) for name in ("trials-epyc", "trials-xeon", "sweep-h100")]
    text = render_compare_markdown(compare(groups))
    header = text.splitlines()[2]
    assert header == (
        "| metric | better | trials-epyc | trials-xeon | vs trials-epyc | significant "
        "| sweep-h100 | vs trials-epyc | significant |"
    )
    assert "- sweep-h100 vs trials-epyc: scenario: 'SingleStream' != 'Offline'" in text
