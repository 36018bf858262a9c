"""An entry page's first screen: each result's headline number and every verdict about it."""

from __future__ import annotations

from collections.abc import Sequence

from harness.analysis.trust import group_trust, published_trust
from harness.inspect.opener import Side
from harness.records.group import Group
from harness.report import safe
from harness.report.badges import tier_html, verdicts_html
from harness.site.boards import Board, BoardRow
from harness.site.entries import Entry
from harness.site.headline import Headline, group_headline, published_headline


def verdict_cards(entry: Entry, boards: Sequence[Board]) -> str:
    """One card per group or published record of the entry: headline, tier, verdicts."""
    sides: list[Side] = [*entry.groups, *entry.published]
    rows = {id(r.side): r for b in boards for r in b.rows if r.entry == entry.slug}
    cards = [_card(entry, side, rows.get(id(side))) for side in sides]
    return '<h2 id="verdicts">Headline and verdicts</h2>\n' + "\n".join(cards)


def _card(entry: Entry, side: Side, row: BoardRow | None) -> str:
    trust = entry.trust_of(side) or (
        group_trust(side) if isinstance(side, Group) else published_trust(side)
    )
    headline = row.headline if row is not None else _headline(side)
    runs = _runs(side)
    return (
        f'<section class="card" data-label="{safe.attribute(side.label)}">'
        f"<h3>{safe.text(side.label)}</h3>"
        f'<p><span class="headline-value">{safe.text(headline.text())}</span> '
        f"{safe.text(headline.label)}{safe.text(runs)} "
        f"{tier_html(trust)}</p>"
        f"{verdicts_html(trust)}</section>"
    )


def _headline(side: Side) -> Headline:
    return group_headline(side) if isinstance(side, Group) else published_headline(side)


def _runs(side: Side) -> str:
    if not isinstance(side, Group) or len(side.results) < 2:
        return ""
    return f" (median of {len(side.results)} runs)"
