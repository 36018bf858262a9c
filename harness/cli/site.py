"""The `site` verb: `harness site RESULTS_DIR... --out SITE/`, a static site of every result."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TypeVar

from harness.cli.bundle import add_trust_option
from harness.errors import ERROR_CODES, ResultError
from harness.text import printable

P = TypeVar("P", bound=argparse.ArgumentParser)  # whichever parser class the CLI uses


def add_site_verb(verbs: argparse._SubParsersAction[P]) -> None:
    """`harness site DIR... --out SITE [--reference RESULT] [--trust KEY.pub]`."""
    verb = verbs.add_parser(
        "site",
        help="a static website of every run, group, sweep, bundle, fleet and published result",
    )
    verb.add_argument(
        "dirs",
        type=Path,
        nargs="+",
        metavar="RESULTS_DIR",
        help="directories to search (and bundles); every result under them goes in the site",
    )
    verb.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="SITE",
        help="the site's directory: new, empty, or a site this command made (replaced whole)",
    )
    verb.add_argument(
        "--reference",
        type=Path,
        action="append",
        default=[],
        metavar="RESULT",
        help="a result (its directory or bundle, as found under RESULTS_DIR) every comparison "
        "page of its leaderboard is against; repeat for several boards. Default: on each board "
        "the newest local result that is VALID and complete, else the newest local one, and a "
        "published record only where nothing on the board was measured here",
    )
    add_trust_option(verb)
    verb.set_defaults(func=_site)


def _site(args: argparse.Namespace) -> int:
    """Build the site; print its index page; exit non-zero if a result could not be read."""
    from harness.site.build import build_site

    site = build_site(args.dirs, args.out, trust=args.trust, reference=args.reference)
    for skipped in site.skipped:
        lead = "error" if skipped.failed else "note"
        line = f"{lead}: {skipped.path}: not in the site: {skipped.reason}"
        print(printable(line, newlines=False), file=sys.stderr)
    print(
        f"{len(site.entries)} results, {len(site.boards)} leaderboards: {site.index}",
        file=sys.stderr,
    )
    print(site.index)
    failed = sum(s.failed for s in site.skipped)
    return ERROR_CODES[ResultError].code if failed else 0
