"""The report as one self-contained HTML page: inline CSS, PNGs embedded as data URIs."""

from __future__ import annotations

import base64
import struct
from collections.abc import Sequence
from pathlib import Path

from harness.records.group import Group
from harness.records.loadsweep import LoadSweep
from harness.records.published import PublishedResult
from harness.report import safe
from harness.report.badges import TrustOf
from harness.report.blocks import (
    Block,
    Bullets,
    Details,
    Heading,
    Image,
    Para,
    Table,
    numeric_columns,
)
from harness.report.document import build_report, page_title

CSS = """
body { font-family: system-ui, sans-serif; max-width: 72rem; margin: 2rem auto; padding: 0 1rem;
       color: #1b1b1b; line-height: 1.45; }
h1, h2 { border-bottom: 1px solid #ddd; padding-bottom: .2rem; }
h1 { font-size: 1.6rem; }
.scroll { max-width: 100%; overflow-x: auto; }
table { border-collapse: collapse; margin: .6rem 0; font-size: .9rem; }
th, td { border: 1px solid #ccc; padding: .2rem .5rem; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
th.num, td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num { white-space: nowrap; }
code { font-family: ui-monospace, monospace; font-size: .9em; background: #f3f3f3;
       padding: 0 .2em; border-radius: 3px; }
figure { margin: 1rem 0; }
figure img { max-width: 100%; height: auto; }
figcaption { font-size: .85rem; color: #555; }
details { margin: .6rem 0; }
summary { cursor: pointer; font-weight: 600; }
li { margin: .2rem 0; }
.implausible { color: #b00020; font-weight: 700; }
"""
# The figures' own data URIs: a constant prefix and base64, never a URL from a record.
PNG_DATA_URI = "data:image/png;base64,"
HIDPI = 2  # figures are rendered at twice the pixels they are shown at


def render_html(
    groups: Sequence[Group],
    published: Sequence[PublishedResult] = (),
    *,
    out_dir: Path | None = None,
    trust: TrustOf | None = None,
    loads: Sequence[tuple[LoadSweep, str]] = (),
) -> str:
    """The whole page; it needs no other file and loads nothing from the network.

    Links to each run's raw files are relative to out_dir, where the page is to be written;
    without it they are file:// URLs, which no page links (harness.report.safe): text only.
    Every value is escaped and every link allowed by scheme in harness.report.safe.
    """
    blocks = build_report(groups, published, links_from=out_dir, trust=trust, loads=loads)
    body = "\n".join(_html(block) for block in blocks)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{safe.text(page_title(groups, published))}</title>\n"
        f"<style>{CSS}</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n"
    )


def _html(block: Block) -> str:
    if isinstance(block, Heading):
        anchor = f' id="{safe.attribute(block.anchor)}"' if block.anchor else ""
        return f"<h{block.level}{anchor}>{safe.inline_html(block.text)}</h{block.level}>"
    if isinstance(block, Para):
        return f"<p{_alarm(block.text)}>{safe.inline_html(block.text)}</p>"
    if isinstance(block, Bullets):
        items = "".join(f"<li>{safe.inline_html(item)}</li>" for item in block.items)
        return f"<ul>{items}</ul>"
    if isinstance(block, Image):
        return _figure(block)
    if isinstance(block, Details):
        summary = safe.inline_html(block.summary)
        return f"<details><summary>{summary}</summary>{_table(block.table)}</details>"
    return _table(block)


def _figure(image: Image) -> str:
    data = base64.b64encode(image.png).decode("ascii")
    width, height = (size // HIDPI for size in _png_size(image.png))
    return (
        f'<figure><img width="{width}" height="{height}" '
        f'src="{PNG_DATA_URI}{data}" alt="{safe.attribute(image.alt)}">'
        f"<figcaption>{safe.inline_html(image.caption)}</figcaption></figure>"
    )


def _png_size(png: bytes) -> tuple[int, int]:
    """Width and height in pixels, from the PNG's IHDR chunk."""
    width, height = struct.unpack(">II", png[16:24])
    return int(width), int(height)


def _table(table: Table) -> str:
    numeric = numeric_columns(table)
    head = _row("th", table.header, numeric)
    body = "".join(_row("td", row, numeric) for row in table.rows)
    table_html = f"<table><thead>{head}</thead><tbody>{body}</tbody></table>"
    return f'<div class="scroll">{table_html}</div>'  # a wide table scrolls, the page reflows


def _row(tag: str, cells: Sequence[str], numeric: Sequence[bool]) -> str:
    return "<tr>" + "".join(_cell(tag, c, r) for c, r in zip(cells, numeric, strict=True)) + "</tr>"


def _cell(tag: str, value: str, right: bool) -> str:
    kind = ' class="num"' if right else _alarm(value)
    return f"<{tag}{kind}>{safe.inline_html(value)}</{tag}>"


def _alarm(text: str) -> str:
    """The red class for text that calls a result IMPLAUSIBLE (the physics check)."""
    return ' class="implausible"' if "IMPLAUSIBLE" in text else ""
