"""Leaderboards: one per model x scenario, a row per configuration, by tier then headline.

The tiers are harness.analysis.trust's: submission-valid, then quick profile, then what
failed a check, then what is incomplete; an interrupted group never ranks above a complete one.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from harness.analysis.groups import warning_count
from harness.analysis.trust import group_trust, published_trust
from harness.analysis.values import metric_values, published_value_of
from harness.records.genmetrics import GENERATIVE_SCENARIOS, generative_metrics
from harness.records.group import Group
from harness.records.metrics import Metric, scenario_metrics
from harness.records.published import PublishedResult
from harness.records.trust import Trust
from harness.site.discover import EntryKind
from harness.site.entries import Entry
from harness.site.headline import (
    Headline,
    device,
    group_headline,
    headline_of,
    published_device,
    published_headline,
)
from harness.site.tokens import TokenCells, token_cells

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
    trust: Trust
    tokens: TokenCells | None = None  # an LLM board's: p99 TTFT/TPOT, limits, checks, accuracy


@dataclass(frozen=True, kw_only=True)
class Board:
    """Every configuration of one model in one scenario."""

    model: str
    scenario: str
    metric: Metric  # the one every row is ranked by (the catalogue's headline for them all)
    rows: tuple[BoardRow, ...]

    @property
    def slug(self) -> str:
        """A file-name-safe name: model and scenario."""
        return re.sub(r"[^a-z0-9]+", "-", f"{self.model}-{self.scenario}".lower()).strip("-")

    @property
    def headline(self) -> Headline:
        """The metric the board ranks by, without a value."""
        return headline_of(self.metric)

    @property
    def title(self) -> str:
        """How pages name it."""
        return f"{self.model} · {self.scenario}"


def build_boards(entries: Sequence[Entry]) -> list[Board]:
    """A board per (model, scenario), sorted by name; rows best first, unmeasured last."""
    keyed: dict[tuple[str, str], list[tuple[Entry, Side]]] = {}
    for entry in entries:
        for group in entry.groups:
            if group.results:
                keyed.setdefault(_group_key(group), []).append((entry, group))
        for record in entry.published:
            keyed.setdefault((record.model, record.scenario), []).append((entry, record))
    return [_board(model, scenario, sides) for (model, scenario), sides in sorted(keyed.items())]


def _board(model: str, scenario: str, sides: Sequence[tuple[Entry, Side]]) -> Board:
    metric = board_metric(scenario, [side for _, side in sides])
    generative = generated(scenario, [side for _, side in sides])
    rows = [
        _group_row(entry, side, metric)
        if isinstance(side, Group)
        else _published_row(entry, side, metric)
        for entry, side in sides
    ]
    if generative:
        rows = [dataclasses.replace(row, tokens=token_cells(row.side)) for row in rows]
    return Board(model=model, scenario=scenario, metric=metric, rows=tuple(sorted(rows, key=_rank)))


def board_metric(scenario: str, sides: Sequence[Side]) -> Metric:
    """The scenario's headline; its fallback where no side has a value of it (one for all).

    A board of LLM results only (every local run generated, every published result states
    tokens/s) ranks by tokens/s, as MLPerf does (harness.records.genmetrics).
    """
    results = [r for side in sides if isinstance(side, Group) for r in side.results]
    published = [side for side in sides if isinstance(side, PublishedResult)]
    found = (
        generative_metrics(scenario) if generated(scenario, sides) else scenario_metrics(scenario)
    )
    has = metric_values(results, found.headline) or [
        v for r in published if (v := published_value_of(r, found.headline)) is not None
    ]
    return found.headline if has or found.fallback is None else found.fallback


def generated(scenario: str, sides: Sequence[Side]) -> bool:
    """Whether a board is an LLM's: every local run generated, every published record too."""
    results = [r for side in sides if isinstance(side, Group) for r in side.results]
    published = [side for side in sides if isinstance(side, PublishedResult)]
    return (
        scenario in GENERATIVE_SCENARIOS
        and bool(results or published)
        and all(r.generation is not None for r in results)
        and all(p.generation is not None for p in published)
    )


def _group_key(group: Group) -> tuple[str, str]:
    r = group.results[0]
    return r.loadgen_config.model_key, r.scenario


def _rank(row: BoardRow) -> tuple[int, bool, float]:
    """The tier first (harness.analysis.trust), then the headline: best first, unmeasured last."""
    value = row.headline.value
    if value is None or math.isnan(value):
        return row.trust.rank, True, 0.0
    return row.trust.rank, False, -value if row.headline.higher_is_better else value


def _group_row(entry: Entry, group: Group, metric: Metric) -> BoardRow:
    first = group.results[0]
    trust = entry.trust_of(group) or group_trust(group)
    runs = len(group.results)
    within = f" [{entry.title}]" if entry.kind in ("bundle", "fleet") else ""
    return BoardRow(
        entry=entry.slug,
        label=group.label + within,
        kind=group.kind,
        device=device(first),
        precision=first.model.precision,
        headline=group_headline(group, metric),
        validity=_validity(trust),
        runs=runs,
        warnings=warning_count(group),
        when=first.created_utc[:10],
        side=group,
        trust=trust,
    )


def _validity(trust: Trust) -> str:
    """LoadGen's verdict, or INCOMPLETE: a group short of its runs is never called VALID."""
    if trust.incomplete is not None:
        return f"INCOMPLETE ({trust.runs} of {trust.requested} runs)"
    return trust.loadgen


def _published_row(entry: Entry, record: PublishedResult, metric: Metric) -> BoardRow:
    trust = entry.trust_of(record) or published_trust(record)
    return BoardRow(
        entry=entry.slug,
        label=record.label,
        kind="published",
        device=published_device(record),
        precision=record.harness_precision or "not stated",
        headline=published_headline(record, metric),
        validity=trust.loadgen,
        runs=1,
        warnings=len(record.loadgen_warnings) + len(record.import_warnings),
        when=f"MLPerf v{record.mlperf_version}" if record.mlperf_version else "round unknown",
        side=record,
        trust=trust,
    )
