"""A comparison as one self-contained HTML page: the verdict, ratio bars with intervals, tables."""

from __future__ import annotations

from harness.analysis.compare import Comparison, Row
from harness.report import safe
from harness.report.compare_bars import figure
from harness.report.compare_render import (
    TIER_TITLES,
    WORDS_LEGEND,
    change_words,
    difference_sections,
    header_cells,
    interval_text,
    judgement,
    legend,
    letters,
    p_text,
    pair_sections,
    row_cells,
    sections,
    verdict,
)

PAGE_CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5rem auto; max-width: 60rem;
  padding: 0 1rem; color: #1a1a1a; line-height: 1.4; }
h1 { font-size: 1.5rem; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25rem 0.6rem; vertical-align: top; }
th { text-align: left; background: #f5f5f5; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
"""
# What the comparison itself needs: the site adds these to its own stylesheet.
CSS = """
.verdict { border-left: 0.4rem solid; padding: 0.5rem 1rem; margin: 1rem 0; }
.verdict.bad { border-color: #c62828; background: #fdecea; }
.verdict.good { border-color: #2e7d32; background: #edf7ed; }
.verdict h2 { margin: 0.2rem 0; font-size: 1.2rem; }
.reference { font-size: 1.05rem; }
table.headline td.change { font-weight: 700; }
table.headline td.better { color: #1b5e20; }
table.headline td.worse { color: #b71c1c; }
figure { margin: 0.5rem 0 1rem; }
figure.ratio.headline figcaption { font-weight: 700; font-size: 1.1rem; }
figure.ratio.secondary figcaption { font-weight: 400; color: #616161; }
.clip-note { color: #444; font-size: 0.9rem; margin: 0; }
svg { max-width: 100%; height: auto; }
svg text { font: 12px system-ui, sans-serif; fill: #1a1a1a; }
.note { color: #444; font-style: italic; }
details.unfairness { margin: 1rem 0; border: 1px solid #ddd; padding: 0.4rem 0.8rem; }
details.unfairness summary { font-weight: 600; cursor: pointer; }
h4.bad { color: #c62828; }
.scroll { max-width: 100%; overflow-x: auto; }
"""


def render_compare_html(c: Comparison) -> str:
    """The whole page: no script, no link, the bars as inline SVG; values escaped (safe.text)."""
    title = f"Comparison: {' vs '.join(c.labels)}"
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            '<head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{safe.text(title)}</title>",
            f"<style>{PAGE_CSS}{CSS}</style></head>",
            "<body>",
            f"<h1>{safe.text(title)}</h1>",
            compare_body(c, reference="the first result given"),
            "</body></html>",
        ]
    )


def compare_body(c: Comparison, reference: str | None = None) -> str:
    """The comparison as HTML, for compare.html and the site's comparison pages alike.

    The verdict, the reference (A; `reference` says why it was chosen), each side's headline
    against it in words, the ratio bars (the headline emphasized), every metric's table, the
    sides; the differences between them (unfair, intended, caveats, hardware) come last,
    folded under their count.
    """
    return "\n".join(
        [
            _verdict(c),
            _reference(c, reference),
            *_headline(c),
            *_bars(c),
            *_tables(c),
            "<h2>Sides</h2>",
            _sides(c),
            _unfairness(c),
        ]
    )


def _verdict(c: Comparison) -> str:
    head, reasons = verdict(c)
    items = "".join(f"<li>{safe.text(item)}</li>" for item in reasons)
    note = f'<p class="note">{safe.text(c.nothing_compared)}</p>' if c.nothing_compared else ""
    kind = "good" if c.comparable else "bad"
    return (
        f'<section class="verdict {kind}"><h2>Verdict: {safe.text(head)}</h2>'
        f"<ul>{items}</ul>{note}</section>"
    )


def _reference(c: Comparison, why: str | None) -> str:
    because = f" ({safe.text(why)})" if why else ""
    return (
        f'<p class="reference" id="reference">Reference (A): '
        f"<strong>{safe.text(c.labels[0])}</strong>{because}. Every ratio is against it.</p>"
    )


def headline_row(c: Comparison) -> Row | None:
    """The row of the scenario's headline metric, or None where nothing is compared."""
    return next((r for r in c.rows if r.headline), None)


def _headline(c: Comparison) -> list[str]:
    """One table, a row per side: its headline value and how it reads against A, in words."""
    row = headline_row(c)
    if row is None:
        return []
    names, metric = letters(c), row.metric
    head = ("", "result", metric.title, "against A", f"{c.confidence * 100:g}% CI", "p", "")
    cells = "".join(f"<th>{safe.text(h)}</th>" for h in head)
    body = []
    for i, (label, cell) in enumerate(zip(c.labels, row.cells, strict=True)):
        judged = judgement(metric, cell) if i else ""
        words = "reference" if i == 0 else change_words(metric, cell)
        ci, p = ("", "") if i == 0 else (interval_text(cell), p_text(cell))
        body.append(
            f'<tr data-side="{names[i]}"><th>{names[i]}</th><td>{safe.text(label)}</td>'
            f'<td class="num">{safe.text(metric.format(cell.value))}</td>'
            f'<td class="num change {safe.attribute(judged)}">{safe.text(words)}</td>'
            f'<td class="num">{safe.text(ci)}</td><td class="num">{safe.text(p)}</td>'
            f"<td>{safe.text(judged)}</td></tr>"
        )
    better = "higher" if metric.higher_is_better else "lower"
    return [
        f"<h2>Headline: {safe.text(metric.title)}, {better} is better</h2>",
        f'<div class="scroll"><table class="headline"><tr>{cells}</tr>{"".join(body)}'
        "</table></div>",
    ]


def _unfairness(c: Comparison) -> str:
    """Every difference between the sides, folded under its count (below the numbers)."""
    tiers = pair_sections(c)
    counts = [0, 0, 0]
    for _, _, found in tiers:
        for tier, items in found:
            counts[TIER_TITLES.index(tier)] += len(items)
    summary = (
        f"{sum(counts)} differences between the sides: {counts[0]} not comparable, "
        f"{counts[1]} intended, {counts[2]} caveats (by pair), then the hardware"
    )
    parts = [f'<details class="unfairness" id="differences"><summary>{summary}</summary>']
    for title, ratio, found in tiers:
        parts.append(f"<h3>{safe.text(title)}</h3><p>{safe.text(ratio)}</p>")
        for tier, items in found:
            listed = "".join(f"<li>{safe.text(item)}</li>" for item in items)
            kind = "bad" if tier == TIER_TITLES[0] else "tier"
            parts.append(f'<h4 class="{kind}">{safe.text(tier)}</h4><ul>{listed}</ul>')
    for title, items in difference_sections(c):
        listed = "".join(f"<li>{safe.text(item)}</li>" for item in items)
        parts.append(f"<h3>{safe.text(title.rstrip(':'))}</h3><ul>{listed}</ul>")
    return "".join(parts) + "</details>"


def _sides(c: Comparison) -> str:
    names = letters(c)
    header = "".join(f"<th>{safe.text(n)}</th>" for n in ("", *names))
    rows = [("label", c.labels), *c.info]
    body = "".join(
        f"<tr><th>{safe.text(name)}</th>{''.join(f'<td>{safe.text(v)}</td>' for v in values)}</tr>"
        for name, values in rows
    )
    return f'<div class="scroll"><table class="sides"><tr>{header}</tr>{body}</table></div>'


def _bars(c: Comparison) -> list[str]:
    if not c.rows:
        return []
    out = ["<h2>Ratios against A, with their confidence intervals</h2>"]
    for title, rows in sections(c):
        out.append(f"<h3>{safe.text(title)}</h3>")
        out += [figure(c, row) for row in rows]
    return out


def _tables(c: Comparison) -> list[str]:
    out: list[str] = []
    everyone = list(range(1, len(c.labels)))
    for title, rows in sections(c):
        header = header_cells(c, everyone, words=True)
        out += [
            f"<h2>{safe.text(title)}</h2>",
            _table(header, [row_cells(r, everyone, words=True) for r in rows]),
        ]
    if c.rows:
        out.append(f'<p class="note">{safe.text(legend(c))} {safe.text(WORDS_LEGEND)}</p>')
    return out


def _table(header: list[str], body: list[list[str]]) -> str:
    """Numbers right-aligned: every column but the metric's and the judgements'."""
    text = {0} | {i for i, name in enumerate(header) if name.endswith(" is")}

    def cell(tag: str, i: int, value: str) -> str:
        kind = "" if i in text else ' class="num"'
        return f"<{tag}{kind}>{safe.text(value)}</{tag}>"

    head = "".join(cell("th", i, v) for i, v in enumerate(header))
    rows = "".join(
        "<tr>" + "".join(cell("td", i, v) for i, v in enumerate(row)) + "</tr>" for row in body
    )
    return f'<div class="scroll"><table class="metrics"><tr>{head}</tr>{rows}</table></div>'
