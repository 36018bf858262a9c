"""Leaderboards: one per model x scenario, a row per configuration, best headline first."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from harness.analysis.groups import Group, group_warnings
from harness.results.published import PublishedResult
from harness.site.discover import EntryKind
from harness.site.entries import Entry
from harness.site.headline import (
    RULES,
    Headline,
    device,
    group_headline,
    published_device,
    published_headline,
)

Side = Group | PublishedResult


@dataclass(frozen=True, kw_only=True)
class BoardRow:
    """One configuration on a leaderboard: a local group or a published result."""

    entry: str  # the slug of the entry holding it
    label: str
    kind: EntryKind
    device: str
    precision: str
    headline: Headline
    validity: str
    runs: int
    warnings: int
    when: str  # a local run's date, or a published result's MLPerf round
    side: Side


@dataclass(frozen=True, kw_only=True)
class Board:
    """Every configuration of one model in one scenario."""

    model: str
    scenario: str
    rows: tuple[BoardRow, ...]

    @property
    def slug(self) -> str:
        """A file-name-safe name: model and scenario."""
        return re.sub(r"[^a-z0-9]+", "-", f"{self.model}-{self.scenario}".lower()).strip("-")

    @property
    def headline(self) -> Headline:
        """The scenario's metric as the harness defines it; the first row's for another scenario."""
        rule = RULES.get(self.scenario)
        if rule is None:
            return self.rows[0].headline
        return Headline(
            label=rule.label,
            unit=rule.unit,
            higher_is_better=rule.higher_is_better,
            value=None,
            cov=None,
        )

    @property
    def title(self) -> str:
        """How pages name it."""
        return f"{self.model} · {self.scenario}"


def build_boards(entries: Sequence[Entry]) -> list[Board]:
    """A board per (model, scenario), sorted by name; rows best first, unmeasured last."""
    keyed: dict[tuple[str, str], list[BoardRow]] = {}
    for entry in entries:
        for group in entry.groups:
            if group.results:
                keyed.setdefault(_group_key(group), []).append(_group_row(entry, group))
        for record in entry.published:
            key = (record.model, record.scenario)
            keyed.setdefault(key, []).append(_published_row(entry, record))
    return [
        Board(model=model, scenario=scenario, rows=tuple(sorted(rows, key=_rank)))
        for (model, scenario), rows in sorted(keyed.items())
    ]


def _group_key(group: Group) -> tuple[str, str]:
    r = group.results[0]
    return r.loadgen_config.model_key, r.scenario


def _rank(row: BoardRow) -> tuple[bool, float]:
    value = row.headline.value
    if value is None or math.isnan(value):
        return True, 0.0
    return False, -value if row.headline.higher_is_better else value


def _group_row(entry: Entry, group: Group) -> BoardRow:
    first = group.results[0]
    valid = sum(r.valid for r in group.results)
    runs = len(group.results)
    validity = ("VALID" if valid else "INVALID") if runs == 1 else f"{valid} of {runs} VALID"
    within = f" [{entry.title}]" if entry.kind in ("bundle", "fleet") else ""
    return BoardRow(
        entry=entry.slug,
        label=group.label + within,
        kind=group.kind,
        device=device(first),
        precision=first.model.precision,
        headline=group_headline(group),
        validity=validity,
        runs=runs,
        warnings=len(group_warnings(group)),
        when=first.created_utc[:10],
        side=group,
    )


def _published_row(entry: Entry, record: PublishedResult) -> BoardRow:
    validity = {True: "VALID", False: "INVALID", None: "not logged"}[record.valid]
    return BoardRow(
        entry=entry.slug,
        label=record.label,
        kind="published",
        device=published_device(record),
        precision=record.harness_precision or "not stated",
        headline=published_headline(record),
        validity=validity,
        runs=1,
        warnings=len(record.loadgen_warnings) + len(record.import_warnings),
        when=f"MLPerf v{record.mlperf_version}" if record.mlperf_version else "round unknown",
        side=record,
    )
