"""CSV for scripts and spreadsheets: RFC 4180 quoting, and no cell a spreadsheet runs.

A cell that starts with = + - @ (or a tab or carriage return) is a formula to Excel,
LibreOffice and Google Sheets: a label from a foreign tree (`=HYPERLINK(...)`) would run
when the file is opened. Such text cells get a leading apostrophe (OWASP's advice), which
spreadsheets show as text; numbers are written as numbers, so -3.5 stays a number.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence

from harness.text import printable

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
CsvCell = str | int | float | bool | None


def csv_text(columns: Sequence[str], rows: Iterable[Sequence[CsvCell]]) -> str:
    """A header row and the rows, CRLF-terminated and quoted where RFC 4180 needs it."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(columns)
    for row in rows:
        if len(row) != len(columns):
            raise ValueError(f"csv row of {len(row)} cells under {len(columns)} columns")
        writer.writerow([_cell(value) for value in row])
    return out.getvalue()


def _cell(value: CsvCell) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return safe_text(value)


def safe_text(text: str) -> str:
    """A text cell no spreadsheet runs, its control characters shown (harness.text)."""
    shown = printable(text)
    return f"'{shown}" if shown.startswith(FORMULA_STARTS) else shown
