"""One verification of a compliance test: its verdict, a line for people and its file's text."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

PASS_LINE = "TEST PASS"  # MLPerf's verify scripts' words, which its submission checker looks for
FAIL_LINE = "TEST FAIL"


@dataclass(frozen=True, kw_only=True)
class Check:
    """A verify_*.txt: whether the check passed, a one-line summary and the file's text."""

    passed: bool
    summary: str
    text: str


def make_check(
    passed: bool, summary: str, lines: Sequence[str], *, verdict: bool | None = None
) -> Check:
    """A check whose text is `lines` and then MLPerf's verdict line (`verdict`, else `passed`)."""
    final = passed if verdict is None else verdict
    text = "\n".join([*lines, PASS_LINE if final else FAIL_LINE]) + "\n"
    return Check(passed=passed, summary=summary, text=text)


def percent_change(ratio: float) -> str:
    """`ratio` (test / reference) as a signed change: 1.023 -> '+2.3 %'."""
    return f"{(ratio - 1) * 100:+.1f} %"
