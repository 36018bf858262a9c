"""Printed outputs agree: one warning count for a group everywhere; show lists every trial."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.analysis.groups import distinct_warnings, group_warnings, warning_count
from harness.cli import main
from harness.files import mark_incomplete
from harness.report.document import build_report
from harness.report.summary import SUMMARY_HEADER
from harness.results.groups import load_group
from harness.site.build import build_site
from tests.unit.test_site import REPORTS, _results


def test_a_groups_warnings_are_counted_once_on_the_site_and_in_its_report(
    tmp_path: Path,
) -> None:
    group = load_group(REPORTS / "trials-epyc")
    placed = group_warnings(group)
    # each trial says the same quick-profile warning: three placed, one to read
    assert len(placed) > warning_count(group) == len({text for _, text in placed}) > 0
    site = build_site([_results(tmp_path / "results", ("trials-epyc",))], tmp_path / "site")
    row = next(r for b in site.boards for r in b.rows if r.label == "trials-epyc")
    assert row.warnings == warning_count(group)
    table = next(b for b in build_report([group]) if getattr(b, "header", None) == SUMMARY_HEADER)
    column = SUMMARY_HEADER.index("warnings")
    assert [r[column] for r in table.rows] == [str(warning_count(group))]  # type: ignore[attr-defined]


def test_show_prints_the_same_count_and_every_warning_it_counts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    group = load_group(REPORTS / "trials-epyc")
    assert main(["show", str(REPORTS / "trials-epyc")]) == 0
    out = capsys.readouterr().out
    count = warning_count(group)
    assert f"  {count} warnings in all, each distinct one counted once" in out
    for text in distinct_warnings(group):  # each one the report lists, show prints too
        assert text in out


def test_show_lists_an_incomplete_trial_marked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    group = tmp_path / "trials-xeon"
    shutil.copytree(REPORTS / "trials-xeon", group)
    (group / "trial-3").mkdir()
    mark_incomplete(group / "trial-3", "interrupted by SIGINT during the timed test", 130)
    assert main(["show", str(group)]) == 0
    lines = capsys.readouterr().out.splitlines()
    runs = lines[lines.index("  runs:") + 1 :]
    assert [line.split()[:2] for line in runs] == [
        ["trial-1", "VALID"],
        ["trial-2", "VALID"],
        ["trial-3", "INCOMPLETE"],
    ]
    assert "no result: interrupted by SIGINT during the timed test" in runs[2]
    assert load_group(group).runs.unfinished[0].path == group / "trial-3"


def test_a_directory_without_a_marker_is_not_a_trial(tmp_path: Path) -> None:
    group = tmp_path / "trials-xeon"
    shutil.copytree(REPORTS / "trials-xeon", group)
    (group / "notes").mkdir()  # a user's folder beside the trials: neither listed nor read
    assert load_group(group).runs.unfinished == ()


def test_the_site_lists_an_incomplete_trial_among_the_raw_files(tmp_path: Path) -> None:
    results = tmp_path / "results"
    group = results / "runs" / "trials-xeon"
    shutil.copytree(REPORTS / "trials-xeon", group)
    (group / "trial-3").mkdir()
    mark_incomplete(group / "trial-3", "interrupted by SIGINT during the timed test", 130)
    site = build_site([results], tmp_path / "site")
    entry = next(e for e in site.entries if e.title == "trials-xeon")
    page = (site.index.parent / "entries" / entry.slug / "index.html").read_text()
    assert "trials-xeon / trial-3 (INCOMPLETE: interrupted by SIGINT during the timed test)" in (
        page
    )
    assert 'href="data/trials-xeon/trial-3/INCOMPLETE"' in page
    report = (site.index.parent / "entries" / entry.slug / "report" / "report.md").read_text()
    assert "| trial-3 | INCOMPLETE: interrupted by SIGINT during the timed test |" in report
