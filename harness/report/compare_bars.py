"""A comparison's ratio bars as inline SVG: the headline emphasized, clipped whiskers marked.

One figure per metric, a bar per side against the reference (A) on a log axis centred on 1x.
The headline metric is drawn in full colour and weight; every other metric is muted, so a
secondary metric's "worse" never outshouts the headline. A headline that is not significant
is drawn in a strong neutral (never the grey of a muted row). A whisker whose interval runs
past the axis (or has a bound at or below zero, which a log axis cannot place) ends in an
arrow, and the figure says which bound was clipped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from harness.analysis.compare import Cell, Comparison, Row
from harness.report import safe
from harness.report.compare_render import change_words, interval_text, judgement, letters

SVG_WIDTH = 800
PLOT_LEFT = 40
PLOT_RIGHT = 430
BAR_HEIGHT = 16
ROW_HEIGHT = 26
AXIS_HEIGHT = 22
MIN_SPAN = math.log(1.25)  # the axis shows at least 0.8x to 1.25x
MAX_SPAN = math.log(20.0)  # and at most 1/20x to 20x: beyond, whiskers are clipped and marked
HEADLINE_COLOURS = {"better": "#1b5e20", "worse": "#b71c1c", "n.s.": "#263238", "n/a": "#263238"}
MUTED_COLOURS = {"better": "#a5d6a7", "worse": "#ef9a9a", "n.s.": "#cfd8dc", "n/a": "#e0e0e0"}
ARROW_PX = 6


def figure(c: Comparison, row: Row) -> str:
    """One metric's figure: its caption (bold for the headline), the SVG, clipping notes."""
    better = "higher" if row.metric.higher_is_better else "lower"
    kind = "headline" if row.headline else "secondary"
    lead = "Headline: " if row.headline else ""
    caption = f"{lead}{row.metric.title}, {better} is better"
    span = _span(row.cells[1:])
    notes = clipped_notes(c, row, span)
    note = "".join(f'<p class="clip-note">{safe.text(n)}</p>' for n in notes)
    return (
        f'<figure class="ratio {kind}"><figcaption>{safe.text(caption)}</figcaption>'
        f"{_svg(c, row, span)}{note}</figure>"
    )


def clipped_notes(c: Comparison, row: Row, span: float) -> list[str]:
    """A line per side whose interval the axis cuts: which bound, and its value."""
    names = letters(c)
    out = []
    for i, cell in enumerate(row.cells[1:], start=1):
        cut = _clipped(cell.interval, span) if cell.ratio is not None else (False, False)
        if cut[0] or cut[1]:
            ends = (
                "both ends (arrows)"
                if all(cut)
                else f"its {'lower' if cut[0] else 'upper'} end (arrow)"
            )
            shown = interval_text(cell)
            what = "is unbounded" if shown == "unbounded" else f"{shown} runs past the axis"
            out.append(
                f"{names[i]}: the interval {what} at {ends}: a log axis cannot show a bound "
                "at or below zero, or beyond its range"
            )
    return out


def _svg(c: Comparison, row: Row, span: float) -> str:
    names = letters(c)
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
    return min(max([MIN_SPAN, *logs]) * 1.1, MAX_SPAN)


def _x(ratio: float, span: float) -> float:
    clipped = min(max(math.log(ratio), -span), span) if ratio > 0 else -span
    return PLOT_LEFT + (clipped + span) / (2 * span) * (PLOT_RIGHT - PLOT_LEFT)


def _clipped(interval: tuple[float, float] | None, span: float) -> tuple[bool, bool]:
    """(lower, upper): whether each bound of the interval lies past the axis."""
    if interval is None:
        return False, False
    low, high = interval
    low_cut = low <= 0 or math.log(low) < -span
    high_cut = high == math.inf or (high > 0 and math.log(high) > span)
    return low_cut, high_cut


def _bar(name: str, row: Row, cell: Cell, top: int, span: float) -> list[str]:
    mid = top + BAR_HEIGHT / 2
    judged = judgement(row.metric, cell)
    label = f"{change_words(row.metric, cell)}  CI {interval_text(cell)}  {judged}"
    if cell.ratio is None:
        label = "n/a: no value on one side"
    weight = ' font-weight="700"' if row.headline else ' fill="#616161"'
    parts = [f'<text x="4" y="{mid + 4:.1f}"{weight}>{safe.text(name)}</text>']
    if cell.ratio is not None and cell.ratio > 0:
        one, end = _x(1.0, span), _x(cell.ratio, span)
        colour = (HEADLINE_COLOURS if row.headline else MUTED_COLOURS)[judged]
        parts.append(
            f'<rect class="bar" data-judged="{safe.attribute(judged)}" x="{min(one, end):.1f}" '
            f'y="{top}" width="{max(abs(end - one), 1.0):.1f}" height="{BAR_HEIGHT}" '
            f'fill="{colour}"/>'
        )
    if cell.interval is not None and cell.ratio is not None:
        parts += _whisker(cell.interval, mid, span, row.headline)
    parts.append(f'<text x="{PLOT_RIGHT + 10}" y="{mid + 4:.1f}"{weight}>{safe.text(label)}</text>')
    return parts


def _whisker(interval: tuple[float, float], mid: float, span: float, strong: bool) -> list[str]:
    low, high = (_x(b, span) for b in interval)
    colour = "#000" if strong else "#757575"
    style = f'stroke="{colour}" stroke-width="1.5"'
    parts = [
        f'<line class="ci" x1="{low:.1f}" y1="{mid:.1f}" x2="{high:.1f}" y2="{mid:.1f}" {style}/>'
    ]
    cut = _clipped(interval, span)
    for x, clipped, toward in ((low, cut[0], -1), (high, cut[1], 1)):
        if clipped:  # an arrow pointing off the axis, not a cap that pretends to be the bound
            tip = x + toward * ARROW_PX
            parts.append(
                f'<polygon class="clipped" points="{x:.1f},{mid - 4:.1f} {tip:.1f},{mid:.1f} '
                f'{x:.1f},{mid + 4:.1f}" fill="{colour}"/>'
            )
        else:
            parts.append(
                f'<line x1="{x:.1f}" y1="{mid - 5:.1f}" x2="{x:.1f}" y2="{mid + 5:.1f}" {style}/>'
            )
    return parts


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
