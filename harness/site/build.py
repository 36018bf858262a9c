"""`harness site`: build the whole site in a staging folder, then move it into place at once."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import harness
from harness.analysis.trust import with_reproduction
from harness.errors import HarnessError, ResultError
from harness.files import atomic_write_text
from harness.inspect.trust import Judge, reproductions_in, trust_of
from harness.records.group import Group
from harness.records.layout import (
    BUNDLE_SUFFIX,
    COMPARE_MD,
    INDEX_HTML,
    REPORT_DIR,
    REPORT_HTML,
    REPORT_MD,
    SITE_FILE,
)
from harness.records.published import PublishedResult
from harness.records.trust import Trust
from harness.report.badges import default_trust
from harness.report.compare_html import CSS as COMPARE_CSS
from harness.report.compare_html import compare_body
from harness.report.compare_render import render_compare_markdown
from harness.report.html import render_html
from harness.report.markdown import render_markdown
from harness.site.assets import CSS, CSS_FILE, JS, JS_FILE
from harness.site.boards import Board, build_boards
from harness.site.comparisons import Sides, board_comparison, comparison_sides
from harness.site.discover import Discovery, Found, Skipped, discover
from harness.site.entries import Entry, load_entry
from harness.site.pages import compare_page, entry_page, index_page
from harness.strictjson import Format, JsonObject, read_versioned

SITE_SCHEMA_VERSION = 1
GENERATOR = "harness site"
SITE_FORMAT = Format(what="a beyond-tops site file", newest=SITE_SCHEMA_VERSION, oldest=1)


@dataclass(frozen=True, kw_only=True)
class Site:
    """What a build wrote: the index page, its entries and boards, what it left out.

    The entries' and groups' paths name where they were built, a folder beside `out` that is
    gone once the site is moved into place: read the site under `index.parent`.
    """

    index: Path
    entries: tuple[Entry, ...]
    boards: tuple[Board, ...]
    skipped: tuple[Skipped, ...]


def build_site(
    roots: Sequence[Path],
    out: Path,
    *,
    trust: Sequence[Path] = (),
    reference: Sequence[Path] = (),
    now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.timezone.utc),
    judge: Judge = trust_of,
) -> Site:
    """Write a static site of every result under `roots` into `out`, replacing it whole.

    `judge` gives each result's trust (harness.inspect.trust.trust_of: what its files say).
    `reference`: results each comparison page is against, where on its board (else the rule
    of harness.site.comparisons).

    A result that cannot be read is left out and listed (Site.skipped, and the index).

    Raises:
        ResultError: `out` exists and is not a site this command made, nothing was found,
            or `out` cannot be written.
    """
    check_out(out)
    found = discover(roots, exclude=out)
    if not found.found:
        where = ", ".join(str(r) for r in roots)
        raise ResultError(f"{where}: no run, group, bundle, fleet or published result found")
    _check_reference(reference, found, roots)
    created = now().strftime("%Y-%m-%d %H:%M UTC")
    staging = _staging(out)
    try:
        site = _write(found, roots, staging, (trust, judge), (created, tuple(reference)))
        _swap(staging, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return dataclasses.replace(site, index=out / INDEX_HTML)


def _check_reference(reference: Sequence[Path], found: Discovery, roots: Sequence[Path]) -> None:
    """Refuse a --reference that names no result the site holds (a typo would pass unseen)."""
    results = {item.path.resolve() for item in found.found}
    for path in reference:
        if path.resolve() not in results:
            where = ", ".join(str(r) for r in roots)
            raise ResultError(
                f"{path}: --reference names no result found under {where}; pass a run, "
                "trials, sweep, fleet or bundle path as the index lists it under 'found at'"
            )


def check_out(out: Path) -> None:
    """Refuse an `out` that is a file, or a non-empty directory no `harness site` made."""
    if not out.exists():
        return
    if not out.is_dir():
        raise ResultError(f"{out}: is a file; pass a new directory as --out")
    if any(out.iterdir()) and not is_site(out):
        raise ResultError(
            f"{out}: exists and is not a site `harness site` made (no {SITE_FILE}); "
            "pass a new or empty directory as --out"
        )


def is_site(path: Path) -> bool:
    """Whether `path` holds a site.json written by this command (in a version this reads)."""
    try:
        data = read_versioned(path / SITE_FILE, SITE_FORMAT, ResultError).data
    except ResultError:
        return False
    return data.get("generator") == GENERATOR


def _staging(out: Path) -> Path:
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.building-"))
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ResultError(
            f"{out}: cannot write beside it ({reason}); pass a writable --out"
        ) from None


def _swap(staging: Path, out: Path) -> None:
    """Put the new site at `out`; the old one (or an empty directory) goes only once it is."""
    old: Path | None = None
    try:
        if out.exists():
            old = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.old-")) / "site"
            os.replace(out, old)
        os.replace(staging, out)
    except OSError as exc:
        if old is not None and old.exists() and not out.exists():
            os.replace(old, out)  # the old site stays as it was
        reason = exc.strerror or type(exc).__name__
        raise ResultError(f"{out}: cannot put the new site there ({reason})") from None
    finally:
        if old is not None:
            shutil.rmtree(old.parent, ignore_errors=True)


def _write(
    found: Discovery,
    roots: Sequence[Path],
    site: Path,
    trust: tuple[Sequence[Path], Judge],
    when_and_reference: tuple[str, tuple[Path, ...]],
) -> Site:
    created, reference = when_and_reference
    entries, skipped = _load_all(found.found, site, trust)
    entries = with_reproductions(entries)
    skipped = [*found.skipped, *skipped]
    boards = build_boards(entries)
    for entry in entries:
        _write_entry(entry, site / "entries" / entry.slug, boards, created)
    kinds = {e.slug: e.kind for e in entries}
    sources = {e.slug: e.source for e in entries}
    compared: dict[str, Sides] = {}
    for board in boards:
        sides = comparison_sides(board, kinds, sources, reference)
        if len(sides.rows) > 1:
            _write_compare(board, sides, site / "compare" / board.slug, created)
            compared[board.slug] = sides
    atomic_write_text(site / CSS_FILE, CSS + COMPARE_CSS)
    atomic_write_text(site / JS_FILE, JS)
    index = index_page(entries, boards, skipped, roots=roots, created=created, compared=compared)
    atomic_write_text(site / INDEX_HTML, index)
    atomic_write_text(site / SITE_FILE, _site_json(entries, boards, skipped, created, compared))
    return Site(
        index=site / INDEX_HTML,
        entries=tuple(entries),
        boards=tuple(boards),
        skipped=tuple(skipped),
    )


def _load_all(
    found: Sequence[Found], site: Path, trust: tuple[Sequence[Path], Judge]
) -> tuple[list[Entry], list[Skipped]]:
    entries: list[Entry] = []
    skipped: list[Skipped] = []
    slugs: set[str] = set()
    for item in found:
        name = item.path.name.removesuffix(BUNDLE_SUFFIX).removesuffix(".bundle")
        slug = _unique(_slug(f"{item.kind}-{name}"), slugs)
        entry_dir = site / "entries" / slug
        try:
            entries.append(load_entry(item, slug, entry_dir, *trust))
        except HarnessError as exc:
            shutil.rmtree(entry_dir, ignore_errors=True)
            skipped.append(Skipped(path=item.path, reason=str(exc), failed=True))
    return entries, skipped


def with_reproductions(entries: Sequence[Entry]) -> list[Entry]:
    """Each entry with the reproduction verdicts found about it elsewhere in the tree.

    A reproduction group names what it reproduced (a run, a group, a bundle) by path; an
    entry found at that path gets the verdict on each of its results.
    """
    found = reproductions_in(g for e in entries for g in e.groups)
    out = []
    for entry in entries:
        check = found.get(entry.source.resolve())
        if check is not None:
            trust = tuple(with_reproduction(t, check) for t in entry.trust)
            entry = dataclasses.replace(entry, trust=trust)
        out.append(entry)
    return out


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:80] or "entry"


def _unique(slug: str, taken: set[str]) -> str:
    candidate, number = slug, 2
    while candidate in taken:
        candidate, number = f"{slug}-{number}", number + 1
    taken.add(candidate)
    return candidate


def _write_entry(entry: Entry, entry_dir: Path, boards: Sequence[Board], created: str) -> None:
    report = entry_dir / REPORT_DIR
    groups, published = list(entry.groups), list(entry.published)

    def trust_of(side: Group | PublishedResult) -> Trust:
        return entry.trust_of(side) or default_trust(side)

    images = report / "images"
    markdown = render_markdown(groups, images_dir=images, published=published, trust=trust_of)
    atomic_write_text(report / REPORT_MD, markdown)
    page = render_html(groups, published, out_dir=report, trust=trust_of)
    atomic_write_text(report / REPORT_HTML, _with_way_back(page))
    atomic_write_text(entry_dir / INDEX_HTML, entry_page(entry, entry_dir, boards, created))


def _with_way_back(page: str) -> str:
    """The report page, with a link back to its entry and the site's index at its top."""
    nav = (
        '<nav class="site-nav"><a href="../index.html">this result\'s files</a> · '
        '<a href="../../../index.html">all results</a></nav>\n'
    )
    return page.replace("<body>\n", f"<body>\n{nav}", 1)


def _write_compare(board: Board, sides: Sides, directory: Path, created: str) -> None:
    comparison = board_comparison(sides)
    atomic_write_text(directory / COMPARE_MD, render_compare_markdown(comparison))
    body = compare_body(comparison, reference=sides.reason)
    atomic_write_text(directory / INDEX_HTML, compare_page(board, sides, body, created))


def _site_json(
    entries: Sequence[Entry],
    boards: Sequence[Board],
    skipped: Sequence[Skipped],
    created: str,
    compared: Mapping[str, Sides],
) -> str:
    data: JsonObject = {
        "schema_version": SITE_SCHEMA_VERSION,
        "generator": GENERATOR,
        "harness_version": harness.__version__,
        "created": created,
        "entries": [
            {"slug": e.slug, "kind": e.kind, "title": e.title, "source": str(e.source)}
            for e in entries
        ],
        "boards": [
            {
                "model": b.model,
                "scenario": b.scenario,
                "rows": [r.label for r in b.rows],
                **_compared(compared.get(b.slug)),
            }
            for b in boards
        ],
        "skipped": [{"path": str(s.path), "reason": s.reason} for s in skipped],
    }
    return json.dumps(data, indent=2) + "\n"


def _compared(sides: Sides | None) -> JsonObject:
    """What a board's comparison page is against, and why; nothing for a board without one."""
    if sides is None:
        return {}
    return {"reference": sides.rows[0].label, "reference_rule": sides.reason}
