"""A comparison as terminal text or Markdown: the verdict first, then each scenario's metrics."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from harness.analysis.compare import Cell, Comparison, Pair, Row
from harness.records.metrics import Metric
from harness.report import safe

NOT_COMPARABLE = "NOT COMPARABLE"
COMPARABLE = "COMPARABLE"
HARDWARE = "Hardware differences (the point of the comparison):"
ENVIRONMENT = "Other environment differences (shown, not refused):"
NO_PROBLEMS = (
    "nothing: same model, precision, scenario, LoadGen settings, runtime versions and profile"
)
TIER_TITLES = (
    "Not comparable (another model or scenario)",
    "Intended differences (precision, batch size, hardware, runtime)",
    "Caveats (seeds and other LoadGen settings, LoadGen release, quick profile)",
)
EXTRA_TITLE = "Also measured by the harness (not MLPerf metrics of this scenario)"
MIN_LABEL_WIDTH = 12
FACTOR_WORDS = 1.25  # from a quarter better (or 20 % worse) on, a factor reads better than a %
SAME_WITHIN = 0.0005
TIMES = "\u00d7"  # the multiplication sign, as in "1.80\u00d7 faster"
MINUS = "\u2212"  # the minus sign, as in "\u221212.0 %"
GAP = "  "


def letters(c: Comparison) -> tuple[str, ...]:
    """Short names of the sides, A, B, C, …: the table's column names."""
    return tuple(chr(ord("A") + i) if i < 26 else f"S{i + 1}" for i in range(len(c.labels)))


def verdict(c: Comparison) -> tuple[str, tuple[str, ...]]:
    """The verdict's line and its reasons: what makes it not comparable, else the tiers found."""
    if not c.comparable:
        n = len(c.problems)
        verb = "difference makes" if n == 1 else "differences make"
        return (
            f"{NOT_COMPARABLE}: {n} {verb} these results not comparable (model or scenario)",
            c.problems,
        )
    intended = sum(len(p.intended) for p in c.pairs)
    caveats = sum(len(p.caveats) for p in c.pairs)
    if not intended and not caveats:
        return f"{COMPARABLE}: nothing makes this comparison unfair", (NO_PROBLEMS,)
    found = f"{intended} intended difference{'s' * (intended != 1)}, {caveats} caveat" + (
        "s" * (caveats != 1)
    )
    return f"{COMPARABLE}: same model and scenario; {found} (by pair below)", ()


def headline_text(c: Comparison, pair: Pair) -> str:
    """The pair's headline ratio in one line: "B/A = 1.26x on throughput (higher is better)"."""
    names = letters(c)
    head = next((r for r in c.rows if r.headline), None)
    if head is None:
        return f"{names[pair.index]}/{names[0]}: no headline metric shared"
    cell = head.cells[pair.index]
    better = "higher" if head.metric.higher_is_better else "lower"
    judged = judgement(head.metric, cell)
    found = judged if judged in ("n/a", "n.s.") else f"{names[pair.index]} is {judged}"
    return (
        f"{names[pair.index]}/{names[0]} = {ratio_text(cell)} ({change_words(head.metric, cell)}) "
        f"on {head.metric.title} "
        f"({better} is better; {found}, p {p_text(cell)})"
    )


def pair_sections(c: Comparison) -> list[tuple[str, str, list[tuple[str, tuple[str, ...]]]]]:
    """Per pair: its title, its headline ratio, and its tiers that have lines, in tier order."""
    names = letters(c)
    out = []
    for pair in c.pairs:
        title = f"{names[0]} vs {names[pair.index]}"
        tiers = [
            (TIER_TITLES[0], pair.not_comparable),
            (TIER_TITLES[1], pair.intended),
            (TIER_TITLES[2], pair.caveats),
        ]
        out.append((title, headline_text(c, pair), [(t, lines) for t, lines in tiers if lines]))
    return out


def sections(c: Comparison) -> list[tuple[str, tuple[Row, ...]]]:
    """(title, rows): MLPerf's metrics of the shared scenario, then the harness's own."""
    mlperf = tuple(r for r in c.rows if r.mlperf)
    extra = tuple(r for r in c.rows if not r.mlperf)
    found = [(f"MLPerf's metrics for {c.scenario} (the first is its headline)", mlperf)]
    found.append((EXTRA_TITLE, extra))
    return [(title, rows) for title, rows in found if rows]


def ratio_text(cell: Cell) -> str:
    """The ratio to the first side, "1.26x", or "n/a"."""
    return "n/a" if cell.ratio is None else f"{cell.ratio:.2f}x"


def interval_text(cell: Cell) -> str:
    """The ratio's confidence interval, "[1.20, 1.33]", "unbounded", or "n/a" (one trial).

    Brackets, never a dash: a negative bound (Fieller's, for a noisy denominator) would
    otherwise read as a range like "-0.03-1.14".
    """
    if cell.interval is None:
        return "n/a"
    low, high = cell.interval
    if low == float("-inf") or high == float("inf"):
        return "unbounded"
    return f"[{low:.2f}, {high:.2f}]"


def change_words(metric: Metric, cell: Cell) -> str:
    """The ratio as people say it: "1.80x faster", "2.10x slower", "-12 %", "+4.0 %".

    The direction is the catalogue's (Metric.higher_is_better): a latency halved is "2.00x
    faster". Changes under FACTOR_WORDS read as the value's own change in percent, with
    "better" or "worse" (or "faster" or "slower" for a time or a rate) beside it.
    """
    if cell.ratio is None or cell.ratio <= 0:
        return "n/a"
    gain = cell.ratio if metric.higher_is_better else 1 / cell.ratio
    up, down = ("faster", "slower") if metric.speed else ("better", "worse")
    if abs(gain - 1) < SAME_WITHIN:
        return "same (within 0.05 %)"
    if gain >= FACTOR_WORDS or gain <= 1 / FACTOR_WORDS:
        factor, word = (gain, up) if gain > 1 else (1 / gain, down)
        shown = f"{factor:,.0f}" if factor >= 100 else f"{factor:.2f}"
        return f"{shown}{TIMES} {word}"
    percent = (cell.ratio - 1) * 100
    sign = "+" if percent > 0 else MINUS
    return f"{sign}{abs(percent):.1f} % ({up if gain > 1 else down})"


def p_text(cell: Cell) -> str:
    """Welch's two-sided p-value, "<0.001", or "n/a" with fewer than two trials on a side."""
    if cell.p_value is None:
        return "n/a"
    return "<0.001" if cell.p_value < 0.001 else f"{cell.p_value:.3f}"


def judgement(metric: Metric, cell: Cell) -> str:
    """Better or worse than the first side where the difference is significant; else "n.s."."""
    if cell.significant is None or cell.ratio is None:
        return "n/a"
    if not cell.significant or cell.ratio == 1:
        return "n.s."
    return "better" if (cell.ratio > 1) == metric.higher_is_better else "worse"


def legend(c: Comparison) -> str:
    """What the columns mean: medians, ratios, the interval and the test, and their methods."""
    pct = f"{c.confidence * 100:g} %"
    return (
        f"Values: median over the trials. X/A: ratio of the medians to A. {pct} CI: "
        "Fieller's interval for the ratio of the means, with Welch's degrees of freedom "
        "(needs two trials a side). p: Welch's t-test, two-sided. X is: better or worse than "
        f"A where p < {c.alpha:g}, n.s. where not significant."
    )


WORDS_LEGEND = (
    "X vs A: the ratio of the medians in words, the direction the metric's (a lower latency "
    f'is faster): a factor from {FACTOR_WORDS:g} on ("1.80\u00d7 faster"), else the value\'s '
    'change in percent ("\u221212.0 % (slower)").'
)


def side_lines(c: Comparison) -> list[tuple[str, str, str]]:
    """(letter, label, "name value; …") per side, from the info rows."""
    names = letters(c)
    return [
        (
            names[i],
            label,
            "; ".join(f"{name} {values[i]}" for name, values in c.info),
        )
        for i, label in enumerate(c.labels)
    ]


def difference_sections(c: Comparison) -> list[tuple[str, tuple[str, ...]]]:
    """The hardware and other environment differences, after the numbers."""
    found = [(HARDWARE, c.hardware or ("none: the same hardware",))]
    if c.environment:
        found.append((ENVIRONMENT, c.environment))
    return found


def header_cells(c: Comparison, others: Sequence[int], *, words: bool = False) -> list[str]:
    """Column names of a metric table: the first side against each side in `others`.

    `words`: the ratio's column reads "B vs A" (row_cells' words), else "B/A".
    """
    names = letters(c)
    cells = ["metric", names[0]]
    for i in others:
        against = f"{names[i]} vs {names[0]}" if words else f"{names[i]}/{names[0]}"
        cells += [names[i], against, f"{c.confidence * 100:g}% CI", "p"]
        cells.append(f"{names[i]} is")
    return cells


def row_cells(row: Row, others: Sequence[int], *, words: bool = False) -> list[str]:
    """One metric's cells, in header_cells' order; `words`: ratios as change_words says them."""
    metric, reference = row.metric, row.cells[0]
    cells = [metric.title, metric.format(reference.value)]
    for i in others:
        cell = row.cells[i]
        ratio = change_words(metric, cell) if words else ratio_text(cell)
        cells += [metric.format(cell.value), ratio, interval_text(cell), p_text(cell)]
        cells.append(judgement(metric, cell))
    return cells


def render_compare_text(c: Comparison, width: int = 100) -> str:
    """The terminal's view, every line at most `width` columns: verdict, sides, tables."""
    width = max(width, 40)
    head, reasons = verdict(c)
    lines = [f"Comparison of {len(c.labels)} results, each against A", ""]
    lines += _wrap(f"Verdict: {head}", width)
    lines += [line for item in reasons for line in _bullet(item, width)]
    if c.nothing_compared:
        lines += ["", *_wrap(c.nothing_compared, width)]
    for title, ratio, tiers in pair_sections(c):
        lines += ["", *_wrap(f"{title}: {ratio}", width, "", "    ")]
        for tier, items in tiers:
            lines += _wrap(f"{tier}:", width, "  ", "    ")
            lines += [line for item in items for line in _wrap(item, width, "    - ", "      ")]
    lines += ["", "Sides:"]
    for letter, label, info in side_lines(c):
        lines += _wrap(label, width, f"  {letter:<3}", "     ")
        lines += _wrap(info, width, "     ", "     ")
    for title, rows in sections(c):
        lines += ["", *_wrap(title, width), *_tables(c, rows, width)]
    if c.rows:
        lines += ["", *_wrap(legend(c), width)]
    for title, items in difference_sections(c):
        lines += ["", title, *(line for item in items for line in _bullet(item, width))]
    return "\n".join(lines) + "\n"


def _wrap(text: str, width: int, first: str = "", rest: str = "") -> list[str]:
    return textwrap.wrap(
        text,
        width,
        initial_indent=first,
        subsequent_indent=rest,
        break_on_hyphens=False,
    ) or [first.rstrip()]


def _bullet(item: str, width: int) -> list[str]:
    return _wrap(item, width, "  - ", "    ")


def _tables(c: Comparison, rows: Sequence[Row], width: int) -> list[str]:
    """One table of every side if it fits in `width`, else one table per side against A."""
    everyone = list(range(1, len(c.labels)))
    table = _fit(header_cells(c, everyone), [row_cells(r, everyone) for r in rows], width)
    if table is not None:
        return table
    names = letters(c)
    lines: list[str] = []
    for i in everyone:
        pair = _fit(header_cells(c, [i]), [row_cells(r, [i]) for r in rows], width)
        lines += [f"{names[0]} vs {names[i]}:", *(pair or _stacked(c, rows, i))]
    return lines


def _fit(header: list[str], body: list[list[str]], width: int) -> list[str] | None:
    """Aligned columns, the metric names wrapped to what is left; None when too narrow."""
    table = [header, *body]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    rest = sum(widths[1:]) + len(GAP) * (len(widths) - 1)
    label_width = min(widths[0], width - rest)
    if label_width < MIN_LABEL_WIDTH:
        return None
    widths[0] = label_width
    lines = [_line(header, widths), GAP.join("-" * w for w in widths)]
    for row in body:
        label, *more = textwrap.wrap(row[0], label_width, break_on_hyphens=False) or [""]
        lines.append(_line([label, *row[1:]], widths))
        lines += more
    return lines


def _line(cells: Sequence[str], widths: Sequence[int]) -> str:
    """Numbers right-aligned; the metric (first) and the judgement (last) left-aligned."""
    last = len(cells) - 1
    out = [
        cell.ljust(w) if i in (0, last) else cell.rjust(w)
        for i, (cell, w) in enumerate(zip(cells, widths, strict=True))
    ]
    return GAP.join(out).rstrip()


def _stacked(c: Comparison, rows: Sequence[Row], i: int) -> list[str]:
    """A last resort for very narrow terminals: one metric per block, one value a line."""
    header = header_cells(c, [i])
    lines: list[str] = []
    for row in rows:
        cells = row_cells(row, [i])
        lines.append(cells[0])
        lines += [f"  {name}: {value}" for name, value in zip(header[1:], cells[1:], strict=True)]
    return lines


def render_compare_markdown(c: Comparison) -> str:
    """Markdown: the verdict, the sides, each section's table (numbers right), then differences."""
    head, reasons = verdict(c)
    lines = [f"## Comparison of {len(c.labels)} results, each against A", ""]
    lines += [f"**Verdict: {head}**", "", *(f"- {_md(item)}" for item in reasons)]
    if c.nothing_compared:
        lines += ["", f"*{c.nothing_compared}*"]
    for title, ratio, tiers in pair_sections(c):
        lines += ["", f"### {_md(title)}: {_md(ratio)}"]
        for tier, items in tiers:
            lines += ["", f"*{_md(tier)}*", "", *(f"- {_md(item)}" for item in items)]
    lines += ["", "### Sides", "", *_md_table(_side_table(c), right=())]
    for title, rows in sections(c):
        everyone = list(range(1, len(c.labels)))
        header = header_cells(c, everyone)
        body = [row_cells(r, everyone) for r in rows]
        right = tuple(range(1, len(header) - 1))
        judged = {i for i, name in enumerate(header) if name.endswith(" is")}
        lines += ["", f"### {title}", "", *_md_table([header, *body], right=set(right) - judged)]
    if c.rows:
        lines += ["", f"*{legend(c)}*"]
    for title, items in difference_sections(c):
        lines += ["", f"**{title}**", "", *(f"- {_md(item)}" for item in items)]
    return "\n".join(lines) + "\n"


def _side_table(c: Comparison) -> list[list[str]]:
    names = letters(c)
    return [
        ["", *names],
        ["label", *c.labels],
        *([name, *values] for name, values in c.info),
    ]


def _md_table(table: list[list[str]], right: set[int] | tuple[int, ...]) -> list[str]:
    rule = ["---:" if i in right else "---" for i in range(len(table[0]))]
    return ["| " + " | ".join(_md(cell) for cell in row) + " |" for row in [table[0], rule]] + [
        "| " + " | ".join(_md(cell) for cell in row) + " |" for row in table[1:]
    ]


def _md(text: str) -> str:
    return safe.markdown_text(text).replace("|", "\\|")
