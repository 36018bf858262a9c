"""The compare table for the terminal and in Markdown, against golden files."""

from __future__ import annotations

import dataclasses
import re

from golden import REPORTS, check_golden

from harness.analysis.compare import Comparison, compare
from harness.report.compare_render import (
    render_compare_markdown,
    render_compare_text,
)
from harness.results.groups import load_group


def _epyc_vs_xeon() -> Comparison:
    return compare([load_group(REPORTS / "trials-epyc"), load_group(REPORTS / "trials-xeon")])


def test_terminal_table_matches_the_golden_file() -> None:
    check_golden("expected_compare.txt", render_compare_text(_epyc_vs_xeon()))


def test_markdown_table_matches_the_golden_file() -> None:
    check_golden("expected_compare.md", render_compare_markdown(_epyc_vs_xeon()))


def test_the_headline_row_shows_value_ratio_interval_and_significance() -> None:
    lines = render_compare_text(_epyc_vs_xeon()).splitlines()
    row = next(line for line in lines if line.startswith("early-stopping p90"))
    assert re.split(r"\s{2,}", row) == [
        "early-stopping p90 latency (ms)",
        "2.461",
        "1.922",
        "0.78x",
        "[0.63, 0.91]",
        "0.028",
        "better",
    ]


def test_the_verdict_comes_before_the_table_and_singlestream_has_no_throughput() -> None:
    text = render_compare_text(_epyc_vs_xeon())
    assert text.index("Verdict: COMPARABLE: same model and scenario") < text.index("metric ")
    assert text.index("A vs B: B/A = ") < text.index("Intended differences") < text.index("metric ")
    assert "throughput" not in text


def test_every_line_fits_the_terminal_width() -> None:
    for width in (80, 100):
        text = render_compare_text(_epyc_vs_xeon(), width=width)
        assert max(len(line) for line in text.splitlines()) <= width


def test_one_trial_cannot_tell_and_nothing_is_unfair() -> None:
    sweep = REPORTS / "sweep-h100"
    text = render_compare_text(compare([load_group(sweep / "bs-1"), load_group(sweep)]))
    row = next(line for line in text.splitlines() if line.startswith("throughput"))
    assert re.split(r"\s{2,}", row)[-5:] == ["7,150.0", "3.57x", "n/a", "n/a", "n/a"]
    verdict = "Verdict: COMPARABLE: same model and scenario; 1 intended difference, 1 caveat"
    assert verdict in text
    assert (
        "A vs B: B/A = 3.57x (3.57\u00d7 faster) on throughput (samples/s) "
        "(higher is better; n/a, p n/a)"
    ) in text
    assert "  Intended differences (precision, batch size, hardware, runtime):\n" in text
    assert "    - batch size: 1 != 16\n" in text
    assert "    - quick profile on both sides: shortened LoadGen runs" in text
    # a quick profile is always a caveat, even of a result against itself
    a = load_group(sweep / "bs-1")
    same = render_compare_text(compare([a, dataclasses.replace(a, label="again")]))
    assert "0 intended differences, 1 caveat (by pair below)" in same
    assert (
        "Hardware differences (the point of the comparison):\n  - none: the same hardware\n" in text
    )
    assert "Other environment differences" not in text
    assert "latency" not in text  # Offline defines no latency metric


def test_different_scenarios_compare_no_metric() -> None:
    groups = [load_group(REPORTS / name) for name in ("trials-epyc", "trials-xeon", "sweep-h100")]
    text = render_compare_markdown(compare(groups))
    assert (
        "*nothing is compared: the scenarios differ (SingleStream, SingleStream, Offline)" in text
    )
    assert "- trials-epyc vs sweep-h100: scenario: 'SingleStream' != 'Offline'" in text
    assert "| metric |" not in text
