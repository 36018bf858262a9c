"""A leaderboard's comparison page: a chosen local reference, the board's sides de-duplicated.

The reference (A, what every ratio is against) is, by this rule and in this order:

1. the result given with `harness site --reference PATH`, where it is on this board;
2. else the newest local result of the board that LoadGen judged VALID and is complete;
3. else the newest local result of any verdict;
4. else, only where nothing on the board was measured here, the board's first published record.

A board is one model in one scenario, so every comparison pairs like with like (SingleStream
with SingleStream, Offline with Offline). A group found twice, on its own and inside a bundle
(the same runs, by run id), is compared once: the directory stays, the bundle's copy goes, and
the page says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.analysis.compare import Comparison, compare
from harness.records.group import Group
from harness.records.result import RunResult
from harness.site.boards import Board, BoardRow
from harness.site.discover import EntryKind


@dataclass(frozen=True, kw_only=True)
class Sides:
    """What a board's comparison compares, in order (the reference first), and why."""

    rows: tuple[BoardRow, ...]
    reason: str  # why the first is the reference, as the page says it
    dropped: tuple[str, ...]  # the duplicates left out, each with the row it duplicates


def comparison_sides(
    board: Board,
    kinds: Mapping[str, EntryKind],
    sources: Mapping[str, Path],
    chosen: Sequence[Path] = (),
) -> Sides:
    """The board's rows to compare: de-duplicated, the reference first, the rest by rank.

    `kinds` and `sources`: each entry's kind and where it was found, by its slug; `chosen`:
    the paths given with --reference.
    """
    rows, dropped = deduplicated(board.rows, kinds)
    reference, reason = pick_reference(rows, sources, chosen)
    rest = tuple(r for r in rows if r is not reference)
    return Sides(rows=(reference, *rest), reason=reason, dropped=tuple(dropped))


RunKey = tuple[str, str, str, float | None]


def run_key(result: RunResult) -> RunKey:
    """What tells one run from every other: a run id ("trial-1") alone is not unique."""
    fingerprint = result.fingerprint.fingerprint_id
    return result.created_utc, result.run_id, fingerprint, result.samples_per_second


def run_ids(row: BoardRow) -> frozenset[RunKey]:
    """The runs a row stands for (empty for a published record: never a duplicate)."""
    side = row.side
    return frozenset(map(run_key, side.results)) if isinstance(side, Group) else frozenset()


def deduplicated(
    rows: Sequence[BoardRow], kinds: Mapping[str, EntryKind]
) -> tuple[list[BoardRow], list[str]]:
    """Each set of runs once: a directory's row kept over a bundle's copy of the same runs."""
    keep: dict[frozenset[RunKey], BoardRow] = {}
    order: list[BoardRow] = []
    dropped: list[str] = []
    for row in sorted(rows, key=lambda r: kinds.get(r.entry) == "bundle"):
        ids = run_ids(row)
        if ids and ids in keep:
            dropped.append(f"{row.label}: the same runs as {keep[ids].label}, compared once")
            continue
        if ids:
            keep[ids] = row
        order.append(row)
    kept = {id(r) for r in order}
    return [r for r in rows if id(r) in kept], dropped


def pick_reference(
    rows: Sequence[BoardRow], sources: Mapping[str, Path], chosen: Sequence[Path]
) -> tuple[BoardRow, str]:
    """The reference row by the module's rule, and the rule that chose it, in words."""
    wanted = {p.resolve() for p in chosen}
    for row in rows:
        source = sources.get(row.entry)
        if source is not None and source.resolve() in wanted:
            return row, "chosen with --reference"
    local = [r for r in rows if isinstance(r.side, Group) and r.side.results]
    valid = [r for r in local if r.trust.loadgen == "VALID" and r.trust.incomplete is None]
    if valid:
        return _newest(valid), "the newest local result that is VALID and complete"
    if local:
        return _newest(local), "the newest local result; none is VALID and complete"
    return rows[0], "no local result on this board: its first published record"


def _newest(rows: Sequence[BoardRow]) -> BoardRow:
    def when(row: BoardRow) -> str:
        side = row.side
        return max(r.created_utc for r in side.results) if isinstance(side, Group) else ""

    return max(rows, key=when)


def board_comparison(sides: Sides) -> Comparison:
    """The comparison of the sides, in order (harness.analysis.compare)."""
    return compare([r.side for r in sides.rows], trust=[r.trust for r in sides.rows])
