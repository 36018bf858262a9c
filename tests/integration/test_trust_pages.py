"""Trust on every page, from a mixed tree of real runs (tests/trust_tree.py): show, site, compare.

The site's pages are parsed as HTML: each leaderboard row's tier and badges (data-trust,
data-level) are read from the markup, not searched for as text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import NOT_COMPARABLE
from harness.site.build import build_site
from tests.trust_tree import FOUNDERS, Tree, build_tree

pytestmark = pytest.mark.slow
LABEL_CELL, LOADGEN_CELL = 2, 9  # the leaderboard's result and LoadGen columns, from 1


@dataclass
class Row:
    """One leaderboard row as the page has it."""

    board: str
    tier: str
    label: str = ""
    loadgen: str = ""
    badges: dict[str, tuple[str, str]] = field(default_factory=dict)  # key -> (text, level)


class Boards(HTMLParser):
    """Every leaderboard row: its board, tier, result's label and badges."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[Row] = []
        self._board = ""
        self._row: Row | None = None
        self._in: str | None = None  # "label" or a badge key
        self._level = ""
        self._cell = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table" and "leaderboard" in (a.get("class") or ""):
            self._board = a.get("id") or ""
        elif tag == "tr" and (a.get("class") or "").startswith("tier-"):
            self._row = Row(board=self._board, tier=(a.get("class") or "")[5:])
            self._cell = 0
        elif tag == "td" and self._row is not None:
            self._cell += 1
        elif tag == "a" and self._row is not None and self._cell == LABEL_CELL:
            self._in = "label"
        elif tag == "span" and self._row is not None and a.get("data-trust"):
            self._in, self._level = a.get("data-trust"), a.get("data-level") or ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None
        elif tag in ("a", "span"):
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._row is not None and self._cell == LOADGEN_CELL:
            self._row.loadgen += data
        if self._row is None or self._in is None:
            return
        if self._in == "label":
            self._row.label += data
        else:
            text, _ = self._row.badges.get(self._in, ("", ""))
            self._row.badges[self._in] = (text + data, self._level)


def boards(page: Path) -> list[Row]:
    parser = Boards()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser.rows


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Tree:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BEYOND_TOPS_CACHE", str(model_cache))
        return build_tree(tmp_path_factory.mktemp("trust"))


@pytest.fixture(scope="module")
def site(tree: Tree, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("trust-site") / "site"
    build_site([tree.root], out, trust=tree.trusted, judge=tree.judge)
    return out


def _row(rows: list[Row], name: str) -> Row:
    (found,) = [r for r in rows if name in r.label]
    return found


def test_the_leaderboard_ranks_by_tier_and_shows_each_status(tree: Tree, site: Path) -> None:
    rows = boards(site / "index.html")
    tiny_ss = [r for r in rows if r.board == "lb-tiny-singlestream"]
    # submission-valid, then quick profile, then what failed a check, then the interrupted
    assert [r.tier for r in tiny_ss] == [
        "submission-valid",
        "quick-profile",
        "failed-a-check",
        "incomplete",
    ]
    assert [r.label for r in tiny_ss][::3] == [tree.submission.name, tree.interrupted.name]
    submission = _row(tiny_ss, tree.submission.name)
    assert submission.badges["profile"] == ("submission-valid", "good")
    quick = _row(tiny_ss, tree.quick.name)
    assert quick.badges["profile"] == ("quick profile", "warn")
    cheat = _row(tiny_ss, tree.cheat.name)
    assert cheat.badges["physics"] == ("IMPLAUSIBLE", "bad")
    interrupted = _row(tiny_ss, tree.interrupted.name)
    assert interrupted.badges["incomplete"] == ("INCOMPLETE", "bad")
    assert interrupted.loadgen == "INCOMPLETE (1 of 2 runs)"  # never "VALID"
    assert quick.loadgen == "VALID"
    for row in (submission, quick, cheat, interrupted):
        assert row.badges["bundle"] == ("not verified", "info")
        assert "TEST01" not in row.badges  # the tiny model needs no compliance test
    page = (site / "index.html").read_text(encoding="utf-8")
    assert "1 of 2 trials; interrupted: trial-2 interrupted (Ctrl-C)" in page  # its tooltip


def test_the_shipped_result_shows_its_failed_compliance_tests(site: Path) -> None:
    (shipped,) = [r for r in boards(site / "index.html") if r.board == "lb-resnet50-singlestream"]
    assert shipped.tier == "failed-a-check"
    assert shipped.badges["TEST01"] == ("TEST01 FAIL", "bad")
    assert shipped.badges["TEST04"] == ("TEST04 FAIL", "bad")
    assert shipped.badges["bundle"] == ("verified, trusted signer", "good")


def test_the_reproduced_bundle_and_its_reproduction_show_the_verdict(
    tree: Tree, site: Path
) -> None:
    verdict = json.loads((tree.reproduction / "reproduction.json").read_text())["verdict"]
    level = "good" if verdict == "REPRODUCED" else "bad"
    offline = [r for r in boards(site / "index.html") if r.board == "lb-tiny-offline"]
    assert len(offline) == 2
    for row in offline:  # the bundled run, and the reproduction group about it
        assert row.badges["reproduction"] == (verdict, level)
    bundled = next(r for r in offline if r.badges["bundle"][0] != "not verified")
    assert bundled.badges["bundle"] == ("verified, trusted signer", "good")


def test_entry_pages_show_the_headline_number_and_its_verdicts(tree: Tree, site: Path) -> None:
    entries = sorted((site / "entries").glob("*/index.html"))
    page = next(p for p in entries if tree.interrupted.name.lower() in p.parent.name)
    text = page.read_text(encoding="utf-8")
    assert '<span class="headline-value">' in text and "early-stopping p90 latency" in text
    assert 'data-tier="incomplete"' in text
    assert 'data-trust="incomplete" data-level="bad"' in text
    shipped = next(p for p in entries if "resnet50-open" in p.parent.name)
    text = shipped.read_text(encoding="utf-8")
    assert 'data-trust="TEST04" data-level="bad"' in text and "TEST04 FAIL" in text


def test_show_says_each_status(tree: Tree, capsys: pytest.CaptureFixture[str]) -> None:
    def show(*args: str) -> str:
        capsys.readouterr()
        assert main(["show", *args]) == 0
        return str(capsys.readouterr().out)

    out = show(str(tree.interrupted))
    assert "  trust       incomplete: quick profile | LoadGen VALID | INCOMPLETE" in out
    assert "INCOMPLETE (1 of 2 trials; interrupted: trial-2 interrupted (Ctrl-C)" in out
    assert "trust       submission-valid: submission-valid" in show(str(tree.submission))
    shipped = show(str(tree.shipped), "--trust", str(FOUNDERS))
    assert "TEST01 FAIL" in shipped and "TEST04 FAIL" in shipped
    assert "verified, trusted signer" in shipped
    unchecked = show(str(tree.shipped))
    assert "verified, signer NOT checked" in unchecked
    verdict = json.loads((tree.reproduction / "reproduction.json").read_text())["verdict"]
    assert f"| {verdict}" in show(str(tree.reproduction))


def test_compare_exits_33_only_when_not_comparable(
    tree: Tree, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["compare", str(tree.submission), str(tree.quick)]) == 0
    out = capsys.readouterr().out
    assert "Verdict: COMPARABLE: same model and scenario" in out
    assert "A vs B: B/A = " in out and "Caveats" in out
    assert "profile: 'submission' != 'quick'" in out
    code = main(["compare", str(tree.quick), str(tree.reproduction)])
    out = capsys.readouterr().out
    assert code == NOT_COMPARABLE.code == 33, out
    assert "Verdict: NOT COMPARABLE" in out
    assert "Not comparable (another model or scenario):" in out
    assert "scenario: 'SingleStream' != 'Offline'" in out
