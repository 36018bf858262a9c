"""A run's label (`--label`): the name a reader sees for a run or group, and its grammar.

Grammar: 1 to MAX_LABEL_CHARS characters, each printable (Python's ``str.isprintable``: no
control, format, bidi, separator or unassigned character, so no newline, tab or ESC), the space
included but not at either end. Anything else printable is allowed (``<script>``, ``&``, ``$(...)``,
quotes): a label is data, escaped wherever it is written (harness.report.safe for HTML and
Markdown, harness.text for terminals) and never passed to a shell. A label read back from a
result file is hostile like any other value and is escaped the same way.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.errors import ConfigError

MAX_LABEL_CHARS = 64
LABEL_GRAMMAR = (
    f"1-{MAX_LABEL_CHARS} printable characters, no control or bidi characters (no newline or "
    "tab), no space at either end"
)


def label_problem(text: str) -> str | None:
    """What breaks the grammar in ``text``, or None when it is a label."""
    if not 1 <= len(text) <= MAX_LABEL_CHARS:
        return f"{len(text)} characters"
    bad = next((c for c in text if not c.isprintable()), None)
    if bad is not None:
        return f"character U+{ord(bad):04X} is not printable"
    if text != text.strip():
        return "a space at an end"
    return None


def check_label(text: str | None, where: str = "--label") -> str | None:
    """``text`` when it follows the grammar (None stays None); else a one-line ConfigError."""
    if text is None:
        return None
    problem = label_problem(text)
    if problem is not None:
        raise ConfigError(f"{where}: {problem}; a label is {LABEL_GRAMMAR}")
    return text


def shared_label(labels: Iterable[str | None]) -> str | None:
    """The label runs of one command share (the first given); None when none has one."""
    return next((label for label in labels if label is not None), None)


def shown_name(label: str | None, directory_name: str) -> str:
    """What a reader sees for a run or group: its label, else its directory's name."""
    return directory_name if label is None else label
