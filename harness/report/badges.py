"""A result's trust (harness.records.trust) as text, Markdown and HTML badges: one look everywhere.

HTML badges are spans with the badge's key and level as data attributes, so that a reader's
script (and the browser tests) can find, say, every TEST04 FAIL; every value goes through
harness.report.safe.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from harness.analysis.trust import group_trust, published_trust
from harness.records.group import Group
from harness.records.published import PublishedResult
from harness.records.trust import Badge, Trust
from harness.report import safe

# A side's trust, as the caller knows it (harness.inspect.trust reads what its files say).
TrustOf = Callable[[Group | PublishedResult], Trust]

QUIET = ("profile", "spread")  # warn-level badges whose warning `show` prints anyway
TIER_NOTE = (
    "Ranked in tiers, best first: submission-valid; quick profile (or otherwise not "
    "submission-valid); failed a check (LoadGen INVALID, a compliance test FAILED, "
    "IMPLAUSIBLE); incomplete (interrupted, or fewer runs than requested). Within a tier, by "
    "the headline metric."
)


def default_trust(side: Group | PublishedResult) -> Trust:
    """What the results alone say, where no file beside them was read."""
    return group_trust(side) if isinstance(side, Group) else published_trust(side)


def trust_sentence(trust: Trust) -> str:
    """Every badge with its detail, "; "-separated: a report's line of trust."""
    return "; ".join(badge_text(b) for b in trust.badges)


def badge_text(badge: Badge) -> str:
    """One badge in words, its detail in parentheses where it has one."""
    return f"{badge.text} ({badge.detail})" if badge.detail else badge.text


def trust_line(trust: Trust) -> str:
    """Every badge of a result on one line, separated by " | ", without their details."""
    return " | ".join(b.text for b in trust.badges)


def trust_rows(trust: Trust) -> list[tuple[str, str]]:
    """(field, value) rows for `show`: the tier, then each badge with its detail."""
    rows = [("trust", f"{trust.tier}: {trust_line(trust)}")]
    rows += [("check", badge_text(b)) for b in trust.badges if _checked(b)]
    return rows


def _checked(badge: Badge) -> bool:
    """A badge worth its own line: what failed, and warnings `show` prints nowhere else.

    A quick profile and a spread warning have their own lines already (warning: ...).
    """
    return badge.level == "bad" or (badge.level == "warn" and badge.key not in QUIET)


def badge_html(badge: Badge) -> str:
    """One badge: a span whose class is its level, its detail as a tooltip."""
    tip = f' title="{safe.attribute(badge.detail)}"' if badge.detail else ""
    return (
        f'<span class="badge {badge.level}" data-trust="{safe.attribute(badge.key)}" '
        f'data-level="{badge.level}"{tip}>{safe.text(badge.text)}</span>'
    )


def badges_html(badges: Sequence[Badge]) -> str:
    """Badges side by side."""
    return " ".join(badge_html(b) for b in badges)


def tier_html(trust: Trust) -> str:
    """The tier as a badge: green only for submission-valid."""
    level = {"submission-valid": "good", "quick profile": "warn"}.get(trust.tier, "bad")
    return (
        f'<span class="badge tier {level}" data-tier="{safe.attribute(trust.tier)}">'
        f"{safe.text(trust.tier)}</span>"
    )


def verdicts_html(trust: Trust) -> str:
    """A definition list of each badge with its detail: an entry page's verdicts."""
    items = "".join(
        f"<dt>{safe.text(b.key)}</dt><dd>{badge_html(b)}"
        + (f' <span class="muted">{safe.text(b.detail)}</span>' if b.detail else "")
        + "</dd>"
        for b in trust.badges
    )
    return f'<dl class="verdicts">{items}</dl>'
