"""The site's comparison pages: compare.html's renderer, a local reference, duplicates once."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import ERROR_CODES, ResultError
from harness.site.build import Site, build_site
from harness.site.comparisons import comparison_sides, deduplicated, pick_reference
from tests.unit.test_site import _results

NEWEST_VALID = "the newest local result that is VALID and complete"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Site:
    """Two tiny SingleStream trials groups (xeon incomplete), a sweep, published records."""
    root = tmp_path_factory.mktemp("site-compare")
    results = _results(root / "results", ("trials-epyc", "trials-xeon", "sweep-h100"))
    return build_site([results], root / "site")


def _page(site: Site, slug: str) -> str:
    return (site.index.parent / "compare" / slug / "index.html").read_text(encoding="utf-8")


def test_the_page_is_compare_html_with_a_local_reference_not_a_pre_dump(built: Site) -> None:
    page = _page(built, "tiny-singlestream")
    assert "<pre>" not in page
    reference = re.search(r'<p class="reference" id="reference">(.*?)</p>', page)
    assert reference is not None
    # trials-xeon is faster but incomplete: the complete, VALID group is the reference
    assert "<strong>trials-epyc</strong>" in reference.group(1)
    assert NEWEST_VALID in reference.group(1)
    rows = re.findall(
        r'<tr data-side="([A-Z])"><th>[A-Z]</th><td>([^<]*)</td>.*?'
        r'<td class="num change[^"]*">([^<]*)</td>',
        page,
    )
    assert rows == [("A", "trials-epyc", "reference"), ("B", "trials-xeon", "1.28\u00d7 faster")]
    assert page.index('<table class="headline">') < page.index('<details class="unfairness"')
    assert page.index('<table class="metrics"') < page.index("Intended differences (precision")
    assert "only results of the same scenario are compared" in page
    boards = json.loads((built.index.parent / "site.json").read_text())["boards"]
    ss = next(b for b in boards if (b["model"], b["scenario"]) == ("tiny", "SingleStream"))
    assert (ss["reference"], ss["reference_rule"]) == ("trials-epyc", NEWEST_VALID)


def test_a_board_of_published_records_only_says_so(built: Site) -> None:
    page = _page(built, "resnet50-offline")
    assert "no local result on this board: its first published record" in page


def test_the_reference_can_be_chosen(tmp_path: Path) -> None:
    results = _results(tmp_path / "results", ("trials-epyc", "trials-xeon"))
    xeon = results / "runs" / "trials-xeon"
    site = build_site([results], tmp_path / "site", reference=[xeon])
    page = _page(site, "tiny-singlestream")
    assert "<strong>trials-xeon</strong> (chosen with --reference)" in page
    rows = re.findall(r'<tr data-side="([A-Z])"><th>[A-Z]</th><td>([^<]*)</td>', page)
    assert rows == [("A", "trials-xeon"), ("B", "trials-epyc")]
    # a reference on another board leaves this one to the rule
    assert NEWEST_VALID not in _page(site, "resnet50-offline")


def test_a_group_and_its_bundle_copy_are_compared_once(built: Site) -> None:
    board = next(b for b in built.boards if b.slug == "tiny-singlestream")
    epyc = next(r for r in board.rows if r.label == "trials-epyc")
    copy = dataclasses.replace(epyc, entry="bundle-epyc", label="trials-epyc [bundle epyc]")
    rows = (copy, *board.rows)  # the bundle's copy ranks first: still the directory stays
    kinds = {"bundle-epyc": "bundle", **{r.entry: "trials" for r in board.rows}}
    kept, dropped = deduplicated(rows, kinds)  # type: ignore[arg-type]
    assert [r.label for r in kept] == ["trials-epyc", "trials-xeon"]
    assert dropped == ["trials-epyc [bundle epyc]: the same runs as trials-epyc, compared once"]
    sides = comparison_sides(dataclasses.replace(board, rows=rows), kinds, {})  # type: ignore[arg-type]
    assert [r.label for r in sides.rows] == ["trials-epyc", "trials-xeon"]
    assert sides.dropped == tuple(dropped)


def test_only_published_records_make_the_reference_a_published_one(built: Site) -> None:
    board = next(b for b in built.boards if b.slug == "tiny-singlestream")
    row, why = pick_reference(board.rows, {}, ())
    assert row.label == "trials-epyc" and why == NEWEST_VALID
    incomplete = [r for r in board.rows if r.label == "trials-xeon"]
    row, why = pick_reference(incomplete, {}, ())
    assert row.label == "trials-xeon" and "none is VALID and complete" in why


def test_the_cli_takes_a_reference_and_refuses_one_it_cannot_find(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = _results(tmp_path / "results", ("trials-epyc", "trials-xeon"))
    xeon = results / "runs" / "trials-xeon"
    out = tmp_path / "site"
    assert main(["site", str(results), "--out", str(out), "--reference", str(xeon)]) == 0
    assert "<strong>trials-xeon</strong> (chosen with --reference)" in _page_at(out)
    typo = results / "runs" / "trials-xenon"
    capsys.readouterr()
    code = main(["site", str(results), "--out", str(tmp_path / "other"), "--reference", str(typo)])
    err = capsys.readouterr().err
    assert code == ERROR_CODES[ResultError].code
    assert f"error: {typo}: --reference names no result found under {results}" in err
    assert not (tmp_path / "other").exists()


def _page_at(site: Path) -> str:
    return (site / "compare" / "tiny-singlestream" / "index.html").read_text(encoding="utf-8")
