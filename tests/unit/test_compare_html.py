"""compare.html: a self-contained page, verdict first, ratio bars with intervals, numbers right."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from harness.analysis.compare import Comparison, compare
from harness.cli import main
from harness.results.groups import load_group

REPORTS = Path(__file__).resolve().parents[1] / "fixtures" / "reports"


def _epyc_vs_xeon() -> Comparison:
    return compare([load_group(REPORTS / "trials-epyc"), load_group(REPORTS / "trials-xeon")])


def _page(comparison: Comparison) -> str:
    from harness.report.compare_html import render_compare_html

    return render_compare_html(comparison)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _tags(page: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Tags()
    parser.feed(page)
    return parser.tags


def test_the_page_refers_to_nothing_outside_itself() -> None:
    page = _page(_epyc_vs_xeon())
    assert page.startswith("<!DOCTYPE html>")
    assert "http://" not in page and "https://" not in page and "//" not in page.replace("</", "")
    for tag, attrs in _tags(page):
        assert "src" not in attrs or str(attrs["src"]).startswith("data:"), tag
        assert tag not in ("link", "script", "iframe")


def test_the_verdict_is_first_then_the_bars_then_the_table() -> None:
    page = _page(_epyc_vs_xeon())
    verdict = page.index("Verdict: COMPARABLE: same model and scenario")
    assert verdict < page.index('class="headline-ratio">B/A = ') < page.index("<svg")
    assert page.index("<svg") < page.index('<table class="metrics"')
    assert page.index("Intended differences (precision") < page.index("<svg")
    assert page.index("onnxruntime version: &#x27;1.32.0&#x27; != &#x27;1.31.1&#x27;") < page.index(
        "<svg"
    )


def test_each_metric_has_a_ratio_bar_with_its_confidence_interval() -> None:
    c = _epyc_vs_xeon()
    page = _page(c)
    bars = [attrs for tag, attrs in _tags(page) if tag == "rect" and attrs.get("class") == "bar"]
    whiskers = [attrs for tag, attrs in _tags(page) if tag == "line" and attrs.get("class") == "ci"]
    with_values = [row for row in c.rows if row.cells[1].ratio is not None]
    assert len(bars) == len(with_values)
    with_ci = [row for row in with_values if row.cells[1].interval is not None]
    assert len(whiskers) == len(with_ci) > 0
    es = next(row for row in c.rows if row.metric.key == "latency_ns.early_stopping_p90")
    low, high = es.cells[1].interval or (0.0, 0.0)
    assert f"{es.cells[1].ratio:.2f}x" in page and f"{low:.2f}-{high:.2f}" in page


def test_numbers_are_right_aligned() -> None:
    page = _page(_epyc_vs_xeon())
    assert re.search(r"td\.num[^{]*\{[^}]*text-align:\s*right", page)
    cells = re.findall(r'<td class="num">([^<]*)</td>', page)
    assert "2.461" in cells  # trials-epyc's median early-stopping p90, in ms


def test_mismatched_scenarios_draw_no_bar() -> None:
    c = compare([load_group(REPORTS / "trials-epyc"), load_group(REPORTS / "sweep-h100")])
    page = _page(c)
    assert "<svg" not in page and "nothing is compared" in page
    assert page.index("NOT COMPARABLE") < page.index("scenario: ")


def test_compare_out_writes_markdown_and_html(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    groups = [str(REPORTS / "trials-epyc"), str(REPORTS / "trials-xeon")]
    assert main(["compare", *groups, "--out", str(tmp_path / "cmp")]) == 0
    printed = capsys.readouterr().out.strip().splitlines()
    out = tmp_path / "cmp"
    assert printed[-2:] == [str(out / "compare.md"), str(out / "compare.html")]
    assert (out / "compare.html").read_text().startswith("<!DOCTYPE html>")
