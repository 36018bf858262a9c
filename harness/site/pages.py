"""The site's own pages: the index with its leaderboards, each entry's page, comparison pages."""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from harness.records.group import Group
from harness.records.layout import (
    COMPARE_MD,
    DETAIL_LOG,
    GROUP_FILES,
    INCOMPLETE,
    PUBLISHED_FILE,
    REPORT_DIR,
    REPORT_HTML,
    REPORT_MD,
    RESULT_FILE,
    SUMMARY_LOG,
    TELEMETRY_FILE,
)
from harness.report import safe
from harness.report.badges import TIER_NOTE, badges_html, tier_html
from harness.site.assets import CSS_FILE, JS_FILE
from harness.site.boards import Board, BoardRow
from harness.site.cards import verdict_cards
from harness.site.comparisons import Sides
from harness.site.discover import Skipped
from harness.site.entries import Entry
from harness.site.tokens import TokenCells, limit_text

REPORT_PAGE = f"{REPORT_DIR}/{REPORT_HTML}"
# The files of a run directory a reader opens first, in this order, where present.
RAW_FILES = (RESULT_FILE, SUMMARY_LOG, DETAIL_LOG, TELEMETRY_FILE, INCOMPLETE)
# The site's own empty favicon (no request for /favicon.ico): a constant, no URL from a record.
FAVICON = '<link rel="icon" href="data:,">'
KIND_NAMES = {
    "run": "run",
    "trials": "trials group",
    "sweep": "sweep",
    "bundle": "bundle",
    "fleet": "fleet",
    "published": "published MLPerf result",
}


@dataclass(frozen=True, kw_only=True)
class Page:
    """What every page shares: its title, how far it is from the site's root, when made."""

    title: str
    root: str  # "" for the index, "../../" two folders down
    created: str


def entry_href(slug: str) -> str:
    """An entry's page, from the site's root."""
    return f"entries/{quote(slug)}/index.html"


def compare_href(board: Board) -> str:
    """A board's comparison page, from the site's root."""
    return f"compare/{quote(board.slug)}/index.html"


def shell(page: Page, body: str) -> str:
    """A whole page: the site's header and stylesheet, the body, then the sorting script.

    Every value on every page is written with harness.report.safe (text, attribute, link).
    """
    root = page.root
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{safe.text(page.title)}</title>\n"
        f"{FAVICON}\n"
        f'<link rel="stylesheet" href="{root}{CSS_FILE}">\n</head>\n<body>\n'
        '<header class="site">'
        f'<a class="brand" href="{root}index.html">beyond-tops results</a>'
        f'<a href="{root}index.html#leaderboards">Leaderboards</a>'
        f'<a href="{root}index.html#results">All results</a>'
        f'<span class="muted">generated {safe.text(page.created)}</span></header>\n'
        f"<main>\n{body}\n</main>\n"
        f'<script src="{root}{JS_FILE}"></script>\n</body>\n</html>\n'
    )


def index_page(
    entries: Sequence[Entry],
    boards: Sequence[Board],
    skipped: Sequence[Skipped],
    *,
    roots: Sequence[Path],
    created: str,
    compared: Collection[str] = (),
) -> str:
    """The index: contents, a leaderboard per model x scenario, every result, what was left out.

    `compared`: the slugs of the boards that have a comparison page.
    """
    sources = ", ".join(f"<code>{safe.text(str(r))}</code>" for r in roots)
    parts = [
        f"<h1>beyond-tops results: {len(entries)} results, {len(boards)} leaderboards</h1>",
        f'<p class="muted">Made by <code>harness site</code> from {sources}. Static files '
        "only: open this page from disk or from any web server.</p>",
        _contents(boards, skipped),
        '<h2 id="leaderboards">Leaderboards</h2>',
        "<p>One table per model and scenario, best MLPerf metric first within each tier. "
        "Click a column's name to sort by it; type in the box to filter the rows.</p>",
        f'<p class="muted" id="tiers">{safe.text(TIER_NOTE)}</p>',
        *(_board(board, board.slug in compared) for board in boards),
        '<h2 id="results">All results</h2>',
        _results_table(entries),
    ]
    if skipped:
        items = "".join(
            f"<li><code>{safe.text(str(s.path))}</code>: {safe.text(s.reason)}</li>"
            for s in skipped
        )
        parts += ['<h2 id="not-included">Not included</h2>', f'<ul class="notes">{items}</ul>']
    return shell(Page(title="beyond-tops results", root="", created=created), "\n".join(parts))


def _contents(boards: Sequence[Board], skipped: Sequence[Skipped]) -> str:
    items = "".join(
        f"<li>{safe.link(f'#board-{b.slug}', b.title)} ({len(b.rows)})</li>" for b in boards
    )
    tail = '<li><a href="#not-included">Not included</a></li>' if skipped else ""
    return (
        '<nav id="contents"><h2>Contents</h2><ul>'
        f'<li><a href="#leaderboards">Leaderboards</a><ul>{items}</ul></li>'
        f'<li><a href="#results">All results</a></li>{tail}</ul></nav>'
    )


def _board(board: Board, compared: bool) -> str:
    first = board.headline
    better = "higher" if first.higher_is_better else "lower"
    header: tuple[tuple[str, bool], ...] = (
        ("#", True),
        ("result", False),
        ("kind", False),
        ("device", False),
        ("precision", False),
        (f"{first.label} ({first.unit})", True),
        ("spread (CoV)", True),
        ("tier", False),
        ("LoadGen", False),
        ("trust", False),
        ("runs", True),
        ("warnings", True),
        ("when", False),
    )
    generative = any(row.tokens is not None for row in board.rows)
    if generative:  # an LLM board: the token columns after the headline's spread
        header = (*header[:7], *TOKEN_HEADER, *header[7:])
    head = "".join(f'<th{_num(n)} scope="col">{safe.text(name)}</th>' for name, n in header)
    rows = "".join(_board_row(rank, row) for rank, row in enumerate(board.rows, start=1))
    compare = f" {safe.link(compare_href(board), 'Compare them')}." if compared else ""
    slug = safe.attribute(board.slug)
    return (
        f'<section id="board-{slug}"><h3>{safe.text(board.title)}</h3>'
        f"<p>MLPerf's metric for {safe.text(board.scenario)}: {safe.text(first.label)}, "
        f"{better} is better.{compare}</p>"
        f'<div class="scroll"><table class="sortable leaderboard" id="lb-{slug}">'
        f"<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div></section>"
    )


def _board_row(rank: int, row: BoardRow) -> str:
    h = row.headline
    value = "" if h.value is None else f"{h.value:.6g}"
    shown = h.text().removesuffix(f" {h.unit}")
    cov = "" if h.cov is None else f"{h.cov:.6g}"
    trust = row.trust
    validity = safe.text(row.validity)
    if row.validity != "VALID":
        validity = f'<span class="bad">{validity}</span>'
    spread = "n/a" if h.cov is None else f"{h.cov * 100:.1f} %"
    badges = [b for b in trust.badges if b.key not in ("loadgen",)]
    cells: tuple[str, ...] = (
        _td(str(rank), value=str(rank)),
        f"<td>{safe.link(f'entries/{quote(row.entry)}/{REPORT_PAGE}', row.label)}</td>",
        f"<td>{safe.text(KIND_NAMES[row.kind])}</td>",
        f"<td>{safe.text(row.device)}</td>",
        f"<td>{safe.text(row.precision)}</td>",
        _td(shown, value=value, title=h.label),
        _td(spread + (" ⚠" if trust.spread else ""), value=cov, title=trust.spread),
        f'<td data-value="{trust.rank}">{tier_html(trust)}</td>',
        f"<td>{validity}</td>",
        f'<td class="trust">{badges_html(badges)}</td>',
        _td(str(row.runs), value=str(row.runs)),
        _td(str(row.warnings), value=str(row.warnings)),
        f"<td>{safe.text(row.when)}</td>",
    )
    if row.tokens is not None:
        cells = (*cells[:7], *_token_cells(row.tokens), *cells[7:])
    tier = safe.attribute(trust.tier.replace(" ", "-"))
    return f'<tr class="tier-{tier}">' + "".join(cells) + "</tr>"


TOKEN_HEADER = (
    ("TTFT p99 / limit (ms)", True),
    ("TPOT p99 / limit (ms)", True),
    ("token checks", False),
    ("accuracy vs FP32", False),
)


def _token_cells(tokens: TokenCells) -> tuple[str, ...]:
    """An LLM row's p99 TTFT and TPOT against their limits, the token checks, the accuracy."""
    checks = safe.text(tokens.checks)
    if tokens.checks_failed:
        checks = f'<span class="bad">{checks}</span>'
    return (
        _td(
            limit_text(tokens.ttft_p99_ms, tokens.ttft_limit_ms),
            value="" if tokens.ttft_p99_ms is None else f"{tokens.ttft_p99_ms:.6g}",
        ),
        _td(
            limit_text(tokens.tpot_p99_ms, tokens.tpot_limit_ms),
            value="" if tokens.tpot_p99_ms is None else f"{tokens.tpot_p99_ms:.6g}",
        ),
        f"<td>{checks}</td>",
        f"<td>{safe.text(tokens.accuracy)}</td>",
    )


def _td(shown: str, *, value: str, title: str | None = None) -> str:
    tip = f' title="{safe.attribute(title)}"' if title else ""
    return f'<td class="num" data-value="{safe.attribute(value)}"{tip}>{safe.text(shown)}</td>'


def _num(numeric: bool) -> str:
    return ' class="num"' if numeric else ""


def _results_table(entries: Sequence[Entry]) -> str:
    head = "".join(
        f'<th{_num(n)} scope="col">{name}</th>'
        for name, n in (("result", False), ("kind", False), ("configurations", True))
    )
    head += '<th scope="col">report</th><th scope="col">found at</th>'
    rows = "".join(
        "<tr>"
        f"<td>{safe.link(entry_href(e.slug), e.title)}</td>"
        f"<td>{safe.text(KIND_NAMES[e.kind])}</td>"
        + _td(str(len(e.groups) + len(e.published)), value=str(len(e.groups) + len(e.published)))
        + f"<td>{safe.link(f'entries/{quote(e.slug)}/{REPORT_PAGE}', 'report')}</td>"
        f"<td><code>{safe.text(str(e.source))}</code></td></tr>"
        for e in entries
    )
    return (
        '<div class="scroll"><table class="sortable" id="results-table">'
        f"<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>"
    )


def entry_page(entry: Entry, entry_dir: Path, boards: Sequence[Board], created: str) -> str:
    """An entry's page: what it is, where it came from, its report and its raw files."""
    notes = "".join(f"<li>{safe.text(n)}</li>" for n in entry.notes)
    mine = [b for b in boards if any(r.entry == entry.slug for r in b.rows)]
    on_boards = ", ".join(safe.link(f"../../index.html#board-{b.slug}", b.title) for b in mine)
    parts = [
        f"<h1>{safe.text(entry.title)}</h1>",
        f'<p class="muted">{safe.text(KIND_NAMES[entry.kind])}, found at '
        f"<code>{safe.text(str(entry.source))}</code>; copied into this site.</p>",
        f'<ul class="notes">{notes}</ul>' if notes else "",
        verdict_cards(entry, boards),
        f"<p>{safe.link(REPORT_PAGE, 'Report')} · "
        f"{safe.link(f'{REPORT_DIR}/{REPORT_MD}', 'Markdown')}"
        + (f" · on the leaderboards {on_boards}" if on_boards else "")
        + "</p>",
        '<h2 id="raw">Raw files</h2>',
        "<p>LoadGen's logs and the harness's records, as the run wrote them.</p>",
        _raw_table(entry, entry_dir),
    ]
    title = f"{entry.title}: beyond-tops results"
    return shell(
        Page(title=title, root="../../", created=created), "\n".join(p for p in parts if p)
    )


def _raw_table(entry: Entry, entry_dir: Path) -> str:
    rows = [row for group in entry.groups for row in _group_raw_rows(group, entry_dir)]
    for record in entry.published:
        directory = _published_dir(entry)
        files = sorted(p.name for p in directory.iterdir() if p.is_file()) if directory else []
        links = [safe.link(_rel(directory / f, entry_dir), f) for f in files] if directory else []
        rows.append((record.label, links))
    body = "".join(
        f"<tr><td>{safe.text(label)}</td><td>{' · '.join(links) or 'none'}</td></tr>"
        for label, links in rows
    )
    return (
        '<div class="scroll"><table><thead><tr><th scope="col">run</th><th scope="col">files'
        f"</th></tr></thead><tbody>{body}</tbody></table></div>"
    )


def _group_raw_rows(group: Group, entry_dir: Path) -> list[tuple[str, list[str]]]:
    rows = []
    own = [
        safe.link(_rel(group.path / f, entry_dir), f)
        for f in GROUP_FILES
        if (group.path / f).is_file()
    ]
    if own:
        rows.append((f"{group.label} (group)", own))
    for runs in group.all_runs:
        for label, run_dir, _ in group.labelled(runs):
            name = label if label == group.label else f"{group.label} / {label}"
            files = [f for f in RAW_FILES if (run_dir / f).is_file()]
            rows.append((name, [safe.link(_rel(run_dir / f, entry_dir), f) for f in files]))
        for unfinished in runs.unfinished:  # listed, marked: never dropped
            run_dir = unfinished.path
            name = f"{group.label} / {run_dir.name} (INCOMPLETE: {unfinished.cause})"
            files = [f for f in RAW_FILES if (run_dir / f).is_file()]
            rows.append((name, [safe.link(_rel(run_dir / f, entry_dir), f) for f in files]))
    return rows


def _published_dir(entry: Entry) -> Path | None:
    found = sorted(entry.data.rglob(PUBLISHED_FILE))
    return found[0].parent if found else None


def _rel(path: Path, start: Path) -> str:
    return quote(Path(os.path.relpath(path, start)).as_posix())


def compare_page(board: Board, sides: Sides, body: str, created: str) -> str:
    """A board's comparison: what is compared and against what, the comparison, the entries."""
    links = "".join(
        f"<li>{safe.link(f'../../{entry_href(r.entry)}', r.label)}</li>" for r in sides.rows
    )
    dropped = "".join(f"<li>{safe.text(line)}</li>" for line in sides.dropped)
    parts = [
        f"<h1>Comparison: {safe.text(board.title)}</h1>",
        f'<p class="muted" id="pairing">{len(sides.rows)} results of {safe.text(board.model)} '
        f"in the {safe.text(board.scenario)} scenario, each against the reference (A); only "
        f"results of the same scenario are compared. {safe.link(COMPARE_MD, 'Markdown')}.</p>",
        f'<ul class="notes" id="duplicates">{dropped}</ul>' if dropped else "",
        body,
        f'<h2>Entries</h2><ul class="notes">{links}</ul>',
    ]
    title = f"Comparison {board.title}: beyond-tops results"
    return shell(
        Page(title=title, root="../../", created=created), "\n".join(p for p in parts if p)
    )
