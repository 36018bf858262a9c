"""The report's sections as plain blocks, for any renderer, and their Markdown form.

Block text is report text (harness.report.safe): plain text with `code` and [label](url).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import quote

from harness.report import safe

# A number as the tables print it: 1,234.5, 8.2 %, 75.00 (guess), with a note in brackets.
NUMBER = re.compile(r"^[-+]?\d[\d,]*(\.\d+)?( ?%)?( \(.*\))?( ⚠)?$")


@dataclass(frozen=True)
class Heading:
    """A section title; level 1 is the page title."""

    level: int
    text: str
    anchor: str = ""  # the id links point to; none when empty


@dataclass(frozen=True)
class Para:
    """A paragraph of plain text."""

    text: str


@dataclass(frozen=True)
class Table:
    """A table of plain-text cells."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Bullets:
    """A list of plain-text items."""

    items: tuple[str, ...]


@dataclass(frozen=True)
class Image:
    """A PNG figure with its file name, alternative text and caption."""

    name: str
    png: bytes
    alt: str
    caption: str


@dataclass(frozen=True)
class Details:
    """A collapsed block: a summary line that opens a table."""

    summary: str
    table: Table


Block = Heading | Para | Table | Bullets | Image | Details


def block_markdown(block: Block, images: str) -> str:
    """A block as Markdown; its text through safe.inline_markdown, so it stays text."""
    if isinstance(block, Heading):
        anchor = f'<a id="{safe.attribute(block.anchor)}"></a>\n\n' if block.anchor else ""
        return f"{anchor}{'#' * block.level} {safe.inline_markdown(block.text)}"
    if isinstance(block, Para):
        return safe.inline_markdown(block.text)
    if isinstance(block, Bullets):
        return "\n".join(f"- {safe.inline_markdown(item)}" for item in block.items)
    if isinstance(block, Image):
        alt, caption = safe.inline_markdown(block.alt), safe.inline_markdown(block.caption)
        return f"![{alt}]({quote(images)}/{quote(block.name)})\n\n*{caption}*"
    if isinstance(block, Details):
        summary = safe.text(block.summary)
        return f"<details>\n<summary>{summary}</summary>\n\n{_table(block.table)}\n\n</details>"
    return _table(block)


def _table(table: Table) -> str:
    rule = tuple("---:" if right else "---" for right in numeric_columns(table))
    lines = [table.header, rule, *table.rows]
    return "\n".join("| " + " | ".join(_cell(c) for c in line) + " |" for line in lines)


def numeric_columns(table: Table) -> tuple[bool, ...]:
    """Per column, whether it holds numbers (n/a aside): those are right-aligned."""
    columns = zip(*table.rows, strict=True) if table.rows else ((),) * len(table.header)
    return tuple(_numeric(cells) for cells in columns)


def _numeric(cells: Sequence[str]) -> bool:
    known = [c for c in cells if c and not c.startswith("n/a")]
    return bool(known) and all(NUMBER.match(c) for c in known)


def _cell(value: str) -> str:
    return safe.inline_markdown(value).replace("|", "\\|").replace("\n", " ")
