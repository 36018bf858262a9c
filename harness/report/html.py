"""The report as one self-contained HTML page: inline CSS, PNGs embedded as data URIs."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from html import escape

from harness.analysis.groups import Group
from harness.report.markdown import (
    Block,
    Bullets,
    Details,
    Heading,
    Image,
    Para,
    Table,
    build_report,
)
from harness.results.published import PublishedResult

CSS = """
body { font-family: system-ui, sans-serif; max-width: 72rem; margin: 2rem auto; padding: 0 1rem;
       color: #1b1b1b; line-height: 1.45; }
h1, h2 { border-bottom: 1px solid #ddd; padding-bottom: .2rem; }
table { border-collapse: collapse; margin: .6rem 0; font-size: .9rem; }
th, td { border: 1px solid #ccc; padding: .2rem .5rem; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
figure { margin: 1rem 0; }
figure img { max-width: 100%; }
figcaption { font-size: .85rem; color: #555; }
details { margin: .6rem 0; }
summary { cursor: pointer; font-weight: 600; }
li { margin: .2rem 0; }
"""


def render_html(groups: Sequence[Group], published: Sequence[PublishedResult] = ()) -> str:
    """The whole page; it needs no other file and loads nothing from the network."""
    body = "\n".join(_html(block) for block in build_report(groups, published))
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        "<title>beyond-tops report</title>\n"
        f"<style>{CSS}</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n"
    )


def _html(block: Block) -> str:
    if isinstance(block, Heading):
        return f"<h{block.level}>{escape(block.text)}</h{block.level}>"
    if isinstance(block, Para):
        return f"<p>{escape(block.text)}</p>"
    if isinstance(block, Bullets):
        items = "".join(f"<li>{escape(item)}</li>" for item in block.items)
        return f"<ul>{items}</ul>"
    if isinstance(block, Image):
        data = base64.b64encode(block.png).decode("ascii")
        return (
            f'<figure><img src="data:image/png;base64,{data}" alt="{escape(block.alt)}">'
            f"<figcaption>{escape(block.caption)}</figcaption></figure>"
        )
    if isinstance(block, Details):
        return f"<details><summary>{escape(block.summary)}</summary>{_table(block.table)}</details>"
    return _table(block)


def _table(table: Table) -> str:
    head = "".join(f"<th>{escape(cell)}</th>" for cell in table.header)
    rows = "".join(
        "<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in table.rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
