"""A comparison as a terminal table or Markdown: metrics side by side, then what differs."""

from __future__ import annotations

from harness.analysis.compare import Cell, Comparison, Row

NOT_COMPARABLE = "Not comparable because:"
HARDWARE = "Hardware differences (the point of the comparison):"
ENVIRONMENT = "Other environment differences (shown, not refused):"
NO_PROBLEMS = (
    "nothing: same model, precision, scenario, LoadGen settings, runtime versions and profile"
)


def render_compare_text(c: Comparison) -> str:
    """Aligned columns for the terminal, then the lists of differences."""
    table = _table(c)
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in table
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines += ["", _legend(c)]
    for title, items in _sections(c):
        lines += ["", title, *(f"  - {item}" for item in items)]
    return "\n".join(lines) + "\n"


def render_compare_markdown(c: Comparison) -> str:
    """A Markdown table, then the lists of differences."""
    table = _table(c)
    rows = [table[0], tuple("---" for _ in table[0]), *table[1:]]
    lines = [f"## Comparison: {' vs '.join(c.labels)}", ""]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    lines += ["", f"*{_legend(c)}*"]
    for title, items in _sections(c):
        lines += ["", f"**{title}**", "", *(f"- {item}" for item in items)]
    return "\n".join(lines) + "\n"


def _table(c: Comparison) -> list[tuple[str, ...]]:
    first = c.labels[0]
    header = ["metric", "better", first]
    for label in c.labels[1:]:
        header += [label, f"vs {first}", "significant"]
    rows = [tuple(header)]
    for name, values in c.info:
        cells = [name, "", values[0]]
        for value in values[1:]:
            cells += [value, "", ""]
        rows.append(tuple(cells))
    rows += [_metric_row(row) for row in c.rows]
    return rows


def _metric_row(row: Row) -> tuple[str, ...]:
    metric, reference = row.metric, row.cells[0]
    cells = [metric.title, "higher" if metric.higher_is_better else "lower"]
    cells.append(metric.format(reference.value))
    for cell in row.cells[1:]:
        ratio = "n/a" if cell.ratio is None else f"{cell.ratio:.2f}x"
        cells += [metric.format(cell.value), ratio, _significance(reference, cell)]
    return tuple(cells)


def _significance(reference: Cell, cell: Cell) -> str:
    if not reference.values or not cell.values:
        return "n/a"
    if cell.p_value is None:
        return "n/a (1 trial)"
    p = "p<0.001" if cell.p_value < 0.001 else f"p={cell.p_value:.3f}"
    return f"{'yes' if cell.significant else 'no'} ({p})"


def _legend(c: Comparison) -> str:
    return (
        f"value: median over the trials; vs {c.labels[0]}: ratio of the values; significant: "
        f"Welch's t-test over the trials, two-sided, alpha {c.alpha:g}"
    )


def _sections(c: Comparison) -> list[tuple[str, tuple[str, ...]]]:
    sections = [
        (NOT_COMPARABLE, c.problems or (NO_PROBLEMS,)),
        (HARDWARE, c.hardware or ("none: the same hardware",)),
    ]
    if c.environment:
        sections.append((ENVIRONMENT, c.environment))
    return sections
