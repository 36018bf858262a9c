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


def test_the_numbers_come_first_and_the_differences_fold_below_them() -> None:
    page = _page(_epyc_vs_xeon())
    verdict = page.index("Verdict: COMPARABLE: same model and scenario")
    assert verdict < page.index('<table class="headline">') < page.index("<svg")
    assert page.index("<svg") < page.index('<table class="metrics"')
    folded = page.index('<details class="unfairness"')
    assert page.index('<table class="metrics"') < folded
    assert folded < page.index("Intended differences (precision")
    assert folded < page.index("onnxruntime version: &#x27;1.32.0&#x27; != &#x27;1.31.1&#x27;")
    summary = re.search(r'<details class="unfairness"[^>]*><summary>([^<]*)</summary>', page)
    assert summary is not None
    assert summary.group(1).startswith(
        "3 differences between the sides: 0 not comparable, 2 intended, 1 caveats"
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
    assert f"[{low:.2f}, {high:.2f}]" in page and f"{low:.2f}-{high:.2f}" not in page
    # lower is better: B's p90 at 0.78x of A's is 1.28x faster, said so in words
    assert f"{1 / (es.cells[1].ratio or 1):.2f}\u00d7 faster" in page


def test_the_headline_is_emphasized_and_secondary_metrics_muted() -> None:
    from harness.report.compare_bars import HEADLINE_COLOURS, MUTED_COLOURS

    page = _page(_epyc_vs_xeon())
    figures = re.findall(r'<figure class="ratio (headline|secondary)">(.*?)</figure>', page)
    assert [kind for kind, _ in figures].count("headline") == 1 and figures[0][0] == "headline"
    fills = [
        re.findall(r'class="bar" data-judged="([^"]+)"[^>]*fill="([^"]+)"', body)
        for _, body in figures
    ]
    headline = fills[0][0]
    assert headline == ("better", HEADLINE_COLOURS["better"])
    for found in fills[1:]:  # utilization of peak is worse: red, but muted
        assert all(fill == MUTED_COLOURS[judged] for judged, fill in found)
    assert ("worse", MUTED_COLOURS["worse"]) in [f for found in fills[1:] for f in found]


def test_a_not_significant_headline_is_not_grey() -> None:
    from harness.analysis.compare import Cell, Row
    from harness.records.metrics import THROUGHPUT
    from harness.report.compare_bars import HEADLINE_COLOURS, MUTED_COLOURS, figure

    c = _epyc_vs_xeon()
    cells = (
        Cell(values=(1.0, 1.1), value=1.0, ratio=1.0, p_value=None, significant=None),
        Cell(
            values=(1.0, 1.2),
            value=1.06,
            ratio=1.06,
            p_value=0.4,
            significant=False,
            interval=(0.9, 1.2),
        ),
    )
    shown = figure(c, Row(metric=THROUGHPUT, cells=cells, headline=True))
    assert 'data-judged="n.s." x=' in shown and HEADLINE_COLOURS["n.s."] in shown
    assert MUTED_COLOURS["n.s."] not in shown and "#757575" not in shown.split("<text")[0]


def test_a_whisker_past_the_axis_ends_in_an_arrow_and_a_note() -> None:
    from harness.analysis.compare import Cell, Row
    from harness.records.metrics import THROUGHPUT
    from harness.report.compare_bars import figure

    c = _epyc_vs_xeon()
    reference = Cell(values=(1.0, 1.1), value=1.0, ratio=1.0, p_value=None, significant=None)
    # Fieller's interval with a negative lower bound: a log axis cannot place it
    noisy = Cell(
        values=(0.2, 1.9),
        value=1.06,
        ratio=1.06,
        p_value=0.9,
        significant=False,
        interval=(-0.03, 1.14),
    )
    shown = figure(c, Row(metric=THROUGHPUT, cells=(reference, noisy), headline=True))
    assert shown.count('class="clipped"') == 1
    assert "B: the interval [-0.03, 1.14] runs past the axis at its lower end (arrow)" in shown
    assert "-0.03-1.14" not in shown
    tight = Cell(
        values=(1.0, 1.1),
        value=1.06,
        ratio=1.06,
        p_value=0.4,
        significant=False,
        interval=(1.01, 1.11),
    )
    clean = figure(c, Row(metric=THROUGHPUT, cells=(reference, tight), headline=True))
    assert 'class="clipped"' not in clean and "runs past the axis" not in clean


def test_ratios_read_in_words_with_the_catalogue_direction() -> None:
    from harness.analysis.compare import Cell
    from harness.records.metrics import ACCURACY, THROUGHPUT, metric
    from harness.report.compare_render import change_words

    def cell(ratio: float) -> Cell:
        return Cell(values=(1.0,), value=ratio, ratio=ratio, p_value=None, significant=None)

    p90 = metric("latency_ns.p90")
    assert change_words(THROUGHPUT, cell(1.8)) == "1.80\u00d7 faster"
    assert change_words(THROUGHPUT, cell(0.88)) == "\u221212.0 % (slower)"
    assert change_words(p90, cell(0.5)) == "2.00\u00d7 faster"  # latency halved
    assert change_words(p90, cell(0.88)) == "\u221212.0 % (faster)"
    assert change_words(p90, cell(2.5)) == "2.50\u00d7 slower"
    assert change_words(ACCURACY[0], cell(0.97)) == "\u22123.0 % (worse)"
    assert change_words(THROUGHPUT, cell(1.0)).startswith("same")
    assert change_words(THROUGHPUT, cell(1 / 19674.2)) == "19,674\u00d7 slower"


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
