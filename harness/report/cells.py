"""Cell text of the report's tables: milliseconds, fixed decimals or n/a, notes once, slugs."""

from __future__ import annotations

import re
from typing import Any

from harness.records.metrics import percent
from harness.records.trials import TrialStats
from harness.report.blocks import Block, Para

# A spread needs two values: what every page prints for the CoV of one.
ONE_RUN_COV = "n/a (1 run)"


def slug(text: str) -> str:
    """A file-name-safe lower-case form of a label."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "group"


def ms(value: float | None) -> str:
    """Nanoseconds as milliseconds with 3 decimals; None is n/a."""
    return "n/a" if value is None else f"{value / 1e6:.3f}"


def fixed(value: Any, spec: str) -> str:
    """A number in the format `spec`; anything else is n/a."""
    return format(value, spec) if isinstance(value, (int, float)) else "n/a"


def distinct_notes(texts: list[str | None], lead: str) -> list[Block]:
    """A paragraph `lead: text.` per distinct non-empty text, in order."""
    return [Para(f"{lead}: {text}.") for text in dict.fromkeys(texts) if text]


def cov_cell(stats: TrialStats) -> str:
    """The coefficient of variation as a percentage; one value has none (ONE_RUN_COV)."""
    return percent(stats.cov) if len(stats.values) > 1 else ONE_RUN_COV


def drawn(text: str) -> str:
    r"""`text` for matplotlib to draw as written: a `$` pair would start math mode (`\$` not)."""
    return text.replace("$", r"\$")
