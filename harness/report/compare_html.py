"""A comparison as one self-contained HTML page: the verdict, ratio bars with intervals, tables."""

from __future__ import annotations

import math
from collections.abc import Sequence

from harness.analysis.compare import Cell, Comparison, Row
from harness.report import safe
from harness.report.compare_render import (
    TIER_TITLES,
    difference_sections,
    header_cells,
    interval_text,
    judgement,
    legend,
    letters,
    pair_sections,
    ratio_text,
    row_cells,
    sections,
    verdict,
)

# Inline SVG geometry (CSS pixels; vector, so sharp at any device pixel ratio)
SVG_WIDTH = 640
PLOT_LEFT = 40
PLOT_RIGHT = 430
BAR_HEIGHT = 16
ROW_HEIGHT = 26
AXIS_HEIGHT = 22
MIN_SPAN = math.log(1.25)  # the axis shows at least 0.8x to 1.25x
COLOURS = {"better": "#2e7d32", "worse": "#c62828", "n.s.": "#757575", "n/a": "#9e9e9e"}

CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5rem auto; max-width: 60rem;
  padding: 0 1rem; color: #1a1a1a; line-height: 1.4; }
h1 { font-size: 1.5rem; }
.verdict { border-left: 0.4rem solid; padding: 0.5rem 1rem; margin: 1rem 0; }
.verdict.bad { border-color: #c62828; background: #fdecea; }
.verdict.good { border-color: #2e7d32; background: #edf7ed; }
.verdict h2 { margin: 0.2rem 0; font-size: 1.2rem; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25rem 0.6rem; vertical-align: top; }
th { text-align: left; background: #f5f5f5; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
figure { margin: 0.5rem 0 1rem; }
figcaption { font-weight: 600; }
svg { max-width: 100%; height: auto; }
svg text { font: 12px system-ui, sans-serif; fill: #1a1a1a; }
.note { color: #444; font-style: italic; }
.headline-ratio { font-size: 1.4rem; font-weight: 700; margin: 0.3rem 0; }
h3.bad { color: #c62828; }
"""


def render_compare_html(c: Comparison) -> str:
    """The whole page: no script, no link, the bars as inline SVG; values escaped (safe.text)."""
    title = f"Comparison: {' vs '.join(c.labels)}"
    body = [
        f"<h1>{safe.text(title)}</h1>",
        _verdict(c),
        *_pairs(c),
        "<h2>Sides</h2>",
        _sides(c),
        *_bars(c),
        *_tables(c),
        *_differences(c),
    ]
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            '<head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{safe.text(title)}</title>",
            f"<style>{CSS}</style></head>",
            "<body>",
            *body,
            "</body></html>",
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


def _pairs(c: Comparison) -> list[str]:
    """Per pair: the headline ratio, large, then its differences in their tiers."""
    out = []
    for title, ratio, tiers in pair_sections(c):
        parts = [
            f'<section class="pair"><h2>{safe.text(title)}</h2>'
            f'<p class="headline-ratio">{safe.text(ratio)}</p>'
        ]
        for tier, items in tiers:
            listed = "".join(f"<li>{safe.text(item)}</li>" for item in items)
            kind = "bad" if tier == TIER_TITLES[0] else "tier"
            parts.append(f'<h3 class="{kind}">{safe.text(tier)}</h3><ul>{listed}</ul>')
        out.append("".join(parts) + "</section>")
    return out


def _sides(c: Comparison) -> str:
    names = letters(c)
    header = "".join(f"<th>{safe.text(n)}</th>" for n in ("", *names))
    rows = [("label", c.labels), *c.info]
    body = "".join(
        f"<tr><th>{safe.text(name)}</th>{''.join(f'<td>{safe.text(v)}</td>' for v in values)}</tr>"
        for name, values in rows
    )
    return f'<table class="sides"><tr>{header}</tr>{body}</table>'


def _bars(c: Comparison) -> list[str]:
    if not c.rows:
        return []
    out = ["<h2>Ratios against A, with their confidence intervals</h2>"]
    for title, rows in sections(c):
        out.append(f"<h3>{safe.text(title)}</h3>")
        out += [_figure(c, row) for row in rows]
    return out


def _figure(c: Comparison, row: Row) -> str:
    caption = (
        f"{row.metric.title}, {'higher' if row.metric.higher_is_better else 'lower'} is better"
    )
    return f"<figure><figcaption>{safe.text(caption)}</figcaption>{_svg(c, row)}</figure>"


def _svg(c: Comparison, row: Row) -> str:
    """One bar per side against A on a log axis centred on 1x, its interval as a whisker."""
    names = letters(c)
    span = _span(row.cells[1:])
    height = ROW_HEIGHT * (len(row.cells) - 1) + AXIS_HEIGHT
    parts = [
        f'<svg role="img" viewBox="0 0 {SVG_WIDTH} {height}" width="{SVG_WIDTH}" '
        f'height="{height}"><title>{safe.text(row.metric.title)}: ratio to A</title>'
    ]
    for i, cell in enumerate(row.cells[1:], start=1):
        top = ROW_HEIGHT * (i - 1) + 4
        parts += _bar(names[i], row, cell, top, span)
    parts += _axis(span, ROW_HEIGHT * (len(row.cells) - 1))
    return "".join(parts) + "</svg>"


def _span(cells: Sequence[Cell]) -> float:
    logs = [abs(math.log(cell.ratio)) for cell in cells if cell.ratio and cell.ratio > 0]
    for cell in cells:
        bounds = cell.interval or ()
        logs += [abs(math.log(b)) for b in bounds if 0 < b < math.inf]
    return max([MIN_SPAN, *logs]) * 1.1


def _x(ratio: float, span: float) -> float:
    clipped = min(max(math.log(ratio), -span), span) if ratio > 0 else -span
    return PLOT_LEFT + (clipped + span) / (2 * span) * (PLOT_RIGHT - PLOT_LEFT)


def _bar(name: str, row: Row, cell: Cell, top: int, span: float) -> list[str]:
    mid = top + BAR_HEIGHT / 2
    label = f"{ratio_text(cell)}  CI {interval_text(cell)}  {judgement(row.metric, cell)}"
    if cell.ratio is None:
        label = "n/a: no value on one side"
    parts = [f'<text x="4" y="{mid + 4:.1f}">{safe.text(name)}</text>']
    if cell.ratio is not None and cell.ratio > 0:
        one, end = _x(1.0, span), _x(cell.ratio, span)
        colour = COLOURS[judgement(row.metric, cell)]
        parts.append(
            f'<rect class="bar" x="{min(one, end):.1f}" y="{top}" '
            f'width="{max(abs(end - one), 1.0):.1f}" height="{BAR_HEIGHT}" fill="{colour}"/>'
        )
    if cell.interval is not None and cell.ratio is not None:
        parts += _whisker(cell.interval, mid, span)
    parts.append(f'<text x="{PLOT_RIGHT + 10}" y="{mid + 4:.1f}">{safe.text(label)}</text>')
    return parts


def _whisker(interval: tuple[float, float], mid: float, span: float) -> list[str]:
    low, high = (_x(b, span) for b in interval)  # infinite bounds: clipped to the axis ends
    style = 'stroke="#000" stroke-width="1.5"'
    return [
        f'<line class="ci" x1="{low:.1f}" y1="{mid:.1f}" x2="{high:.1f}" y2="{mid:.1f}" {style}/>',
        *(
            f'<line x1="{x:.1f}" y1="{mid - 5:.1f}" x2="{x:.1f}" y2="{mid + 5:.1f}" {style}/>'
            for x in (low, high)
        ),
    ]


def _axis(span: float, y: int) -> list[str]:
    ticks = [math.exp(-span), 1.0, math.exp(span)]
    parts = [
        f'<line x1="{PLOT_LEFT}" y1="{y}" x2="{PLOT_RIGHT}" y2="{y}" stroke="#999"/>',
        f'<line x1="{_x(1.0, span):.1f}" y1="0" x2="{_x(1.0, span):.1f}" y2="{y}" '
        'stroke="#555" stroke-dasharray="3,3"/>',
    ]
    for tick in ticks:
        x = _x(tick, span)
        parts.append(f'<text x="{x:.1f}" y="{y + 15}" text-anchor="middle">{tick:.2f}x</text>')
    return parts


def _tables(c: Comparison) -> list[str]:
    out: list[str] = []
    everyone = list(range(1, len(c.labels)))
    for title, rows in sections(c):
        header = header_cells(c, everyone)
        out += [
            f"<h2>{safe.text(title)}</h2>",
            _table(header, [row_cells(r, everyone) for r in rows]),
        ]
    if c.rows:
        out.append(f'<p class="note">{safe.text(legend(c))}</p>')
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
    return f'<table class="metrics"><tr>{head}</tr>{rows}</table>'


def _differences(c: Comparison) -> list[str]:
    out: list[str] = []
    for title, items in difference_sections(c):
        listed = "".join(f"<li>{safe.text(item)}</li>" for item in items)
        out.append(f"<h2>{safe.text(title.rstrip(':'))}</h2><ul>{listed}</ul>")
    return out
